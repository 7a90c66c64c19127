package io.quiver.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.read.ReadTestFiles;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Path;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file cut into several tasks (small spark.sql.files.maxPartitionBytes)
 * returns every row exactly once, and a LIMIT stops the scan early: the tasks
 * hand Spark far fewer rows than the file holds (task input metrics, which
 * Spark's DataSourceRDD counts per batch it receives).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class QuiverSplitsAndLimitTest {
    /** 40 row groups of 5,000 rows. */
    private static final int ROWS = 200_000;
    private static final int GROUP_ROWS = 5_000;
    private static SparkSession spark;
    @TempDir
    static Path dir;
    private static Path file;
    private static final AtomicLong recordsRead = new AtomicLong();

    @BeforeAll
    static void write() throws Exception {
        spark = SparkTestSession.start("quiver-splits-limit", "64m");
        file = dir.resolve("longs.qvr");
        // c0 = row, c1 = 2 * row, c2 = 3 * row; row groups of GROUP_ROWS rows.
        ReadTestFiles.writeLongs(file, 3, ROWS, GROUP_ROWS);
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                if (end.taskMetrics() != null) {
                    recordsRead.addAndGet(end.taskMetrics().inputMetrics().recordsRead());
                }
            }
        });
    }

    @AfterEach
    void resetConf() {
        spark.conf().unset("spark.sql.files.maxPartitionBytes");
        spark.conf().unset("spark.sql.files.openCostInBytes");
    }

    @AfterAll
    static void stop() throws Exception {
        if (spark != null) {
            spark.stop();
        }
    }

    /** Runs `action` and returns the rows Spark's tasks received from scans meanwhile. */
    private static long recordsReadBy(Runnable action) throws Exception {
        spark.sparkContext().listenerBus().waitUntilEmpty(60_000);
        long before = recordsRead.get();
        action.run();
        spark.sparkContext().listenerBus().waitUntilEmpty(60_000);
        return recordsRead.get() - before;
    }

    @Test
    void aFileInManyTasksGivesEveryRowOnce() throws Exception {
        spark.conf().set("spark.sql.files.maxPartitionBytes", "65536");
        spark.conf().set("spark.sql.files.openCostInBytes", "0");
        Dataset<Row> df = spark.read().format("quiver").load(file.toString());
        int partitions = df.javaRDD().getNumPartitions();
        assertTrue(partitions > 1, "one file, 40 row groups, 64 KiB splits: " + partitions + " partition(s)");

        BitSet seen = new BitSet(ROWS);
        long[] rows = {0};
        long read = recordsReadBy(() -> {
            for (Row r : df.select("c0", "c2").collectAsList()) {
                long c0 = r.getLong(0);
                assertEquals(3 * c0, r.getLong(1), "c2 of row " + c0);
                assertTrue(c0 >= 0 && c0 < ROWS && !seen.get((int) c0), "row " + c0 + " twice or out of range");
                seen.set((int) c0);
                rows[0]++;
            }
        });
        assertEquals(ROWS, rows[0]);
        assertEquals(ROWS, seen.cardinality());
        assertEquals(ROWS, read, "rows the scan tasks handed to Spark");

        // The same through an aggregate computed by the tasks.
        df.createOrReplaceTempView("splits");
        Row agg = spark.sql("SELECT count(*), count(DISTINCT c0), sum(c1), min(c0), max(c0) FROM splits").first();
        assertEquals(ROWS, agg.getLong(0));
        assertEquals(ROWS, agg.getLong(1));
        assertEquals((long) ROWS * (ROWS - 1), agg.getLong(2));
        assertEquals(0L, agg.getLong(3));
        assertEquals(ROWS - 1L, agg.getLong(4));
    }

    @Test
    void limitStopsEarly() throws Exception {
        Dataset<Row> df = spark.read().format("quiver").option("batchRows", "1000").load(file.toString());
        AtomicReference<List<Row>> got = new AtomicReference<>();
        long read = recordsReadBy(() -> got.set(df.limit(10).collectAsList()));
        System.out.println("QuiverSplitsAndLimitTest: LIMIT 10 handed Spark " + read + " of " + ROWS + " rows");
        assertEquals(10, got.get().size());
        for (Row r : got.get()) {
            assertEquals(2 * r.getLong(0), r.getLong(1));
        }
        // A scan that stops early hands Spark a few batches of one task, not
        // the 40 row groups of the file.
        assertTrue(read >= 10 && read <= 4L * GROUP_ROWS, "rows handed to Spark for LIMIT 10: " + read);

        long filtered = recordsReadBy(() -> got.set(df.where("c0 % 2 = 1").limit(5).collectAsList()));
        assertEquals(5, got.get().size());
        assertTrue(filtered <= 4L * GROUP_ROWS, "rows handed to Spark for a filtered LIMIT 5: " + filtered);
    }
}
