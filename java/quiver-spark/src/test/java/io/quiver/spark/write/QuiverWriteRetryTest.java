package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.SparkQuiverData;
import io.quiver.spark.memory.TaskMemory;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Path;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A task whose first attempt fails after it has written rows (a UDF throws
 * on attempt 0, once the attempt's file holds row groups on disk) is
 * retried ({@code local[2,3]}: three attempts per task), and the output
 * holds exactly one copy of every input row: what the failed attempt wrote
 * is neither published nor left behind. The UDF also measures, when it
 * throws, how many bytes the failing attempt itself had written (its own
 * staging folder, unnamed temporaries included: {@link
 * WrittenFiles#attemptBytes}), so the test knows each failure came after
 * real writes. (Counting every file under the target instead once passed
 * only by timing: it counted the retries other tasks had finished.)
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class QuiverWriteRetryTest {
    private static final long ROWS = 20_000;
    private static final int TASKS = 4;
    private static SparkSession spark;
    private static TaskEnds tasks;
    @TempDir
    static Path dir;
    /** The folder the current write goes to, for the UDF to measure (local mode: same JVM). */
    static volatile Path target;
    /** Per failed attempt: the bytes it had written when the UDF threw. */
    static final Queue<Long> bytesAtFailure = new ConcurrentLinkedQueue<>();

    @BeforeAll
    static void start() {
        spark = SparkTestSession.builder("QuiverWriteRetryTest", "256m").master("local[2,3]").getOrCreate();
        tasks = TaskEnds.attach(spark);
        // Throws on a task's first attempt at the row whose id % (rows per task) is failAt.
        spark.udf().register("failOnFirstAttempt", (UDF2<Long, Long, Long>) (id, failAt) -> {
            if (TaskContext.get().attemptNumber() == 0 && id % (ROWS / TASKS) == failAt) {
                TaskContext t = TaskContext.get();
                // the write's DataWriter gets the task attempt id as its taskId
                bytesAtFailure.add(WrittenFiles.attemptBytes(target,
                        WriteLayout.attemptFolder(t.partitionId(), t.taskAttemptId())));
                throw new IllegalStateException("injected failure of the first attempt at id " + id);
            }
            return id;
        }, DataTypes.LongType);
    }

    @AfterAll
    static void stop() {
        SparkTestSession.stop(spark);
    }

    @BeforeEach
    void reset() {
        tasks.reset(spark);
        bytesAtFailure.clear();
    }

    static Dataset<Row> input() {
        return spark.sql("SELECT id, concat('row ', id) AS s, CAST(id % 7 AS INT) AS p, array(id, -id) AS a"
                + " FROM range(0, " + ROWS + ", 1, " + TASKS + ")");
    }

    /** Writes input() with the injected failure at row `failAt` of each task, and checks one copy came out. */
    void writeWithRetries(Path out, long failAt, boolean partitioned) {
        target = out;
        Dataset<Row> df = input().withColumn("id", org.apache.spark.sql.functions.expr(
                "failOnFirstAttempt(id, " + failAt + "L)"));
        var w = df.write().format("quiver").mode("overwrite").option("batchRows", "256").option("rowGroupRows", "500");
        if (partitioned) {
            // Encoded on the task thread: each partition's file gets one sealed row
            // group (500 of its ~700 rows) before the failure, and it must be on disk
            // when the UDF measures, not still in a background encoder.
            w = w.partitionBy("p").option("maxInFlight", "-1");
        }
        w.save(out.toString());
        tasks.drain(spark);

        List<String> failures = tasks.failures();
        assertEquals(TASKS, failures.size(), "each task failed once; the failures:" + tasks.failureSummary());
        for (String f : failures) {
            assertTrue(f.contains("injected failure of the first attempt"), f);
            TaskEnds.assertNoLeakReported(f, "a failed attempt leaked: ");
        }
        assertEquals(TASKS, tasks.succeeded(), "each task's retry succeeded; the failures:" + tasks.failureSummary());
        assertEquals(0, TaskMemory.liveCount());

        Dataset<Row> back = spark.read().format("quiver").load(out.toString());
        assertEquals(ROWS, back.count());
        assertEquals(ROWS, back.select("id").distinct().count());
        Dataset<Row> expected = input();
        if (partitioned) {
            expected = expected.select("id", "s", "a", "p");
        }
        SparkQuiverData.assertSameRows("retried write (expected: input, got: Quiver)",
                SparkQuiverData.canonicalRows(expected), SparkQuiverData.canonicalRows(back));
        for (String f : WrittenFiles.under(out).keySet()) {
            assertTrue(f.endsWith(".qvr"), "only data files remain after the commit, found " + f);
        }
    }

    @Test
    void aRetriedTaskLeavesExactlyOneCopy() {
        writeWithRetries(dir.resolve("plain"), 3999, false);
        assertEachFailedAttemptHadWritten();
    }

    @Test
    void aRetriedPartitionedTaskLeavesExactlyOneCopy() {
        writeWithRetries(dir.resolve("partitioned"), 4900, true);
        assertEachFailedAttemptHadWritten();
    }

    /**
     * Every first attempt's failure came after it had written row groups to its file: more than
     * a file's header (written when it opens), which alone would say nothing.
     */
    static void assertEachFailedAttemptHadWritten() {
        List<Long> bytes = List.copyOf(bytesAtFailure);
        System.out.println("bytes each failed attempt had written when it failed: " + bytes);
        assertEquals(TASKS, bytes.size(), "one measure per failed attempt: " + bytes);
        for (long b : bytes) {
            assertTrue(b > MORE_THAN_A_HEADER,
                    "each failed attempt had written row groups before failing: " + bytes);
        }
    }

    /** A header is a few bytes; a row group of 500 rows here is several KiB (27-31 KiB per attempt were measured). */
    private static final long MORE_THAN_A_HEADER = 1024;

    @Test
    void aFailureAtTheFirstRowIsRetriedToo() {
        writeWithRetries(dir.resolve("first-row"), 0, true);
    }
}
