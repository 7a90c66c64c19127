package io.quiver.bench;

import io.quiver.FileOptions;
import io.quiver.QuiverFile;
import io.quiver.QuiverScanReader;
import io.quiver.QuiverWriter;
import io.quiver.ScanOptions;
import io.quiver.WriterOptions;
import io.quiver.memory.MemoryBudget;
import io.quiver.memory.NativePool;
import io.quiver.memory.PoolStats;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The native half of {@code bench/run jvm}: what a scan through JNI costs
 * the budget that hosts its pool (in Spark, the task's MemoryConsumer), by
 * the pool's block size.
 *
 * <p>A 16-column int64 file is scanned in 4,096-row batches, one batch at a
 * time (Arrow Java's reader releases each before the next), synchronously
 * and with two native workers, under a pool whose host is a Java
 * {@link MemoryBudget}, for blocks of 64 KiB, 256 KiB and 1 MiB. Per case:
 * host calls (acquire + release) per 1,000 batches, the task memory held
 * (the host's peak grant) per scanned column, the pool's peak reserved
 * bytes, and the scan time; min and median over the repeats.
 *
 * <p>{@code main(String[] args)}: {@code --quick} (fewer rows and repeats,
 * under a minute), {@code --json FILE} (appends records of DESIGN.md's
 * shape, bench "jvm", to the JSON array in FILE, creating it if needed),
 * {@code --dir DIR} (where the file is written; a temporary folder by
 * default).
 */
public final class NativeMemoryBench {
    static final int COLUMNS = 16;
    static final int BATCH_ROWS = 4096;
    static final long[] BLOCKS = {64L << 10, 256L << 10, 1L << 20};
    static final int[] THREADS = {0, 2};

    private NativeMemoryBench() {}

    /** A budget that grants everything, counting calls and the peak it granted. */
    static final class MeasuringBudget implements MemoryBudget {
        final AtomicLong outstanding = new AtomicLong();
        final AtomicLong peak = new AtomicLong();
        final AtomicLong calls = new AtomicLong();

        @Override
        public long acquire(long bytes) {
            calls.incrementAndGet();
            long now = outstanding.addAndGet(bytes);
            peak.accumulateAndGet(now, Math::max);
            return bytes;
        }

        @Override
        public void release(long bytes) {
            calls.incrementAndGet();
            outstanding.addAndGet(-bytes);
        }

        @Override
        public String name() {
            return "bench";
        }
    }

    record Run(long batches, long hostCalls, long peakHeld, long peakReserved, double millis) {}

    static void write(BufferAllocator a, Path p, int rows, int rowGroupRows) {
        List<Field> fields = new ArrayList<>();
        for (int c = 0; c < COLUMNS; c++) {
            fields.add(new Field("c" + c, FieldType.notNullable(new ArrowType.Int(64, true)), null));
        }
        Schema schema = new Schema(fields);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema, WriterOptions.builder().rowGroupRows(rowGroupRows).build())) {
            java.util.Random rnd = new java.util.Random(42);
            for (int start = 0; start < rows; start += 8192) {
                int n = Math.min(8192, rows - start);
                root.allocateNew();
                for (int c = 0; c < COLUMNS; c++) {
                    BigIntVector v = (BigIntVector) root.getVector(c);
                    // Half the columns compress well (a counter), half do not.
                    for (int i = 0; i < n; i++) {
                        v.setSafe(i, c % 2 == 0 ? start + i : rnd.nextLong());
                    }
                }
                root.setRowCount(n);
                w.write(root);
            }
            w.finish();
        }
    }

    static Run scanOnce(BufferAllocator root, Path file, long block, int threads) throws Exception {
        MeasuringBudget b = new MeasuringBudget();
        long batches = 0;
        long rows = 0;
        long t0;
        long t1;
        PoolStats s;
        try (NativePool pool = NativePool.create("bench", b, block)) {
            try (BufferAllocator a = root.newChildAllocator("scan", 0, Long.MAX_VALUE);
                    QuiverFile f = QuiverFile.open(file, FileOptions.defaults().pool(pool))) {
                t0 = System.nanoTime();
                try (QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(BATCH_ROWS).threads(threads).build())) {
                    while (r.loadNextBatch()) {
                        batches++;
                        rows += r.getVectorSchemaRoot().getRowCount();
                    }
                }
                t1 = System.nanoTime();
            }
            s = pool.stats();
        }
        if (b.outstanding.get() != 0) {
            throw new IllegalStateException("the pool did not give everything back: " + b.outstanding.get());
        }
        if (rows == 0) {
            throw new IllegalStateException("no rows scanned");
        }
        // Calls made by the scan (the pool's destroy gives the rest back in one more call).
        return new Run(batches, s.hostAcquireCalls() + s.hostReleaseCalls(), b.peak.get(), s.peakReserved(),
                (t1 - t0) / 1e6);
    }

    static final BenchRecords RECORDS = new BenchRecords("jvm");

    static double median(double[] v) {
        return BenchRecords.median(v);
    }

    static double min(double[] v) {
        return BenchRecords.min(v);
    }

    static void record(String kase, String variant, String metric, String stat, double value, String unit) {
        RECORDS.add(kase, variant, metric, stat, value, unit);
    }

    static void measure(BufferAllocator root, Path file, int rows, int rowGroupRows, int repeats) throws Exception {
        System.out.printf(Locale.ROOT,
                "%nNative memory through JNI: %d int64 columns x %,d rows in row groups of %,d (%.1f MiB), %,d-row batches, "
                        + "one at a time; pool host = a Java MemoryBudget; %d repeats%n",
                COLUMNS, rows, rowGroupRows, Files.size(file) / 1048576.0, BATCH_ROWS, repeats);
        System.out.printf(Locale.ROOT, "%-9s %-8s %8s %14s %14s %14s %12s %12s%n", "block", "threads", "batches",
                "calls/1k batch", "held/column", "held (task)", "scan ms min", "scan ms med");
        scanOnce(root, file, BLOCKS[0], 0); // warm-up: JIT, page cache
        for (long block : BLOCKS) {
            for (int threads : THREADS) {
                double[] calls = new double[repeats];
                double[] held = new double[repeats];
                double[] reserved = new double[repeats];
                double[] ms = new double[repeats];
                long batches = 0;
                for (int r = 0; r < repeats; r++) {
                    Run run = scanOnce(root, file, block, threads);
                    batches = run.batches();
                    calls[r] = run.hostCalls() * 1000.0 / run.batches();
                    held[r] = run.peakHeld();
                    reserved[r] = run.peakReserved();
                    ms[r] = run.millis();
                }
                String kase = "scan16x" + (block >> 10) + "KiB/rg" + rowGroupRows;
                String variant = threads == 0 ? "sync" : "threads" + threads;
                System.out.printf(Locale.ROOT, "%-9s %-8s %,8d %14.1f %11.1f KiB %10.2f MiB %12.1f %12.1f%n",
                        (block >> 10) + " KiB", variant, batches, median(calls), median(held) / COLUMNS / 1024,
                        median(held) / 1048576, min(ms), median(ms));
                record(kase, variant, "host_calls_per_1000_batches", "median", median(calls), "calls");
                record(kase, variant, "host_calls_per_1000_batches", "min", min(calls), "calls");
                record(kase, variant, "task_memory_per_column", "median", median(held) / COLUMNS, "bytes");
                record(kase, variant, "task_memory_per_column", "min", min(held) / COLUMNS, "bytes");
                record(kase, variant, "task_memory_held", "median", median(held), "bytes");
                record(kase, variant, "peak_reserved", "median", median(reserved), "bytes");
                record(kase, variant, "scan_ms", "min", min(ms), "ms");
                record(kase, variant, "scan_ms", "median", median(ms), "ms");
            }
        }
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Path json = null;
        Path dir = null;
        int[] rowGroups = {65536, 8192};
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--json" -> json = Path.of(args[++i]);
                case "--dir" -> dir = Path.of(args[++i]);
                case "--row-group-rows" -> rowGroups = new int[] {Integer.parseInt(args[++i])};
                default -> {
                    System.err.println("usage: NativeMemoryBench [--quick] [--json FILE] [--dir DIR] [--row-group-rows N]");
                    System.exit(2);
                }
            }
        }
        int rows = quick ? 400_000 : 2_000_000;
        int repeats = quick ? 3 : 7;
        Path tmp = dir != null ? Files.createDirectories(dir) : Files.createTempDirectory("quiver-bench-jvm");
        Path file = tmp.resolve("sixteen.qvr");
        try (BufferAllocator root = new RootAllocator()) {
            for (int rowGroupRows : rowGroups) {
                write(root, file, rows, rowGroupRows);
                measure(root, file, rows, rowGroupRows, repeats);
            }
        } finally {
            if (dir == null) {
                Files.deleteIfExists(file);
                Files.deleteIfExists(tmp);
            }
        }
        if (json != null) {
            RECORDS.append(json);
            System.out.println("appended " + RECORDS.size() + " records to " + json);
        }
    }
}
