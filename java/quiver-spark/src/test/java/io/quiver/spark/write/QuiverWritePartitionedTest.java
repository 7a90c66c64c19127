package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.SparkQuiverData;
import io.quiver.spark.memory.TaskMemory;
import io.quiver.spark.read.SparkTestSession;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code partitionBy} at scale: 400,000 rows of every type (with nulls)
 * into 200 Hive folders (an int column with 199 values and null) read back
 * identical to the same DataFrame written by Spark's Parquet source the same
 * way, folder for folder; and the memory a task holds with 200 partition
 * writers open at once holding one row each, measured two ways (the task's
 * peak off-heap execution memory as Spark's listener reports it, and
 * TaskMemory's own figures sampled by a UDF while the writers are open) and
 * printed. The bound asserted is a generous safety net that catches vectors
 * allocated at a whole batch's size (630 MiB for 200 writers), not a target.
 */
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class QuiverWritePartitionedTest {
    private static final long ROWS = 400_000;
    private static final int PARTITIONS = 200;
    private static final long BOUND = 64L << 20;
    private static SparkSession spark;
    private static TaskEnds tasks;
    @TempDir
    static Path dir;

    // Maxima sampled in the task by the probe UDF (local mode: the same JVM).
    static final AtomicLong probeUsed = new AtomicLong();
    static final AtomicLong probeArrow = new AtomicLong();
    static final AtomicLong probePool = new AtomicLong();
    static final AtomicLong probeCalls = new AtomicLong();

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("QuiverWritePartitionedTest", "1g");
        tasks = TaskEnds.attach(spark);
        spark.udf().register("memoryProbe", (UDF1<Long, Long>) id -> {
            TaskMemory m = TaskMemory.get(TaskContext.get());
            probeUsed.accumulateAndGet(m.getUsed(), Math::max);
            probeArrow.accumulateAndGet(m.writeAllocator().getAllocatedMemory(), Math::max);
            probePool.accumulateAndGet(m.pool().stats().used(), Math::max);
            probeCalls.incrementAndGet();
            return id;
        }, DataTypes.LongType);
    }

    @AfterAll
    static void stop() {
        SparkTestSession.stop(spark);
    }

    /** everyType's rows with strings cut to at most 150 characters (400k rows of 6 KB strings are 240 MB) and `part`. */
    static Dataset<Row> data(long rows, String part) {
        return SparkQuiverData.everyType(spark, rows)
                .withColumn("str", org.apache.spark.sql.functions.expr(
                        "IF(length(str) > 150, substr(str, 1, 100 + CAST(id % 50 AS INT)), str)"))
                .withColumn("part", org.apache.spark.sql.functions.expr(part));
    }

    static Set<String> folders(Path p) throws IOException {
        try (Stream<Path> s = Files.list(p)) {
            return s.filter(Files::isDirectory).map(x -> x.getFileName().toString())
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    @Test
    void fourHundredThousandRowsInto200Folders() throws IOException {
        Dataset<Row> df = data(ROWS, "CAST(CASE WHEN id % 200 = 0 THEN NULL ELSE id % 200 END AS INT)");
        Path parquet = dir.resolve("parquet");
        Path quiver = dir.resolve("quiver");
        df.write().mode("overwrite").partitionBy("part").parquet(parquet.toString());
        df.write().format("quiver").mode("overwrite").partitionBy("part").save(quiver.toString());
        tasks.drain(spark);
        assertEquals(List.of(), tasks.failures());
        assertEquals(0, TaskMemory.liveCount());

        Set<String> folders = folders(quiver);
        assertEquals(PARTITIONS, folders.size(), folders.toString());
        assertTrue(folders.contains("part=__HIVE_DEFAULT_PARTITION__"), folders.toString());
        assertTrue(folders.contains("part=199"), folders.toString());
        assertEquals(folders(parquet), folders);
        for (String f : folders) {
            try (Stream<Path> s = Files.list(quiver.resolve(f))) {
                assertTrue(s.anyMatch(x -> x.getFileName().toString().endsWith(".qvr")), f + " has no .qvr file");
            }
        }

        Dataset<Row> p = spark.read().parquet(parquet.toString());
        Dataset<Row> q = spark.read().format("quiver").load(quiver.toString());
        assertEquals(p.schema().catalogString(), q.schema().catalogString());
        assertEquals(ROWS, SparkQuiverData.assertSameRowDigests("400k rows in 200 folders (expected: Parquet, got: Quiver)",
                p, q));
        // Each folder on its own (partition pruning), for a few of them, null included.
        for (String where : List.of("part IS NULL", "part = 1", "part = 100", "part = 199")) {
            SparkQuiverData.assertSameRowDigests(where, p.where(where), q.where(where));
            assertEquals(ROWS / PARTITIONS, q.where(where).count(), where);
        }
    }

    @Test
    void twoHundredOpenOneRowWriters() throws IOException {
        probeUsed.set(0);
        probeArrow.set(0);
        probePool.set(0);
        probeCalls.set(0);
        // One task (coalesce) sees 200 rows of 200 partition values: 200 writers open, one row each,
        // until the task commits. The probe runs as each row is pulled, so it sees up to 199 of them open.
        Dataset<Row> df = data(PARTITIONS, "CAST(id AS INT)").coalesce(1)
                .withColumn("id", org.apache.spark.sql.functions.expr("memoryProbe(id)"));
        Path out = dir.resolve("one-row-writers");
        tasks.drain(spark);
        tasks.clear();
        df.write().format("quiver").mode("overwrite").option("maxOpenFiles", "1000").partitionBy("part")
                .save(out.toString());
        tasks.drain(spark);
        assertEquals(List.of(), tasks.failures());
        assertEquals(1, tasks.succeeded(), "the write ran as one task");
        long peak = tasks.peakOffHeapBytes();
        System.out.printf("200 open one-row writers: task peak off-heap execution memory %.2f MiB; "
                + "TaskMemory sampled while open: used %.2f MiB, Arrow write allocator %.2f MiB, native pool %.2f MiB"
                + " (%d samples)%n", peak / 1048576.0, probeUsed.get() / 1048576.0, probeArrow.get() / 1048576.0,
                probePool.get() / 1048576.0, probeCalls.get());
        assertEquals(PARTITIONS, probeCalls.get());
        assertTrue(probeUsed.get() > 0, "the probe saw the writers' memory");
        assertTrue(peak >= probeUsed.get(), "the peak covers what was sampled");
        assertTrue(peak < BOUND, "200 one-row writers held " + peak + " bytes at their peak, bound " + BOUND);

        assertEquals(PARTITIONS, folders(out).size());
        Dataset<Row> expected = data(PARTITIONS, "CAST(id AS INT)");
        Dataset<Row> q = spark.read().format("quiver").load(out.toString());
        SparkQuiverData.assertSameRows("200 one-row writers (expected: source, got: Quiver)",
                SparkQuiverData.canonicalRows(expected), SparkQuiverData.canonicalRows(q));
        assertEquals(0, TaskMemory.liveCount());
    }
}
