package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.FileIdentity;
import io.quiver.ScanOptions;
import io.quiver.spark.memory.TaskMemory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A task killed while it scans (sc.cancelJobGroup, without thread
 * interruption, Spark's default) stops its native scan through the reader's
 * task interrupt listener, and releases everything. Prints how long after
 * the cancel the task had finished (its reader closed, the native stream
 * released, the task's memory checked): min and median of several runs,
 * with decode workers and without. No timing is asserted.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class QuiverReadKillTest {
    @TempDir static Path dir;
    static SparkSession spark;
    static JavaSparkContext jsc;
    static String file;
    static FileIdentity id;
    static final int ROWS = 1 << 20;
    static final int COLUMNS = 8;

    /** Per job group: when the task had its first batch, and when it ended (local mode: this JVM). */
    static final Map<String, Long> STARTED = new ConcurrentHashMap<>();
    static final Map<String, Long> ENDED = new ConcurrentHashMap<>();

    @BeforeAll
    static void start() {
        Path p = dir.resolve("long.qvr");
        id = ReadTestFiles.writeLongs(p, COLUMNS, ROWS, 65536);
        file = p.toString();
        spark = SparkTestSession.startUtc("QuiverReadKillTest", "256m");
        jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    static long waitFor(Map<String, Long> m, String key) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            Long v = m.get(key);
            if (v != null) {
                return v;
            }
            Thread.sleep(2);
        }
        throw new AssertionError("no " + key + " within 120 s");
    }

    /** Runs one long scan in a job group, cancels it mid-way, returns ms from the cancel to the task's end. */
    static double killOnce(String group, int threads) throws Exception {
        StructType data = new StructType();
        List<String> names = new ArrayList<>();
        for (int c = 0; c < COLUMNS; c++) {
            data = data.add("c" + c, DataTypes.LongType, false);
            names.add("c" + c);
        }
        ReadConfig c = new ReadConfig(data, new StructType(), names, null, 0, 65536, threads, 2, false, false);
        List<FileSlice> slices = new ArrayList<>();
        for (int i = 0; i < 400; i++) { // about 400 M rows: minutes, far longer than the test waits
            slices.add(new FileSlice(file, id, 0, 0, ROWS, 0, new GenericInternalRow(0)));
        }
        QuiverInputPartition part = new QuiverInputPartition(0, slices);
        QuiverPartitionReaderFactory f = new QuiverPartitionReaderFactory(c);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<List<Long>> job = pool.submit(() -> {
                jsc.setJobGroup(group, "kill test", false);
                return jsc.parallelize(List.of(0), 1).map(i -> {
                    TaskContext ctx = TaskContext.get();
                    // Registered before the reader's listeners, so it runs after them.
                    ctx.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener)
                            x -> ENDED.put(group, System.nanoTime()));
                    long rows = 0;
                    try (PartitionReader<ColumnarBatch> r = f.createColumnarReader(part)) {
                        while (r.next()) {
                            rows += r.get().numRows();
                            STARTED.putIfAbsent(group, System.nanoTime());
                        }
                    }
                    return rows;
                }).collect();
            });
            waitFor(STARTED, group);
            Thread.sleep(300);
            long t0 = System.nanoTime();
            jsc.cancelJobGroup(group);
            long t1 = waitFor(ENDED, group);
            ExecutionException e = assertThrows(ExecutionException.class, () -> job.get(120, TimeUnit.SECONDS));
            assertTrue(String.valueOf(e.getCause().getMessage()).contains("cancel"), e.getCause().toString());
            return (t1 - t0) / 1e6;
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS));
        }
    }

    static String summary(List<Double> ms) {
        List<Double> s = new ArrayList<>(ms);
        Collections.sort(s);
        return String.format("min %.1f ms, median %.1f ms (runs: %s)", s.get(0), s.get(s.size() / 2), ms);
    }

    @Test
    void aKilledTaskStopsItsNativeScanPromptly() throws Exception {
        for (int threads : new int[] {2, ScanOptions.SYNC}) {
            List<Double> ms = new ArrayList<>();
            for (int k = 0; k < 5; k++) {
                ms.add(killOnce("kill-" + threads + "-" + k, threads));
            }
            System.out.println("kill to task end, threads " + (threads == ScanOptions.SYNC ? "SYNC" : threads)
                    + ": " + summary(ms));
            assertEquals(5, ms.size());
        }
        // Nothing is left: every killed task's memory was released and checked.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (TaskMemory.liveCount() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, TaskMemory.liveCount());
        assertNotNull(ENDED.get("kill-2-0"));
    }
}
