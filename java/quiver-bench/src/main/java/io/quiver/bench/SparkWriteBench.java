package io.quiver.bench;

import io.quiver.memory.PoolStats;
import io.quiver.spark.memory.TaskMemory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.storage.StorageLevel;

/**
 * The write half of {@code bench/run spark} (issue 13):
 * <ol>
 * <li><b>Writer alone</b>: 2,000,000 rows (200,000 with --quick) of four
 * schemas (5 longs; 100 numeric columns; a long and 4 strings;
 * struct/array/map) written by {@code format("quiver")}'s DataWriter and by
 * Spark's Parquet OutputWriter ({@link BenchWriters}), the same UnsafeRows
 * ({@link WriteRows}) fed to both in the same JVM, each run inside a Spark
 * task of its own. Measured around the writer (open, every write, commit or
 * close) on the task's thread: wall time and the bytes that thread allocated
 * on the heap ({@code com.sun.management.ThreadMXBean}), per row. One
 * warm-up run per writer, then {@code runs} runs with the writers
 * alternating.</li>
 * <li><b>200 open one-row writers</b>: a partitioned write (partitionBy a
 * column with 200 values) given one row per partition, so that its task
 * holds 200 open files; the task's Quiver memory is read while they are
 * open: the write allocator's Arrow bytes, the native pool's reserved and
 * used bytes, what the task is charged in all, and the JVM's "direct" buffer
 * pool.</li>
 * <li><b>lineitem</b> (SF1; SF0.1 with --quick), read once from the Parquet
 * file of bench/spark_data.py and cached, then written by
 * {@code df.write.format("quiver")} and by {@code format("parquet")} with
 * zstd: wall time (min and median) and the size of the files written.</li>
 * </ol>
 */
final class SparkWriteBench {
    private static final Map<String, TaskBody<?>> BODIES = new ConcurrentHashMap<>();
    private static final Map<String, Object> RESULTS = new ConcurrentHashMap<>();
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final SparkSession spark;
    private final BenchRecords records;
    private final boolean quick;
    private final Path scratch;

    SparkWriteBench(SparkSession spark, BenchRecords records, boolean quick) throws IOException {
        this.spark = spark;
        this.records = records;
        this.quick = quick;
        this.scratch = Files.createTempDirectory("quiver-write-bench");
    }

    /** Runs the three parts; {@code lineitemParquet} is the directory of bench/spark_data.py's Parquet file. */
    void run(String lineitemParquet) throws Exception {
        try {
            writerAlone();
            openWriters();
            lineitem(lineitemParquet);
        } finally {
            delete(scratch);
        }
    }

    // ---- 1. the writer alone ----

    /** One measured run of one writer. */
    private record Run(double ms, long allocated, long rows, long fileBytes) {
        double bytesPerRow() {
            return (double) allocated / rows;
        }
    }

    private void writerAlone() throws Exception {
        long rows = quick ? 200_000 : 2_000_000;
        long warmRows = Math.min(rows, 500_000);
        int runs = quick ? 2 : 3;
        int distinct = quick ? 16_384 : 65_536;
        double[] allocTargets = {8, 122, 9, 298};
        System.out.printf(Locale.ROOT, "%nWriter alone: %,d rows per run (a pool of %,d distinct UnsafeRows, one"
                + " reused row object), in a Spark task each; quiver = format(\"quiver\")'s DataWriter, parquet ="
                + " Spark's ParquetOutputWriter (snappy, Spark's default codec); one warm-up run each, then %d runs,"
                + " writers alternating%n", rows, distinct, runs);
        System.out.printf(Locale.ROOT, "%-20s %19s %19s %7s %7s %17s %7s %15s%n", "schema", "quiver ms min/med",
                "parquet ms min/med", "ratio", "target", "alloc B/row q / p", "target", "file MiB q / p");
        WriteRows.Kind[] kinds = {WriteRows.Kind.LONGS5, WriteRows.Kind.NUMERIC100, WriteRows.Kind.STRINGS4,
            WriteRows.Kind.NESTED};
        for (int k = 0; k < kinds.length; k++) {
            WriteRows data = WriteRows.make(kinds[k], distinct);
            BenchWriters.Parquet parquet = new BenchWriters.Parquet(spark, data.schema, "snappy");
            quiverRun(data, warmRows);
            parquetRun(data, parquet, warmRows);
            List<Run> q = new ArrayList<>(), p = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                q.add(quiverRun(data, rows));
                p.add(parquetRun(data, parquet, rows));
            }
            double[] tq = q.stream().mapToDouble(Run::ms).toArray();
            double[] tp = p.stream().mapToDouble(Run::ms).toArray();
            double[] aq = q.stream().mapToDouble(Run::bytesPerRow).toArray();
            double[] ap = p.stream().mapToDouble(Run::bytesPerRow).toArray();
            double ratio = BenchRecords.median(tq) / BenchRecords.median(tp);
            System.out.printf(Locale.ROOT, "%-20s %9.0f / %7.0f %9.0f / %7.0f %6.2fx %7s %7.1f / %7.1f %7s %6.1f / %6.1f%n",
                    kinds[k].label, BenchRecords.min(tq), BenchRecords.median(tq), BenchRecords.min(tp),
                    BenchRecords.median(tp), ratio, "<=0.6", BenchRecords.median(aq), BenchRecords.median(ap),
                    "<=" + (int) allocTargets[k], q.get(0).fileBytes / 1048576.0, p.get(0).fileBytes / 1048576.0);
            String kase = "write_" + kinds[k].name().toLowerCase(Locale.ROOT);
            addRuns(kase, "quiver", q);
            addRuns(kase, "parquet", p);
            records.add(kase, "quiver_over_parquet", "time_ratio", "median", ratio, "x");
            records.add(kase, "quiver_over_parquet", "time_ratio", "min", BenchRecords.min(tq) / BenchRecords.min(tp),
                    "x");
            records.add(kase, "rows", "rows", "value", rows, "rows");
        }
    }

    private void addRuns(String kase, String variant, List<Run> runs) {
        double[] t = runs.stream().mapToDouble(Run::ms).toArray();
        double[] a = runs.stream().mapToDouble(Run::bytesPerRow).toArray();
        records.add(kase, variant, "time", "min", BenchRecords.min(t), "ms");
        records.add(kase, variant, "time", "median", BenchRecords.median(t), "ms");
        records.add(kase, variant, "alloc_per_row", "median", BenchRecords.median(a), "bytes");
        records.add(kase, variant, "alloc_per_row", "min", BenchRecords.min(a), "bytes");
        records.add(kase, variant, "file_size", "value", runs.get(0).fileBytes, "bytes");
    }

    private Run quiverRun(WriteRows data, long rows) throws Exception {
        Path dir = fresh("quiver");
        BenchWriters.Quiver job = new BenchWriters.Quiver(data.schema, dir.toString(), List.of(), Map.of());
        System.gc();
        Object[] out = inTask(ctx -> {
            long a0 = THREADS.getCurrentThreadAllocatedBytes();
            long t0 = System.nanoTime();
            DataWriter<InternalRow> w = job.open(ctx.partitionId(), ctx.taskAttemptId());
            WriterCommitMessage msg;
            try {
                data.feed(rows, w::write);
                msg = w.commit();
            } catch (Exception | Error e) {
                w.abort();
                throw e;
            } finally {
                w.close();
            }
            long t1 = System.nanoTime();
            long a1 = THREADS.getCurrentThreadAllocatedBytes();
            return new Object[] {msg, (t1 - t0) / 1e6, a1 - a0};
        });
        job.commit((WriterCommitMessage) out[0]);
        Run r = new Run((double) out[1], (long) out[2], rows, dataBytes(dir));
        delete(dir);
        return r;
    }

    private Run parquetRun(WriteRows data, BenchWriters.Parquet parquet, long rows) throws Exception {
        Path dir = fresh("parquet");
        System.gc();
        Object[] out = inTask(ctx -> {
            long a0 = THREADS.getCurrentThreadAllocatedBytes();
            long t0 = System.nanoTime();
            OutputWriter w = parquet.open(dir.toString(), ctx.partitionId());
            try {
                data.feed(rows, w::write);
            } finally {
                w.close();
            }
            long t1 = System.nanoTime();
            long a1 = THREADS.getCurrentThreadAllocatedBytes();
            return new Object[] {(t1 - t0) / 1e6, a1 - a0};
        });
        Run r = new Run((double) out[0], (long) out[1], rows, dataBytes(dir));
        delete(dir);
        return r;
    }

    // ---- 2. 200 open one-row writers ----

    private void openWriters() throws Exception {
        int open = 200;
        WriteRows data = WriteRows.make(WriteRows.Kind.EVERY_TYPE, open);
        Path dir = fresh("open");
        BenchWriters.Quiver job = new BenchWriters.Quiver(data.schema, dir.toString(), List.of("p"), Map.of());
        BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
        System.gc();
        Object[] out = inTask(ctx -> {
            TaskMemory tm = TaskMemory.get(ctx);
            long arrow0 = tm.writeAllocator().getAllocatedMemory();
            PoolStats s0 = tm.pool().stats();
            long charged0 = tm.getUsed();
            long direct0 = direct.getMemoryUsed();
            DataWriter<InternalRow> w = job.open(ctx.partitionId(), ctx.taskAttemptId());
            WriterCommitMessage msg;
            long[] held;
            try {
                // Row i of the pool has p = i: one row into each of 200 partitions.
                data.feed(open, w::write);
                PoolStats s1 = tm.pool().stats();
                held = new long[] {tm.writeAllocator().getAllocatedMemory() - arrow0, s1.reserved() - s0.reserved(),
                    s1.used() - s0.used(), tm.getUsed() - charged0, direct.getMemoryUsed() - direct0};
                msg = w.commit();
            } catch (Exception | Error e) {
                w.abort();
                throw e;
            } finally {
                w.close();
            }
            return new Object[] {msg, held};
        });
        job.commit((WriterCommitMessage) out[0]);
        long files;
        try (Stream<Path> s = Files.walk(dir)) {
            files = s.filter(f -> f.getFileName().toString().endsWith(".qvr")).count();
        }
        delete(dir);
        long[] h = (long[]) out[1];
        double mib = 1048576.0;
        System.out.printf(Locale.ROOT, "%n%d open one-row writers (partitionBy p, every column type, %d files"
                + " written): Arrow %.2f MiB + native pool reserved %.2f MiB (used %.2f) = %.2f MiB held"
                + " (target <= 16); the task is charged %.2f MiB;%n    the JVM's \"direct\" buffer pool"
                + " +%.2f MiB (Arrow and the native pool allocate outside it)%n",
                open, files, h[0] / mib, h[1] / mib, h[2] / mib, (h[0] + h[1]) / mib, h[3] / mib, h[4] / mib);
        String kase = "open_writers_200";
        records.add(kase, "quiver", "arrow_allocated", "value", h[0], "bytes");
        records.add(kase, "quiver", "native_pool_reserved", "value", h[1], "bytes");
        records.add(kase, "quiver", "native_pool_used", "value", h[2], "bytes");
        records.add(kase, "quiver", "direct_memory_held", "value", h[0] + h[1], "bytes");
        records.add(kase, "quiver", "task_memory_charged", "value", h[3], "bytes");
        records.add(kase, "quiver", "jvm_direct_buffers", "value", h[4], "bytes");
        records.add(kase, "quiver", "files", "value", files, "files");
    }

    // ---- 3. lineitem through df.write ----

    private void lineitem(String parquetDir) throws Exception {
        int runs = quick ? 2 : 3;
        Dataset<Row> df = spark.read().parquet(parquetDir).persist(StorageLevel.MEMORY_ONLY());
        long count = df.count();
        String[][] formats = {{"quiver", "quiver", null, null}, {"quiver_compact", "quiver", "compact", "true"},
            {"parquet_zstd", "parquet", "compression", "zstd"}};
        System.out.printf(Locale.ROOT, "%nlineitem (%,d rows, %d partitions, cached) written by df.write (local[2]);"
                + " one warm-up each, then %d runs, formats alternating%n", count, df.rdd().getNumPartitions(), runs);
        List<List<Double>> times = new ArrayList<>();
        long[] sizes = new long[formats.length];
        for (int f = 0; f < formats.length; f++) {
            times.add(new ArrayList<>());
            sizes[f] = writeLineitem(df, formats[f])[1];
        }
        for (int i = 0; i < runs; i++) {
            for (int f = 0; f < formats.length; f++) {
                times.get(f).add((double) writeLineitem(df, formats[f])[0]);
            }
        }
        df.unpersist(true);
        System.out.printf(Locale.ROOT, "%-16s %19s %12s %16s%n", "format", "ms min/med", "size MiB",
                "size / parquet");
        int pq = formats.length - 1;
        for (int f = 0; f < formats.length; f++) {
            List<Double> t = times.get(f);
            double sizeRatio = (double) sizes[f] / sizes[pq];
            System.out.printf(Locale.ROOT, "%-16s %9.0f / %7.0f %12.1f %15.3fx%s%n", formats[f][0],
                    BenchRecords.min(t), BenchRecords.median(t), sizes[f] / 1048576.0, sizeRatio,
                    f == pq ? "" : String.format(Locale.ROOT, "  (time %.2fx parquet's median; size target <= 0.8x)",
                            BenchRecords.median(t) / BenchRecords.median(times.get(pq))));
            records.add("write_lineitem", formats[f][0], "time", "min", BenchRecords.min(t), "ms");
            records.add("write_lineitem", formats[f][0], "time", "median", BenchRecords.median(t), "ms");
            records.add("write_lineitem", formats[f][0], "file_size", "value", sizes[f], "bytes");
            if (f != pq) {
                records.add("write_lineitem", formats[f][0] + "_over_parquet_zstd", "size_ratio", "value", sizeRatio,
                        "x");
                records.add("write_lineitem", formats[f][0] + "_over_parquet_zstd", "time_ratio", "median",
                        BenchRecords.median(t) / BenchRecords.median(times.get(pq)), "x");
            }
        }
    }

    /** Writes {@code df} once as {@code format}; returns {ms, bytes of data files}. */
    private long[] writeLineitem(Dataset<Row> df, String[] format) throws IOException {
        Path dir = fresh(format[0]);
        var w = df.write().format(format[1]).mode("overwrite");
        if (format[2] != null) {
            w = w.option(format[2], format[3]);
        }
        System.gc();
        long t0 = System.nanoTime();
        w.save(dir.toString());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        long bytes = dataBytes(dir);
        delete(dir);
        return new long[] {ms, bytes};
    }

    // ---- helpers ----

    /** Work that runs inside a Spark task, on the task's thread. */
    @FunctionalInterface
    interface TaskBody<T> {
        T call(TaskContext context) throws Exception;
    }

    /**
     * Runs {@code body} as the single task of a one-partition job and returns
     * its result. Local mode: the task runs in this JVM, so the body stays
     * here and only its key travels with the closure.
     */
    @SuppressWarnings("unchecked")
    private <T> T inTask(TaskBody<T> body) {
        String key = UUID.randomUUID().toString();
        BODIES.put(key, body);
        try {
            JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(List.of(0), 1)
                    .foreachPartition(it -> runBody(key));
            Object r = RESULTS.get(key);
            if (r == null) {
                throw new IllegalStateException("the benchmark's task returned nothing");
            }
            return (T) r;
        } finally {
            BODIES.remove(key);
            RESULTS.remove(key);
        }
    }

    private static void runBody(String key) throws Exception {
        TaskBody<?> body = BODIES.get(key);
        if (body == null) {
            throw new IllegalStateException("no benchmark body under " + key + " (not a local-mode session?)");
        }
        RESULTS.put(key, body.call(TaskContext.get()));
    }

    private Path fresh(String name) throws IOException {
        return Files.createDirectories(scratch.resolve(name + "-" + UUID.randomUUID()));
    }

    /** Bytes of the data files under {@code dir}: not Hadoop's .crc files or markers (_SUCCESS). */
    private static long dataBytes(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).filter(f -> {
                String n = f.getFileName().toString();
                return !n.startsWith(".") && !n.startsWith("_");
            }).mapToLong(f -> {
                try {
                    return Files.size(f);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).sum();
        }
    }

    private static void delete(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
