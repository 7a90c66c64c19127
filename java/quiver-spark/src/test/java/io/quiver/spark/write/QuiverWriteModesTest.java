package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.SparkQuiverData;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

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
 * Save modes through {@code df.write.format("quiver")}: append adds to what
 * is there (twice the same rows is two copies), overwrite replaces it (a
 * partitioned folder included: partitions the new data lacks are gone), a
 * path that does not exist yet (several levels deep) is created by either
 * mode, and the default mode is refused as Spark refuses it for every
 * TableProvider. Contents are checked as sorted canonical rows, counts too.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class QuiverWriteModesTest {
    private static SparkSession spark;
    private static TaskEnds tasks;
    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("QuiverWriteModesTest", "256m");
        tasks = TaskEnds.attach(spark);
    }

    @AfterAll
    static void stop() {
        SparkTestSession.stop(spark);
    }

    @AfterEach
    void noTaskFailedOrLeaked() {
        tasks.assertNoneFailed(spark);
    }

    /** Rows [from, to): id, a string, a struct and an int partition value id % 3 + offset. */
    static Dataset<Row> rows(long from, long to, int partOffset) {
        return spark.sql("SELECT id, concat('v', id) AS s, named_struct('x', id * 2, 'y', CAST(id AS STRING)) AS st,"
                + " CAST(id % 3 + " + partOffset + " AS INT) AS p FROM range(" + from + ", " + to + ", 1, 3)");
    }

    static Dataset<Row> read(Path p) {
        return spark.read().format("quiver").load(p.toString());
    }

    static List<String> canonical(Dataset<Row> df) {
        return SparkQuiverData.canonicalRows(df);
    }

    @SafeVarargs
    static List<String> union(Dataset<Row>... dfs) {
        List<String> all = new ArrayList<>();
        for (Dataset<Row> d : dfs) {
            all.addAll(canonical(d));
        }
        all.sort(null);
        return all;
    }

    static Set<String> partitionFolders(Path p) {
        Set<String> out = new TreeSet<>();
        for (String f : WrittenFiles.under(p).keySet()) {
            if (f.endsWith(".qvr") && f.contains("/")) {
                out.add(f.substring(0, f.indexOf('/')));
            }
        }
        return out;
    }

    @Test
    void appendAddsAndOverwriteReplaces() {
        Path out = dir.resolve("t");
        Dataset<Row> a = rows(0, 100, 0);
        Dataset<Row> b = rows(100, 250, 0);
        a.write().format("quiver").mode("overwrite").save(out.toString());
        assertEquals(100, read(out).count());
        SparkQuiverData.assertSameRows("first write", canonical(a), canonical(read(out)));

        b.write().format("quiver").mode("append").save(out.toString());
        assertEquals(250, read(out).count());
        SparkQuiverData.assertSameRows("after append", union(a, b), canonical(read(out)));

        a.write().format("quiver").mode("append").save(out.toString());
        assertEquals(350, read(out).count());
        SparkQuiverData.assertSameRows("after appending the same rows again", union(a, b, a), canonical(read(out)));

        Map<String, String> before = WrittenFiles.under(out);
        b.write().format("quiver").mode("overwrite").save(out.toString());
        assertEquals(150, read(out).count());
        SparkQuiverData.assertSameRows("after overwrite", canonical(b), canonical(read(out)));
        Set<String> oldFiles = new TreeSet<>(before.keySet());
        oldFiles.retainAll(WrittenFiles.under(out).keySet());
        oldFiles.removeIf(f -> !f.endsWith(".qvr"));
        assertEquals(Set.of(), oldFiles, "overwrite removed every file of the previous data");
    }

    @Test
    void overwriteOfAPartitionedFolder() {
        Path out = dir.resolve("parts");
        Dataset<Row> a = rows(0, 300, 0);  // p = 0, 1, 2
        Dataset<Row> b = rows(300, 360, 2); // p = 2, 3, 4
        a.write().format("quiver").mode("overwrite").partitionBy("p").save(out.toString());
        assertEquals(Set.of("p=0", "p=1", "p=2"), partitionFolders(out));
        SparkQuiverData.assertSameRows("partitioned write", canonical(a), canonical(read(out)));

        b.write().format("quiver").mode("append").partitionBy("p").save(out.toString());
        assertEquals(Set.of("p=0", "p=1", "p=2", "p=3", "p=4"), partitionFolders(out));
        SparkQuiverData.assertSameRows("partitioned append", union(a, b), canonical(read(out)));
        assertEquals(100 + 20, read(out).where("p = 2").count());

        b.write().format("quiver").mode("overwrite").partitionBy("p").save(out.toString());
        assertEquals(Set.of("p=2", "p=3", "p=4"), partitionFolders(out), "overwrite truncates the whole table");
        assertEquals(60, read(out).count());
        SparkQuiverData.assertSameRows("partitioned overwrite", canonical(b), canonical(read(out)));
    }

    @Test
    void aPathThatDoesNotExistIsCreated() {
        Path deep = dir.resolve("no/such/folder/yet");
        assertFalse(Files.exists(dir.resolve("no")));
        Dataset<Row> a = rows(0, 50, 0);
        a.write().format("quiver").mode("append").save(deep.toString());
        SparkQuiverData.assertSameRows("append to a new path", canonical(a), canonical(read(deep)));

        Path other = dir.resolve("fresh/overwrite");
        a.write().format("quiver").mode("overwrite").partitionBy("p").save(other.toString());
        SparkQuiverData.assertSameRows("overwrite to a new path", canonical(a), canonical(read(other)));
        assertEquals(Set.of("p=0", "p=1", "p=2"), partitionFolders(other));
    }

    @Test
    void overwriteWithNoRowsLeavesNoRows() {
        Path out = dir.resolve("emptied");
        Dataset<Row> a = rows(0, 50, 0);
        a.write().format("quiver").mode("overwrite").save(out.toString());
        a.where("id < 0").write().format("quiver").mode("overwrite").save(out.toString());
        Dataset<Row> back = spark.read().format("quiver").schema(a.schema()).load(out.toString());
        assertEquals(0, back.count());
    }

    @Test
    void theDefaultModeIsRefusedAsForEveryTableProvider() {
        Path out = dir.resolve("default");
        Exception e = assertThrows(Exception.class, () -> rows(0, 10, 0).write().format("quiver").save(out.toString()));
        assertTrue(String.valueOf(e.getMessage()).contains("ErrorIfExists"), e.toString());
        assertEquals(Map.of(), WrittenFiles.under(out));
    }
}
