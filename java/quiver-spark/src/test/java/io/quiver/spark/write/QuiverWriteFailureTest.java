package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.SparkQuiverData;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Failures injected through Spark (one attempt per task, so a failure
 * fails the job): a job that fails part-way through its write, with row
 * groups already on disk and other tasks possibly committed, leaves no file
 * in the final folder and nothing staged anywhere under the test's folder,
 * plain or with 200 partition writers open; a prior committed dataset
 * survives a failed overwrite and a failed append byte for byte; a column
 * of a type the writer cannot take fails the write naming it, writing
 * nothing. After each, every task has ended, no task reported a leak at
 * completion (TaskMemory's check and Spark's exceptionOnMemoryLeak), every
 * TaskMemory is closed, and the same session writes the data correctly.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class QuiverWriteFailureTest {
    private static final long ROWS = 20_000;
    private static SparkSession spark;
    private static TaskEnds tasks;
    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("QuiverWriteFailureTest", "256m");
        tasks = TaskEnds.attach(spark);
        spark.udf().register("failAt", (UDF2<Long, Long, Long>) (id, at) -> {
            if (id.longValue() == at.longValue()) {
                throw new IllegalStateException("injected failure at id " + id);
            }
            return id;
        }, DataTypes.LongType);
        registerRace();
    }

    /** Counted down when task 0 of the racing job pulls its last row (local mode: the same JVM). */
    static volatile java.util.concurrent.CountDownLatch lastRowOfTaskZero = new java.util.concurrent.CountDownLatch(1);
    /** How long task 1 waits after that before it throws, so the abort meets task 0's commit at some point. */
    static volatile long raceDelayMillis;

    private static void registerRace() {
        // Task 1's first row waits until task 0 has pulled its last row, then throws: the job
        // fails and aborts while task 0 commits (finishing its 200 partition files).
        spark.udf().register("failWhileTaskZeroCommits", (UDF2<Long, Long, Long>) (id, last) -> {
            if (id.longValue() == last.longValue()) {
                lastRowOfTaskZero.countDown();
            } else if (id.longValue() == last.longValue() + 1) {
                if (!lastRowOfTaskZero.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("task 0 did not reach its last row in 60 s");
                }
                Thread.sleep(raceDelayMillis);
                throw new IllegalStateException("injected failure at id " + id + " while task 0 commits");
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
    }

    @AfterEach
    void nothingLeaked() throws InterruptedException {
        tasks.assertNoneLeaked(spark);
    }

    /** 20,000 rows in 4 tasks; p has 200 values; the row with id `failAt` throws (none if negative). */
    static Dataset<Row> input(long failAt) {
        return spark.sql("SELECT failAt(id, " + failAt + "L) AS id, concat('row ', id) AS s,"
                + " CAST(id % 200 AS INT) AS p, named_struct('a', id, 'b', array(id)) AS st"
                + " FROM range(0, " + ROWS + ", 1, 4)");
    }

    static void write(Dataset<Row> df, Path out, String mode, boolean partitioned) {
        var w = df.write().format("quiver").mode(mode).option("batchRows", "256").option("rowGroupRows", "500");
        if (partitioned) {
            w = w.partitionBy("p");
        }
        w.save(out.toString());
    }

    /** Writes `df` expecting the injected failure; returns once every task of the job has ended. */
    void writeFailing(Dataset<Row> df, Path out, String mode, boolean partitioned) throws InterruptedException {
        Exception e = assertThrows(Exception.class, () -> write(df, out, mode, partitioned));
        String t = TaskEnds.text(e);
        assertTrue(t.contains("injected failure at id"), t);
        TaskEnds.assertNoLeakReported(t, "");
        tasks.awaitAllEnded(spark);
    }

    /** The session writes and reads back correctly after the failures. */
    void writesCorrectlyNow(Path out, boolean partitioned) {
        write(input(-1), out, "overwrite", partitioned);
        Dataset<Row> expected = input(-1);
        if (partitioned) {
            expected = expected.select("id", "s", "st", "p");
        }
        SparkQuiverData.assertSameRows("write after the failures", SparkQuiverData.canonicalRows(expected),
                SparkQuiverData.canonicalRows(spark.read().format("quiver").load(out.toString())));
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aFailedJobLeavesNothing(boolean partitioned) throws InterruptedException {
        Path out = dir.resolve("out");
        // The last task fails three quarters through: the others may have committed their tasks by then.
        writeFailing(input(18_750), out, "append", partitioned);
        assertEquals(Map.of(), WrittenFiles.under(dir), "no file anywhere under " + dir);
        writesCorrectlyNow(out, partitioned);
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aFailedOverwriteKeepsThePriorDataset(boolean partitioned) throws InterruptedException {
        Path out = dir.resolve("kept");
        Dataset<Row> prior = spark.sql("SELECT id, concat('prior ', id) AS s, CAST(id % 200 AS INT) AS p,"
                + " named_struct('a', -id, 'b', array(id, id)) AS st FROM range(0, 5000, 1, 2)");
        write(prior, out, "overwrite", partitioned);
        Map<String, String> before = WrittenFiles.under(out);
        assertFalse(before.isEmpty());
        Dataset<Row> expected = partitioned ? prior.select("id", "s", "st", "p") : prior;

        writeFailing(input(10_001), out, "overwrite", partitioned);
        assertEquals(before, WrittenFiles.under(out), "a failed overwrite left the prior files as they were");
        Map<String, String> all = new TreeMap<>();
        before.forEach((k, v) -> all.put("kept/" + k, v));
        assertEquals(all, WrittenFiles.under(dir), "nothing staged is left anywhere under " + dir);
        SparkQuiverData.assertSameRows("prior data after a failed overwrite", SparkQuiverData.canonicalRows(expected),
                SparkQuiverData.canonicalRows(spark.read().format("quiver").load(out.toString())));

        writeFailing(input(19_999), out, "append", partitioned);
        assertEquals(before, WrittenFiles.under(out), "a failed append left the prior files as they were");
        SparkQuiverData.assertSameRows("prior data after a failed append", SparkQuiverData.canonicalRows(expected),
                SparkQuiverData.canonicalRows(spark.read().format("quiver").load(out.toString())));
    }

    /**
     * The job aborts while a task that was allowed to commit is still
     * finishing its files: Spark aborts a failed V2 write as soon as the
     * job fails, without waiting for its other running tasks. Neither the
     * target nor the staging folder may keep anything of that task.
     */
    @ParameterizedTest
    @ValueSource(strings = {"append", "overwrite"})
    void aJobAbortedWhileATaskCommitsLeavesNothing(String mode) throws InterruptedException {
        Path out = dir.resolve("race");
        Map<String, String> before = Map.of();
        if (mode.equals("overwrite")) {
            write(input(-1).limit(1000), out, "overwrite", true);
            before = WrittenFiles.under(out);
        }
        // Task 0's commit (asking Spark's coordinator, then finishing 200 files) takes some
        // milliseconds; several delays make the abort land before, inside and after it.
        for (long delay : new long[] {0, 5, 20, 60}) {
            lastRowOfTaskZero = new java.util.concurrent.CountDownLatch(1);
            raceDelayMillis = delay;
            Dataset<Row> df = spark.sql("SELECT failWhileTaskZeroCommits(id, 9999L) AS id, concat('row ', id) AS s,"
                    + " CAST(id % 200 AS INT) AS p, named_struct('a', id, 'b', array(id)) AS st"
                    + " FROM range(0, 20000, 1, 2)");
            writeFailing(df, out, mode, true);
            assertEquals(before, WrittenFiles.under(out),
                    "after an abort " + delay + " ms past task 0's last row, the target holds what it held before");
        }
    }

    @Test
    void aTypeTheWriterCannotTakeIsRefusedNamingTheColumn() {
        Path out = dir.resolve("interval");
        Dataset<Row> df = spark.sql("SELECT id, named_struct('when', make_dt_interval(CAST(id AS INT))) AS st"
                + " FROM range(0, 10)");
        Exception e = assertThrows(Exception.class, () -> write(df, out, "overwrite", false));
        String t = TaskEnds.text(e);
        assertTrue(t.contains("when"), "the message names the column: " + t);
        assertTrue(t.toLowerCase(java.util.Locale.ROOT).contains("interval"), "the message names the type: " + t);
        assertEquals(Map.of(), WrittenFiles.under(dir));
        writesCorrectlyNow(out, false);
    }
}
