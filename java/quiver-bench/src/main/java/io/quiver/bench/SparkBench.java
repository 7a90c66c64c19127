package io.quiver.bench;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.launcher.JavaModuleOptions;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * {@code bench/run spark}: TPC-H lineitem read by Spark ({@code local[2]})
 * through {@code format("quiver")} and through Spark's own Parquet source,
 * the same rows in both files (bench/spark_data.py writes them), in one
 * session: count(*), TPC-H Q1, TPC-H Q6 and a scan of two projected columns
 * ({@code l_partkey, l_comment} into Spark's {@code noop} sink, so every value
 * is materialized). Each query runs once to warm up, then {@code runs} times
 * per format, the formats alternating so that drift on a noisy machine hits
 * both alike; min and median wall times and their ratio are printed. The peak
 * task memory is Spark's own task metric (peak on-heap plus off-heap
 * execution memory, the largest over the query's tasks; Quiver's native pool
 * and its Arrow buffers are charged there, Parquet's vectorized reader
 * allocates on the heap outside it). The driver's peak RSS for Q1 is measured
 * in a fresh JVM per format (VmHWM of /proc/self/status after the query).
 * Then Quiver alone under other {@code threads} / {@code prefetch} options, the
 * measurement behind the defaults. Then, in the same session, the write
 * figures ({@link SparkWriteBench}). {@code --part read} or {@code --part write}
 * runs one half only.
 */
public final class SparkBench {
    private static final String Q1 = "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,"
            + " sum(l_extendedprice) AS sum_base_price,"
            + " sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,"
            + " sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,"
            + " avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,"
            + " count(*) AS count_order FROM %s"
            + " WHERE l_shipdate <= date '1998-12-01' - interval 90 days"
            + " GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus";
    private static final String Q6 = "SELECT sum(l_extendedprice * l_discount) AS revenue FROM %s"
            + " WHERE l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01'"
            + " AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24";
    private static final String COUNT = "SELECT count(*) FROM %s";
    private static final String PROJECT = "SELECT l_partkey, l_comment FROM %s";

    private final SparkSession spark;
    private final AtomicLong peakTaskMemory = new AtomicLong();
    private final BenchRecords records = new BenchRecords("spark");

    private SparkBench(SparkSession spark) {
        this.spark = spark;
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                if (end.taskMetrics() != null) {
                    long m = end.taskMetrics().peakOnHeapExecutionMemory()
                            + end.taskMetrics().peakOffHeapExecutionMemory();
                    peakTaskMemory.accumulateAndGet(m, Math::max);
                }
            }
        });
    }

    public static void main(String[] args) throws Exception {
        String quiver = null, parquet = null, json = null, rssFormat = null, part = "all";
        boolean quick = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quiver" -> quiver = args[++i];
                case "--parquet" -> parquet = args[++i];
                case "--json" -> json = args[++i];
                case "--quick" -> quick = true;
                case "--rss" -> rssFormat = args[++i];
                case "--part" -> part = args[++i];
                default -> {
                    System.err.println("usage: SparkBench --quiver DIR --parquet DIR [--quick] [--part read|write|all]"
                            + " [--json FILE]");
                    System.exit(2);
                }
            }
        }
        if (quiver == null || parquet == null) {
            System.err.println("SparkBench: --quiver and --parquet are required");
            System.exit(2);
        }
        if (rssFormat != null) {
            rssChild(rssFormat, rssFormat.equals("quiver") ? quiver : parquet);
            return;
        }
        if (!List.of("read", "write", "all").contains(part)) {
            System.err.println("SparkBench: --part is read, write or all, not " + part);
            System.exit(2);
        }
        boolean read = !part.equals("write");
        int runs = quick ? 2 : 5;
        SparkBench b;
        try (SparkSession spark = session()) {
            b = new SparkBench(spark);
            if (read) {
                b.run(quiver, parquet, runs, quick);
            }
            if (!part.equals("read")) {
                new SparkWriteBench(spark, b.records, quick).run(parquet);
            }
        }
        if (read) {
            b.rss(quiver, parquet);
        }
        System.out.printf(Locale.ROOT, "load average when done: %s%n",
                BenchRecords.loadAverage());
        if (json != null) {
            b.records.write(Path.of(json));
            System.out.println("wrote " + b.records.size() + " records to " + json);
        }
    }

    private void rss(String quiver, String parquet) throws Exception {
        long rssQuiver = rssInChild("quiver", quiver, parquet);
        long rssParquet = rssInChild("parquet", quiver, parquet);
        System.out.printf(Locale.ROOT, "%nDriver peak RSS for Q1 (fresh JVM each, -Xmx of this JVM):"
                + " quiver %.0f MiB, parquet %.0f MiB, ratio %.2f%n",
                rssQuiver / 1048576.0, rssParquet / 1048576.0, (double) rssQuiver / rssParquet);
        records.add("q1", "quiver", "driver_peak_rss", "value", rssQuiver, "bytes");
        records.add("q1", "parquet", "driver_peak_rss", "value", rssParquet, "bytes");
        records.add("q1", "quiver_over_parquet", "driver_peak_rss_ratio", "value",
                (double) rssQuiver / rssParquet, "x");
    }

    static SparkSession session() {
        SparkSession spark = SparkSession.builder().master("local[2]").appName("quiver-bench-spark")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.memory.offHeap.enabled", "true")
                .config("spark.memory.offHeap.size", "2g")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate();
        // Spark's INFO lines (pushdown, codegen) would bury the table.
        spark.sparkContext().setLogLevel("WARN");
        return spark;
    }

    private void run(String quiverDir, String parquetDir, int runs, boolean quick) throws Exception {
        spark.read().format("quiver").load(quiverDir).createOrReplaceTempView("lineitem_quiver");
        spark.read().parquet(parquetDir).createOrReplaceTempView("lineitem_parquet");
        check(Q1);
        check(Q6);
        Map<String, String> queries = new LinkedHashMap<>();
        queries.put("count", COUNT);
        queries.put("q1", Q1);
        queries.put("q6", Q6);
        queries.put("project_2col", PROJECT);
        Map<String, Double> targets = Map.of("q1", 0.9, "q6", 0.4, "project_2col", 0.6);
        System.out.printf(Locale.ROOT, "Spark %s, local[2], %d runs after one warm-up, formats alternating%n",
                spark.version(), runs);
        System.out.printf(Locale.ROOT, "%-13s %21s %21s %8s %7s %22s%n", "query", "quiver ms min/med",
                "parquet ms min/med", "ratio", "target", "task mem peak q / p");
        for (Map.Entry<String, String> q : queries.entrySet()) {
            List<Double> tq = new ArrayList<>(), tp = new ArrayList<>();
            long[] mem = new long[2];
            time(q.getValue(), "lineitem_quiver");
            time(q.getValue(), "lineitem_parquet");
            for (int i = 0; i < runs; i++) {
                peakTaskMemory.set(0);
                tq.add(time(q.getValue(), "lineitem_quiver"));
                mem[0] = Math.max(mem[0], drainPeak());
                peakTaskMemory.set(0);
                tp.add(time(q.getValue(), "lineitem_parquet"));
                mem[1] = Math.max(mem[1], drainPeak());
            }
            double ratio = median(tq) / median(tp);
            Double target = targets.get(q.getKey());
            System.out.printf(Locale.ROOT, "%-13s %10.1f / %8.1f %10.1f / %8.1f %7.2fx %7s %9.1f / %7.1f MiB%n",
                    q.getKey(), min(tq), median(tq), min(tp), median(tp), ratio,
                    target == null ? "-" : "<=" + target, mem[0] / 1048576.0, mem[1] / 1048576.0);
            add(q.getKey(), "quiver", tq, mem[0]);
            add(q.getKey(), "parquet", tp, mem[1]);
            records.add(q.getKey(), "quiver_over_parquet", "time_ratio", "median", ratio, "x");
            records.add(q.getKey(), "quiver_over_parquet", "time_ratio", "min", min(tq) / min(tp), "x");
        }
        sweep(quiverDir, quick ? 1 : 3);
    }

    /** The same answer from both formats, or the timings mean nothing. */
    private void check(String sql) {
        List<Row> a = spark.sql(String.format(sql, "lineitem_quiver")).collectAsList();
        List<Row> b = spark.sql(String.format(sql, "lineitem_parquet")).collectAsList();
        if (!a.toString().equals(b.toString())) {
            throw new IllegalStateException("quiver and parquet disagree on\n" + sql + "\nquiver:  " + a
                    + "\nparquet: " + b);
        }
    }

    /** Q6 and the projected scan under other native settings: the measurement behind the defaults. */
    private void sweep(String quiverDir, int runs) throws Exception {
        String[][] settings = {{"-1", "1", "4096"}, {"-1", "1", "32768"}, {"-1", "1", "65536"},
            {"1", "1", "4096"}, {"1", "1", "32768"}, {"1", "1", "65536"}, {"1", "2", "65536"},
            {"2", "1", "65536"}};
        System.out.printf(Locale.ROOT, "%nQuiver alone by options threads / prefetch / batchRows (threads -1:"
                + " decode on the task thread); ms min / median of %d runs after a warm-up%n", runs);
        System.out.printf(Locale.ROOT, "%-22s %18s %18s %16s%n", "threads/prefetch/rows", "q6", "project_2col",
                "task mem peak");
        for (String[] s : settings) {
            spark.read().format("quiver").option("threads", s[0]).option("prefetch", s[1])
                    .option("batchRows", s[2]).load(quiverDir).createOrReplaceTempView("lineitem_sweep");
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-22s", String.join(" / ", s)));
            long mem = 0;
            for (String[] q : new String[][] {{"q6", Q6}, {"project_2col", PROJECT}}) {
                time(q[1], "lineitem_sweep");
                List<Double> t = new ArrayList<>();
                for (int i = 0; i < runs; i++) {
                    peakTaskMemory.set(0);
                    t.add(time(q[1], "lineitem_sweep"));
                    mem = Math.max(mem, drainPeak());
                }
                line.append(String.format(Locale.ROOT, " %8.1f / %7.1f", min(t), median(t)));
                String variant = "quiver_threads" + s[0] + "_prefetch" + s[1] + "_rows" + s[2];
                records.add(q[0], variant, "time", "min", min(t), "ms");
                records.add(q[0], variant, "time", "median", median(t), "ms");
            }
            line.append(String.format(Locale.ROOT, " %11.1f MiB", mem / 1048576.0));
            records.add("sweep", "quiver_threads" + s[0] + "_prefetch" + s[1] + "_rows" + s[2],
                    "peak_task_memory", "max", mem, "bytes");
            System.out.println(line);
        }
    }

    private double time(String sql, String view) {
        Dataset<Row> df = spark.sql(String.format(sql, view));
        long t0 = System.nanoTime();
        if (sql == PROJECT) {
            df.write().format("noop").mode("overwrite").save();
        } else {
            df.collectAsList();
        }
        return (System.nanoTime() - t0) / 1e6;
    }

    /** The listener bus is asynchronous: wait for this query's task ends. */
    private long drainPeak() throws Exception {
        spark.sparkContext().listenerBus().waitUntilEmpty(TimeUnit.SECONDS.toMillis(60));
        return peakTaskMemory.get();
    }

    private void add(String q, String variant, List<Double> t, long mem) {
        records.add(q, variant, "time", "min", min(t), "ms");
        records.add(q, variant, "time", "median", median(t), "ms");
        records.add(q, variant, "peak_task_memory", "max", mem, "bytes");
    }

    /** Runs Q1 in a fresh JVM and returns its peak RSS. */
    private static long rssInChild(String format, String quiver, String parquet) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(List.of(JavaModuleOptions.defaultModuleOptionArray()));
        cmd.add("-Xmx" + Runtime.getRuntime().maxMemory() / 1048576 + "m");
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), SparkBench.class.getName(),
                "--quiver", quiver, "--parquet", parquet, "--rss", format));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out;
        try (var in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException("RSS run of " + format + " failed:\n" + out);
        }
        for (String line : out.split("\n")) {
            if (line.startsWith("rss_peak_bytes ")) {
                return Long.parseLong(line.substring(15).trim());
            }
        }
        throw new IllegalStateException("RSS run of " + format + " printed no figure:\n" + out);
    }

    private static void rssChild(String format, String dir) throws IOException {
        try (SparkSession spark = session()) {
            spark.sparkContext().setLogLevel("ERROR");
            Dataset<Row> df = format.equals("quiver") ? spark.read().format("quiver").load(dir)
                    : spark.read().parquet(dir);
            df.createOrReplaceTempView("lineitem");
            spark.sql(String.format(Q1, "lineitem")).collectAsList();
            spark.sql(String.format(Q1, "lineitem")).collectAsList();
        }
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                long kib = Long.parseLong(line.replaceAll("[^0-9]", ""));
                System.out.println("rss_peak_bytes " + kib * 1024);
            }
        }
    }

    private static double min(List<Double> xs) {
        return BenchRecords.min(xs);
    }

    private static double median(List<Double> xs) {
        return BenchRecords.median(xs);
    }
}
