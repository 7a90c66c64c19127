package io.quiver.spark.memory;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.read.SparkTestSession;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Without off-heap memory, TaskMemory fails at once with a message naming the settings. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TaskMemoryOffHeapMissingTest {
    static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("TaskMemoryOffHeapMissingTest", null);
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    @Test
    void messageNamesTheSettings() {
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        Exception e = assertThrows(Exception.class,
                () -> jsc.parallelize(List.of(0), 1).map(i -> TaskMemory.get(TaskContext.get()).name()).collect());
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        String all = w.toString();
        assertTrue(all.contains("QuiverOutOfMemoryException"), all);
        assertTrue(all.contains("spark.memory.offHeap.enabled=true"), all);
        assertTrue(all.contains("spark.memory.offHeap.size"), all);
        assertTrue(all.contains("found spark.memory.offHeap.enabled=unset"), all);
        // Spark carries on: the session still runs jobs.
        assertTrue(jsc.parallelize(List.of(1, 2), 2).count() == 2);
    }
}
