package io.quiver.spark.read;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The one place the Spark tests' settings are written: local[2], no UI, bound
 * to 127.0.0.1 (the machine may have no other usable address), Spark's
 * memory-leak check turned into a failure, one attempt per task (a failure
 * must show, not be retried away), and off-heap memory when asked (without it
 * TaskMemory gets no memory at all). Tests add their own settings to the
 * builder; every session is stopped by its test class in @AfterAll.
 */
public final class SparkTestSession {
    private SparkTestSession() {}

    /** The settings for {@code app}; {@code offHeapSize} (e.g. "64m") or null for no off-heap memory. */
    public static SparkConf conf(String app, String offHeapSize) {
        SparkConf c = new SparkConf()
                .setMaster("local[2]")
                .setAppName(app)
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.unsafe.exceptionOnMemoryLeak", "true")
                .set("spark.task.maxFailures", "1");
        if (offHeapSize != null) {
            c.set("spark.memory.offHeap.enabled", "true").set("spark.memory.offHeap.size", offHeapSize);
        }
        return c;
    }

    /** A session builder with {@link #conf}, for tests that add settings of their own. */
    public static SparkSession.Builder builder(String app, String offHeapSize) {
        return SparkSession.builder().config(conf(app, offHeapSize));
    }

    /** A session with {@link #conf} and nothing else. */
    public static SparkSession start(String app, String offHeapSize) {
        return builder(app, offHeapSize).getOrCreate();
    }

    /** Stops {@code spark} if it was started (for @AfterAll, which runs even when @BeforeAll failed). */
    public static void stop(SparkSession spark) {
        if (spark != null) {
            spark.stop();
        }
    }

    /** A session whose zone is UTC, as the typed files of {@link ReadTestFiles} expect. */
    public static SparkSession startUtc(String app, String offHeapSize) {
        return builder(app, offHeapSize).config("spark.sql.session.timeZone", "UTC").getOrCreate();
    }
}
