package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.read.SparkTestSession;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code df.write.format("quiver")} through Spark: append, overwrite, a
 * path that does not exist yet, partitionBy (Hive directories, escaping,
 * nulls), the open-file bound, an empty DataFrame, and the writes that are
 * refused. The big comparisons with Parquet live in the end-to-end tests.
 */
@Timeout(300)
class QuiverWriteTest {
    private static SparkSession spark;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.startUtc("QuiverWriteTest", "256m");
    }

    @AfterAll
    static void stop() {
        SparkTestSession.stop(spark);
    }

    private static Dataset<Row> numbers(long from, long n, int partitions) {
        return spark.range(from, from + n, 1, partitions)
                .selectExpr("id", "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('s', id) END AS s",
                        "CAST(id % 5 AS INT) AS k");
    }

    private static Dataset<Row> read(Path p) {
        return spark.read().format("quiver").load(p.toString());
    }

    private static List<String> sorted(Dataset<Row> df) {
        return df.collectAsList().stream().map(Row::toString).sorted().collect(Collectors.toList());
    }

    /** Every entry under {@code root} (relative), files and folders. */
    private static TreeSet<String> entries(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> !p.equals(root)).map(p -> root.relativize(p).toString())
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static void assertNoStaging(Path root) throws IOException {
        for (String e : entries(root)) {
            assertFalse(e.contains(WriteLayout.STAGING_PREFIX) || e.contains("/.") || e.startsWith("."),
                    "left behind: " + e);
        }
    }

    private static String trace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    @Test
    void appendTwiceThenOverwriteToAPathThatDidNotExist() throws IOException {
        Path out = dir.resolve("new/nested/out");
        Dataset<Row> a = numbers(0, 1000, 3);
        a.write().format("quiver").mode("append").save(out.toString());
        assertEquals(sorted(a), sorted(read(out)));
        Dataset<Row> b = numbers(1000, 500, 2);
        b.write().format("quiver").mode("append").option("batchRows", "64").save(out.toString());
        assertEquals(sorted(a.union(b)), sorted(read(out)));
        assertEquals(5, entries(out).size(), "3 + 2 files: " + entries(out));
        for (String e : entries(out)) {
            assertTrue(e.matches("part-0000[0-2]-[0-9a-f-]{36}-c000\\.qvr"), e);
        }
        Dataset<Row> c = numbers(5000, 10, 1);
        c.write().format("quiver").mode("overwrite").save(out.toString());
        assertEquals(sorted(c), sorted(read(out)));
        assertEquals(1, entries(out).size(), entries(out).toString());
        assertNoStaging(out);
    }

    @Test
    void overwriteMakesAMissingPathAndTheDefaultModeIsRefused() throws IOException {
        Path out = dir.resolve("fresh");
        Dataset<Row> a = numbers(0, 100, 2);
        a.write().format("quiver").mode("overwrite").save(out.toString());
        assertEquals(sorted(a), sorted(read(out)));
        // A TableProvider takes no ErrorIfExists: Spark refuses it, and nothing is written.
        Path other = dir.resolve("errorIfExists");
        assertThrows(Exception.class, () -> a.write().format("quiver").save(other.toString()));
        assertFalse(Files.exists(other));
    }

    @Test
    void anEmptyDataFrameWritesOneFileThatKeepsTheSchema() throws IOException {
        Path out = dir.resolve("empty");
        Dataset<Row> none = numbers(0, 10, 2).where("id < 0");
        none.write().format("quiver").mode("append").save(out.toString());
        Dataset<Row> back = read(out);
        assertEquals(0, back.count());
        assertEquals(none.schema().fieldNames().length, back.schema().fieldNames().length);
        assertEquals(List.of("id", "s", "k"), List.of(back.schema().fieldNames()));
        assertEquals(1, entries(out).size(), entries(out).toString());
    }

    @Test
    void partitionByWritesHiveDirectoriesAndReadsBack() throws IOException {
        Path out = dir.resolve("parts");
        Dataset<Row> df = spark.range(0, 600, 1, 3).selectExpr("id",
                "CASE WHEN id % 4 = 0 THEN NULL ELSE CAST(id % 3 AS INT) END AS k",
                "CASE id % 5 WHEN 0 THEN 'a b/c' WHEN 1 THEN '' WHEN 2 THEN NULL WHEN 3 THEN 'x=y%' ELSE 'plain' END AS p",
                "concat('v', id) AS v");
        df.write().format("quiver").mode("append").partitionBy("k", "p").save(out.toString());
        TreeSet<String> dirs = new TreeSet<>();
        for (String e : entries(out)) {
            if (e.endsWith(".qvr")) {
                dirs.add(e.substring(0, e.lastIndexOf('/')));
                assertFalse(e.substring(e.lastIndexOf('/') + 1).contains("="), e);
            }
        }
        assertTrue(dirs.contains("k=__HIVE_DEFAULT_PARTITION__/p=a b%2Fc"), dirs.toString());
        assertTrue(dirs.contains("k=1/p=__HIVE_DEFAULT_PARTITION__"), dirs.toString());
        assertTrue(dirs.contains("k=2/p=x%3Dy%25"), dirs.toString());
        assertEquals(4 * 4, dirs.size(), dirs.toString()); // k in {null,0,1,2} x p in {a b/c, null(''/NULL), x=y%, plain}
        // The partition columns are not in the files: only id and v.
        Dataset<Row> back = read(out);
        assertEquals(List.of("id", "v", "k", "p"), List.of(back.schema().fieldNames()));
        // '' and NULL both become the default partition, read back as NULL, as with Spark's own sources.
        Dataset<Row> want = df.selectExpr("id", "v", "k", "CASE WHEN p = '' THEN NULL ELSE p END AS p");
        assertEquals(sorted(want), sorted(back.select("id", "v", "k", "p")));
        df.write().format("parquet").mode("append").partitionBy("k", "p").save(dir.resolve("pq").toString());
        TreeSet<String> pqDirs = new TreeSet<>();
        for (String e : entries(dir.resolve("pq"))) {
            if (e.endsWith(".parquet")) {
                pqDirs.add(e.substring(0, e.lastIndexOf('/')));
            }
        }
        assertEquals(pqDirs, dirs, "the same directories as Spark's Parquet writer");
        assertNoStaging(out);
    }

    @Test
    void partitionValuesOfDatesTimestampsAndDecimalsAreNamedAsSparkNamesThem() throws IOException {
        Path out = dir.resolve("typed");
        Path pq = dir.resolve("typed-pq");
        Dataset<Row> df = spark.range(0, 40, 1, 2).selectExpr("id",
                "date_add(DATE'2024-02-27', CAST(id % 4 AS INT)) AS d",
                "timestamp_micros(1700000000000000 + (id % 3) * 1500000) AS t",
                "CAST(id % 2 AS DECIMAL(9, 3)) AS m", "id % 2 = 0 AS b", "CAST(id % 3 AS DOUBLE) / 4 AS f");
        df.write().format("quiver").mode("overwrite").partitionBy("d", "t", "m", "b", "f").save(out.toString());
        df.write().format("parquet").mode("overwrite").partitionBy("d", "t", "m", "b", "f").save(pq.toString());
        TreeSet<String> q = new TreeSet<>();
        for (String e : entries(out)) {
            if (e.endsWith(".qvr")) {
                q.add(e.substring(0, e.lastIndexOf('/')));
            }
        }
        TreeSet<String> p = new TreeSet<>();
        for (String e : entries(pq)) {
            if (e.endsWith(".parquet")) {
                p.add(e.substring(0, e.lastIndexOf('/')));
            }
        }
        assertEquals(p, q);
        assertEquals(sorted(spark.read().parquet(pq.toString()).select("id", "d", "t", "m", "b", "f")),
                sorted(read(out).select("id", "d", "t", "m", "b", "f")));
    }

    @Test
    void theOpenFileBoundRollsToNewFiles() throws IOException {
        Path out = dir.resolve("rolled");
        // One task, the partition key changing on every row: with 2 files open, every row but a few rolls.
        Dataset<Row> df = spark.range(0, 50, 1, 1).selectExpr("id", "CAST(id % 5 AS INT) AS k");
        df.write().format("quiver").mode("append").option("maxOpenFiles", "2").partitionBy("k")
                .save(out.toString());
        long files = entries(out).stream().filter(e -> e.endsWith(".qvr")).count();
        assertEquals(50, files, "each row closed the eldest of 2 open files: " + entries(out));
        assertTrue(entries(out).stream().anyMatch(e -> e.matches("k=3/part-00000-.*-c009\\.qvr")),
                entries(out).toString());
        assertEquals(sorted(df.select("id", "k")), sorted(read(out).select("id", "k")));
        Path wide = dir.resolve("wide");
        df.write().format("quiver").mode("append").option("maxOpenFiles", "5").partitionBy("k")
                .save(wide.toString());
        assertEquals(5, entries(wide).stream().filter(e -> e.endsWith(".qvr")).count(), entries(wide).toString());
    }

    @Test
    void appendingWithOtherPartitionColumnsIsRefusedNamingBoth() throws IOException {
        Path out = dir.resolve("layout");
        Dataset<Row> df = numbers(0, 100, 2);
        df.write().format("quiver").mode("append").partitionBy("k").save(out.toString());
        TreeSet<String> before = entries(out);
        Throwable none = assertThrows(Exception.class,
                () -> df.write().format("quiver").mode("append").save(out.toString()));
        assertTrue(trace(none).contains("partitioned by [k]") && trace(none).contains("not partitioned (no partitionBy)"),
                trace(none));
        Throwable other = assertThrows(Exception.class,
                () -> df.write().format("quiver").mode("append").partitionBy("s").save(out.toString()));
        assertTrue(trace(other).contains("partitioned by [k]") && trace(other).contains("partitioned by [s]"),
                trace(other));
        assertEquals(before, entries(out), "a refused write leaves the folder as it was");
        // The same layout appends; overwrite takes any layout.
        df.write().format("quiver").mode("append").partitionBy("k").save(out.toString());
        assertEquals(200, read(out).count());
        df.write().format("quiver").mode("overwrite").save(out.toString());
        assertEquals(sorted(df), sorted(read(out)));
    }

    @Test
    void badWritesAreRefusedBeforeAnyTask() throws IOException {
        Path out = dir.resolve("bad");
        Dataset<Row> df = numbers(0, 10, 1);
        String[][] cases = {
            {"batchRows", "0", "'batchRows'"},
            {"maxOpenFiles", "none", "'maxOpenFiles'"},
        };
        for (String[] c : cases) {
            Throwable t = assertThrows(Exception.class,
                    () -> df.write().format("quiver").mode("append").option(c[0], c[1]).save(out.toString()));
            assertTrue(trace(t).contains(c[2]), trace(t));
        }
        Throwable missing = assertThrows(Exception.class,
                () -> df.write().format("quiver").mode("append").partitionBy("nope").save(out.toString()));
        assertTrue(trace(missing).contains("'nope'"), trace(missing));
        Throwable all = assertThrows(Exception.class,
                () -> df.select("k").write().format("quiver").mode("append").partitionBy("k").save(out.toString()));
        assertTrue(trace(all).contains("all columns"), trace(all));
        Throwable nested = assertThrows(Exception.class, () -> df.selectExpr("id", "array(id) AS a").write()
                .format("quiver").mode("append").partitionBy("a").save(out.toString()));
        assertTrue(trace(nested).contains("atomic"), trace(nested));
        Path file = dir.resolve("a-file");
        Files.writeString(file, "x");
        Throwable onFile = assertThrows(Exception.class,
                () -> df.write().format("quiver").mode("overwrite").save(file.toString()));
        assertTrue(trace(onFile).contains("it is a file"), trace(onFile));
        assertFalse(Files.exists(out), "nothing was made");
    }
}
