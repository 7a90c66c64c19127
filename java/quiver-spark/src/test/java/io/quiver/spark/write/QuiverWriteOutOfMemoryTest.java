package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.SparkQuiverData;
import io.quiver.spark.memory.TaskMemory;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A failure inside the writer part-way through a row, through Spark: with
 * 16 MiB of off-heap memory, rows of 256 KB strings in one large batch make
 * the string vector's growth fail after the row's id was appended, so the
 * Arrow allocation charged to the task throws inside write(). The job fails
 * with the out-of-memory error, no task reports a leak at completion (Arrow
 * allocator, native pool, consumer balance), no file is left, and the same
 * session then writes rows that fit.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class QuiverWriteOutOfMemoryTest {
    private static SparkSession spark;
    private static TaskEnds tasks;
    @TempDir
    static Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("QuiverWriteOutOfMemoryTest", "16m");
        tasks = TaskEnds.attach(spark);
    }

    @AfterAll
    static void stop() {
        SparkTestSession.stop(spark);
    }

    @Test
    void aRowThatDoesNotFitFailsTheJobCleanly() throws InterruptedException {
        Path out = dir.resolve("big");
        Dataset<Row> big = spark.sql("SELECT id, repeat(CAST(id % 10 AS STRING), 262144) AS s FROM range(0, 400, 1, 2)");
        Exception e = assertThrows(Exception.class, () -> big.write().format("quiver").mode("overwrite")
                .option("batchRows", "100000").option("rowGroupRows", "100000").save(out.toString()));
        String t = TaskEnds.text(e);
        System.out.println("write out of memory: " + t.lines().filter(l -> l.contains("Memory") || l.contains("memory"))
                .findFirst().orElse(t));
        assertTrue(t.contains("OutOfMemory") || t.contains("UNABLE_TO_ACQUIRE_MEMORY"), t);
        TaskEnds.assertNoLeakReported(t, "");
        tasks.assertNoneLeaked(spark);
        assertEquals(Map.of(), WrittenFiles.under(dir));

        Dataset<Row> small = spark.sql("SELECT id, repeat(CAST(id % 10 AS STRING), 100) AS s FROM range(0, 2000, 1, 2)");
        small.write().format("quiver").mode("overwrite").save(out.toString());
        SparkQuiverData.assertSameRows("a write that fits, after the failure", SparkQuiverData.canonicalRows(small),
                SparkQuiverData.canonicalRows(spark.read().format("quiver").load(out.toString())));
        assertEquals(0, TaskMemory.liveCount());
    }
}
