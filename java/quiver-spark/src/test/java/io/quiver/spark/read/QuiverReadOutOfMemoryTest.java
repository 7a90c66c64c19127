package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.FileIdentity;
import io.quiver.spark.memory.TaskMemory;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A scan that needs more native memory than the task can get (4 MiB of
 * off-heap memory, 64 KiB pool blocks, a batch of 16 columns x 65,536 rows
 * = 8 MiB) fails the query with Spark's out-of-memory error naming the
 * pool's largest consumers; the executor and the session go on, and a scan
 * that fits runs next.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class QuiverReadOutOfMemoryTest {
    @TempDir static Path dir;
    static SparkSession spark;
    static String file;
    static FileIdentity id;
    static final int ROWS = 200_000;

    @BeforeAll
    static void start() {
        Path p = dir.resolve("wide.qvr");
        id = ReadTestFiles.writeLongs(p, 16, ROWS, 65536);
        file = p.toString();
        spark = SparkTestSession.builder("QuiverReadOutOfMemoryTest", "4m")
                .config(TaskMemory.BLOCK_SIZE_CONF, "65536")
                .getOrCreate();
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    static Dataset<Row> read(int columns, long batchRows) {
        StructType data = new StructType();
        List<String> names = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            data = data.add("c" + c, DataTypes.LongType, false);
            names.add("c" + c);
        }
        ReadConfig c = new ReadConfig(data, new StructType(), names, null, 0, batchRows, io.quiver.ScanOptions.SYNC, 1,
                false, false);
        FileSlice s = new FileSlice(file, id, 0, 0, ROWS, 0, new GenericInternalRow(0));
        return spark.read().format(TestSource.class.getName())
                .option("id", TestSource.register(c, List.of(new QuiverInputPartition(0, List.of(s))))).load();
    }

    @Test
    void aScanThatDoesNotFitFailsAsSparkOutOfMemory() {
        Exception e = assertThrows(Exception.class, () -> read(16, 65536).count());
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        String t = w.toString();
        System.out.println("out of memory error: " + t.lines().filter(l -> l.contains("UNABLE_TO_ACQUIRE_MEMORY"))
                .findFirst().orElse(t));
        assertTrue(t.contains("SparkOutOfMemoryError"), t);
        assertTrue(t.contains("UNABLE_TO_ACQUIRE_MEMORY"), t);
        assertTrue(t.contains("top consumers: '"), t);
        assertTrue(t.contains("task's Quiver pool holds"), t);
        // The executor lives on: a scan that fits runs in the same session.
        assertEquals(ROWS, read(2, 1024).count());
        assertEquals(0, TaskMemory.liveCount());
    }
}
