package io.quiver.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.FileOptions;
import io.quiver.QuiverFile;
import io.quiver.QuiverScanReader;
import io.quiver.ScanOptions;
import io.quiver.memory.PoolStats;
import io.quiver.spark.read.ReadTestFiles;
import io.quiver.spark.read.SparkTestSession;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.CopyOnWriteArrayList;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.arrow.vector.BigIntVector;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * TaskMemory inside real Spark tasks (local[2], off-heap on, the leak check
 * on): scans charged to the task and balanced at completion; spill giving
 * back real bytes when another consumer of the task needs memory.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class TaskMemoryTest {
    @TempDir static Path dir;
    static SparkSession spark;
    static JavaSparkContext jsc;
    static String file;

    /** What tasks report after their TaskMemory closed (local mode: the same JVM). */
    static final Map<Long, long[]> AFTER_CLOSE = new ConcurrentHashMap<>();

    @BeforeAll
    static void start() {
        Path p = dir.resolve("sixteen.qvr");
        ReadTestFiles.writeLongs(p, 16, 100_000, 16384);
        file = p.toString();
        spark = SparkTestSession.start("TaskMemoryTest", "64m");
        jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    /** Scans `file` under the task's memory, checks column c1, returns the rows. */
    static long scan(TaskMemory m, String file, int threads) throws Exception {
        long row = 0;
        try (QuiverFile f = QuiverFile.open(Path.of(file), FileOptions.defaults().pool(m.pool()));
                QuiverScanReader r = f.scan(m.importAllocator(),
                        ScanOptions.builder().batchRows(4096).threads(threads).build())) {
            while (r.loadNextBatch()) {
                BigIntVector c1 = (BigIntVector) r.getVectorSchemaRoot().getVector("c1");
                for (int i = 0; i < c1.getValueCount(); i++) {
                    if (c1.get(i) != (row + i) * 2) {
                        throw new AssertionError("row " + (row + i) + ": " + c1.get(i));
                    }
                }
                row += c1.getValueCount();
            }
        }
        return row;
    }

    /** Registers, before TaskMemory does, a listener that runs after it closed (listeners run in reverse). */
    static void reportAfterClose(TaskContext ctx, TaskMemory[] holder) {
        long id = ctx.taskAttemptId();
        ctx.addTaskCompletionListener(c -> {
            TaskMemory m = holder[0];
            AFTER_CLOSE.put(id, new long[] {m.acquiredBytes(), m.releasedBytes(), m.getUsed()});
        });
    }

    @Test
    void scansInTasksAreChargedAndBalanced() {
        AFTER_CLOSE.clear();
        String f = file;
        List<long[]> out = jsc.parallelize(List.of(0, 1, 2, 3), 4).map(i -> {
            TaskContext ctx = TaskContext.get();
            TaskMemory[] holder = new TaskMemory[1];
            reportAfterClose(ctx, holder);
            TaskMemory m = TaskMemory.get(ctx);
            holder[0] = m;
            if (TaskMemory.get(ctx) != m) {
                throw new AssertionError("one TaskMemory per task attempt");
            }
            long rows = scan(m, f, i % 2 == 0 ? 0 : 2);
            PoolStats s = m.pool().stats();
            return new long[] {ctx.taskAttemptId(), rows, s.hostAcquireCalls(), s.peakReserved(), m.acquiredBytes()};
        }).collect();
        assertEquals(4, out.size());
        for (long[] r : out) {
            assertEquals(100_000, r[1]);
            assertTrue(r[2] > 0, "the pool asked the task for memory");
            assertTrue(r[4] > 0, "the consumer acquired memory from Spark");
            long[] after = AFTER_CLOSE.get(r[0]);
            assertEquals(after[0], after[1], "acquired == released at task completion");
            assertEquals(0, after[2], "the consumer holds nothing");
        }
        assertEquals(0, TaskMemory.liveCount());
    }

    /** Files a task left open (closed by the test afterwards). */
    static final List<QuiverFile> LEAKED = new CopyOnWriteArrayList<>();

    @Test
    void aLeakIsReportedNotDropped() {
        String f = file;
        Exception e = assertThrows(Exception.class, () -> jsc.parallelize(List.of(0), 1).map(i -> {
            TaskMemory m = TaskMemory.get(TaskContext.get());
            // Opened with the task's pool and never closed: its reader's
            // memory is still charged when the task completes.
            LEAKED.add(QuiverFile.open(Path.of(f), FileOptions.defaults().pool(m.pool())));
            return 1;
        }).collect());
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        String all = w.toString();
        assertTrue(all.contains("leaked at task completion"), all);
        assertTrue(all.contains("the native pool still holds"), all);
        assertEquals(1, LEAKED.size());
        // The file outlives its task; closing it now gives the memory back to a
        // TaskMemory that settled its books already (nothing reaches Spark twice).
        for (QuiverFile q : LEAKED) {
            q.close();
        }
        assertEquals(0, TaskMemory.liveCount());
        // Spark carries on.
        assertEquals(2, jsc.parallelize(List.of(1, 2), 2).count());
    }

    /** Another consumer of the same task: asking for most of the off-heap memory makes Spark spill ours. */
    static final class Hog extends MemoryConsumer {
        Hog(TaskContext ctx) {
            super(ctx.taskMemoryManager(), MemoryMode.OFF_HEAP);
        }

        @Override
        public long spill(long size, MemoryConsumer trigger) {
            return 0;
        }
    }

    @Test
    void spillReturnsRealBytes() {
        String f = file;
        List<long[]> out = jsc.parallelize(List.of(0), 1).map(i -> {
            TaskContext ctx = TaskContext.get();
            TaskMemory m = TaskMemory.get(ctx);
            scan(m, f, 0);
            // After the scan the pool still holds host memory: cached blocks and surplus.
            long heldBefore = m.pool().stats().hostHeld();
            long usedBefore = m.getUsed();
            Hog hog = new Hog(ctx);
            long got = hog.acquireMemory(64L << 20);
            long spilled = m.spilledBytes();
            long heldAfter = m.pool().stats().hostHeld();
            hog.freeMemory(got);
            return new long[] {heldBefore, usedBefore, spilled, heldAfter, got};
        }).collect();
        long[] r = out.get(0);
        assertTrue(r[0] > 0, "the pool held memory after the scan: " + r[0]);
        assertTrue(r[2] > 0, "spill released bytes: " + r[2]);
        assertTrue(r[3] < r[0], "host_held dropped: " + r[0] + " -> " + r[3]);
        assertTrue(r[4] > 0, "the other consumer got memory: " + r[4]);
    }
}
