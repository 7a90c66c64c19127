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
 * {@code df.write.format("quiver")} used as a careless or hostile user
 * would: partition names and values that need escaping, a partition column
 * of every atomic type, paths with glob characters or below a regular file,
 * overwrite of a folder holding foreign files, appends after a failed job,
 * duplicate and dotted column names, options out of range, a 30 MB value, a
 * job cancelled mid-write (invisible while it runs, no staging left after).
 * Regression tests of the fixes for glob characters in the target, duplicate
 * names, partition column names that need quoting, and rowGroupRows above
 * the native limit. Where Spark's own
 * Parquet source accepts the write, Quiver must read back what Parquet reads
 * back (the same rows and the same directories); where it refuses, Quiver
 * must refuse with a message, not hang or write half.
 */
@Timeout(300)
class QuiverWriteAttackTest {
    private static SparkSession spark;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.startUtc("QuiverWriteAttackTest", "256m");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    private static List<String> sorted(Dataset<Row> df) {
        return df.collectAsList().stream().map(Row::toString).sorted().collect(Collectors.toList());
    }

    private static TreeSet<String> entries(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> !p.equals(root)).map(p -> root.relativize(p).toString())
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    /** The folders under {@code root} (the Hive directories), relative. */
    private static TreeSet<String> folders(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> !p.equals(root) && Files.isDirectory(p)).map(p -> root.relativize(p).toString())
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static String trace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    private static void assertNoStaging(Path root) throws IOException {
        for (String e : entries(root)) {
            assertFalse(e.contains(WriteLayout.STAGING_PREFIX), "left behind: " + e);
        }
    }

    /** Writes {@code df} as Parquet and as Quiver, partitioned by {@code by}; both must read back alike. */
    private void sameAsParquet(String name, Dataset<Row> df, String... by) throws IOException {
        sameAsParquet(name, df, by, by);
    }

    /** As above, with partitionBy's strings for each source (V1 Parquet takes names, V2 parses them). */
    private void sameAsParquet(String name, Dataset<Row> df, String[] byParquet, String[] byQuiver)
            throws IOException {
        Path pq = dir.resolve(name + "-parquet");
        Path qv = dir.resolve(name + "-quiver");
        df.write().format("parquet").mode("overwrite").partitionBy(byParquet).save(pq.toString());
        df.write().format("quiver").mode("overwrite").partitionBy(byQuiver).save(qv.toString());
        assertEquals(folders(pq), folders(qv), name + ": Hive directories");
        Dataset<Row> a = spark.read().format("parquet").load(pq.toString());
        Dataset<Row> b = spark.read().format("quiver").load(qv.toString());
        assertEquals(a.schema().simpleString(), b.schema().simpleString(), name + ": schema read back");
        assertEquals(sorted(a), sorted(b), name + ": rows read back");
        assertNoStaging(qv);
    }

    @Test
    void partitionNamesAndValuesThatNeedEscaping() throws IOException {
        Dataset<Row> df = spark.sql("SELECT id, CASE id % 8 WHEN 0 THEN 'a/b' WHEN 1 THEN 'x=y' WHEN 2 THEN '50%'"
                + " WHEN 3 THEN 'ünï cødé ✓' WHEN 4 THEN ' spaced out ' WHEN 5 THEN '' WHEN 6 THEN NULL"
                + " ELSE '..' END AS `we/ird=na%me ü` FROM range(0, 64, 1, 2)");
        // Spark's V2 path parses partitionBy's strings: a name with '/' is given quoted there.
        sameAsParquet("escaping", df, new String[] {"we/ird=na%me ü"}, new String[] {"`we/ird=na%me ü`"});
    }

    @Test
    void aPartitionColumnOfEveryAtomicType() throws IOException {
        String[] exprs = {
            "id % 2 = 0", "CAST(id % 3 - 1 AS TINYINT)", "CAST(id % 3 * 1000 AS SMALLINT)", "CAST(id % 3 AS INT)",
            "id % 3 * 10000000000", "CAST(id % 3 AS FLOAT) / 2", "CAST(id % 3 AS DOUBLE) / 4 - 0.25",
            "CAST(id % 3 AS DECIMAL(9,2)) / 3", "CAST(id % 3 AS DECIMAL(30,5)) * 1000000000000",
            "concat('v', id % 3)", "DATE'2020-02-28' + CAST(id % 3 AS INT)",
            "TIMESTAMP'2020-01-01 10:00:00.123456' + make_interval(0, 0, 0, 0, 0, 0, id % 3)",
            "TIMESTAMP_NTZ'2020-01-01 10:00:00' + make_interval(0, 0, 0, 0, id % 3, 0, 0)",
            "CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id % 3 AS INT) END",
        };
        for (int i = 0; i < exprs.length; i++) {
            Dataset<Row> df = spark.range(0, 30, 1, 2).selectExpr("id", exprs[i] + " AS p");
            sameAsParquet("type" + i, df, "p");
        }
    }

    @Test
    void aBinaryPartitionColumnIsRefusedOrWrittenAsParquetDoes() throws IOException {
        Dataset<Row> df = spark.range(0, 10, 1, 1).selectExpr("id", "CAST(concat('b', id % 2) AS BINARY) AS p");
        Throwable pq = null;
        try {
            df.write().format("parquet").mode("overwrite").partitionBy("p").save(dir.resolve("bin-pq").toString());
        } catch (Exception e) {
            pq = e;
        }
        if (pq == null) {
            sameAsParquet("binary", df, "p");
        } else {
            Path qv = dir.resolve("bin-qv");
            assertThrows(Exception.class,
                    () -> df.write().format("quiver").mode("overwrite").partitionBy("p").save(qv.toString()));
        }
    }

    @Test
    void aPathWithGlobCharactersTakesAppends() throws IOException {
        Path out = dir.resolve("glob[1]{a,b}*?");
        Dataset<Row> a = spark.range(0, 20, 1, 2).selectExpr("id", "CAST(id % 2 AS INT) AS k");
        a.write().format("quiver").mode("append").partitionBy("k").save(out.toString());
        a.write().format("quiver").mode("append").partitionBy("k").save(out.toString());
        a.write().format("quiver").mode("overwrite").partitionBy("k").save(out.toString());
        a.write().format("quiver").mode("append").partitionBy("k").save(out.toString());
        assertEquals(8, entries(out).stream().filter(e -> e.endsWith(".qvr")).count(), entries(out).toString());
        assertNoStaging(out);
        // Reading takes a path as a glob, as Spark's file sources do; Spark's key turns that off.
        Dataset<Row> back = spark.read().format("quiver").option("__globPaths__", "false").load(out.toString());
        assertEquals(sorted(a.union(a)), sorted(back.select("id", "k")));
    }

    @Test
    void aPathBelowARegularFileFailsWithAMessage() throws IOException {
        Path file = dir.resolve("plain");
        Files.writeString(file, "not a folder");
        Path out = file.resolve("sub/out");
        Dataset<Row> a = spark.range(0, 5, 1, 1).toDF();
        Throwable t = assertThrows(Exception.class,
                () -> a.write().format("quiver").mode("append").save(out.toString()));
        assertTrue(trace(t).contains(file.toString()), trace(t));
        assertEquals("not a folder", Files.readString(file));
    }

    @Test
    void overwriteOfAFolderWithForeignFilesAndTwoOverwritesInARow() throws IOException {
        Path out = dir.resolve("foreign");
        Files.createDirectories(out.resolve("sub/deeper"));
        Files.writeString(out.resolve("notes.txt"), "x");
        Files.writeString(out.resolve("sub/deeper/data.csv"), "1,2");
        Files.writeString(out.resolve("_SUCCESS"), "");
        Dataset<Row> a = spark.range(0, 100, 1, 2).selectExpr("id", "CAST(id % 3 AS INT) AS k");
        a.write().format("quiver").mode("overwrite").save(out.toString());
        a.write().format("quiver").mode("overwrite").partitionBy("k").save(out.toString());
        Dataset<Row> back = spark.read().format("quiver").load(out.toString());
        assertEquals(sorted(a), sorted(back.select("id", "k")));
        for (String e : entries(out)) {
            assertTrue(e.matches("k=[0-2](/part-.*\\.qvr)?"), "left behind: " + e);
        }
    }

    @Test
    void appendAfterAFailedJobReadsOnlyCommittedRows() throws IOException {
        Path out = dir.resolve("failed");
        Dataset<Row> good = spark.range(0, 50, 1, 2).selectExpr("id", "CAST(id % 2 AS INT) AS k");
        good.write().format("quiver").mode("append").save(out.toString());
        // The second task fails after the first has written (and maybe committed) its rows.
        Dataset<Row> bad = spark.range(100, 200, 1, 2)
                .selectExpr("id", "CAST(IF(id = 190, raise_error('boom'), id % 2) AS INT) AS k");
        Throwable t = assertThrows(Exception.class,
                () -> bad.write().format("quiver").mode("append").save(out.toString()));
        assertTrue(trace(t).contains("boom"), trace(t));
        assertEquals(sorted(good), sorted(spark.read().format("quiver").load(out.toString())));
        good.write().format("quiver").mode("append").save(out.toString());
        assertEquals(sorted(good.union(good)), sorted(spark.read().format("quiver").load(out.toString())));
        assertNoStaging(out);
    }

    @Test
    void duplicateColumnNamesAreRefused() throws IOException {
        Path out = dir.resolve("dup");
        Dataset<Row> df = spark.range(0, 5, 1, 1).selectExpr("id AS a", "id + 1 AS A");
        Throwable t = assertThrows(Exception.class,
                () -> df.write().format("quiver").mode("append").save(out.toString()));
        assertTrue(trace(t).toLowerCase(java.util.Locale.ROOT).contains("`a`")
                || trace(t).contains("'a'") || trace(t).contains("'A'"), trace(t));
        assertFalse(Files.exists(out) && entries(out).stream().anyMatch(e -> e.endsWith(".qvr")),
                "nothing published");
    }

    @Test
    void dottedNamesRoundTrip() throws IOException {
        Dataset<Row> df = spark.sql("SELECT id AS `a.b`, named_struct('x.y', id, 'z', CAST(id AS STRING)) AS `s.t`,"
                + " CAST(id % 2 AS INT) AS `k.k` FROM range(0, 20, 1, 2)");
        sameAsParquet("dots", df, "k.k");
    }

    @Test
    void optionValuesOutOfRangeAreRefusedNamingTheOption() throws IOException {
        Path out = dir.resolve("opts");
        Dataset<Row> df = spark.range(0, 5, 1, 1).toDF();
        String[][] cases = {
            {"rowGroupRows", "-1"}, {"rowGroupRows", "99999999999999999999"}, {"rowGroupRows", "9223372036854775807"},
            {"batchRows", "-5"}, {"batchRows", "2147483648"}, {"maxInFlight", "-2"}, {"maxInFlight", "1e3"},
            {"maxOpenFiles", "0"}, {"compact", "yes"},
        };
        for (String[] c : cases) {
            Throwable t = assertThrows(Exception.class,
                    () -> df.write().format("quiver").mode("append").option(c[0], c[1]).save(out.toString()),
                    c[0] + "=" + c[1]);
            assertTrue(trace(t).contains(c[0]), c[0] + "=" + c[1] + ": " + trace(t));
        }
        assertFalse(Files.exists(out) && entries(out).stream().anyMatch(e -> e.endsWith(".qvr")),
                "nothing published");
    }
    @Test
    void aThirtyMegabyteStringRoundTrips() throws IOException {
        Path out = dir.resolve("huge");
        Dataset<Row> df = spark.range(0, 3, 1, 1)
                .selectExpr("id", "IF(id = 1, repeat('xy', 15000000), concat('small', id)) AS s");
        df.write().format("quiver").mode("append").save(out.toString());
        List<String> back = spark.read().format("quiver").load(out.toString())
                .selectExpr("id", "length(s)", "substr(s, 1, 6)", "substr(s, -2)").collectAsList().stream()
                .map(Row::toString).sorted().collect(Collectors.toList());
        assertEquals(List.of("[0,6,small0,l0]", "[1,30000000,xyxyxy,xy]", "[2,6,small2,l2]"), back);
        assertNoStaging(out);
    }

    @Test
    void aCancelledJobIsInvisibleWhileRunningAndLeavesNoStagingFiles() throws Exception {
        Path out = dir.resolve("cancelled");
        Dataset<Row> good = spark.range(0, 10, 1, 1).selectExpr("id", "CAST(id % 3 AS INT) AS k");
        good.write().format("quiver").mode("append").partitionBy("k").save(out.toString());
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        spark.udf().register("slowAttack", (org.apache.spark.sql.api.java.UDF1<Long, Long>) v -> {
            if (v % 1000 == 999) {
                Thread.sleep(200);
            }
            return v;
        }, org.apache.spark.sql.types.DataTypes.LongType);
        // One open file per task and the key changing every 1000 rows: finished files appear in the
        // attempts' folders long before the job commits.
        Dataset<Row> slow = spark.range(100, 400_100, 1, 2).selectExpr("slowAttack(id) AS id",
                "CAST(id DIV 1000 % 3 AS INT) AS k");
        java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread writer = new Thread(() -> {
            try {
                slow.write().format("quiver").mode("append").option("batchRows", "64").option("maxOpenFiles", "1")
                        .partitionBy("k").save(out.toString());
            } catch (Throwable t) {
                failed.set(t);
            }
        });
        writer.start();
        // Wait (bounded) until a task attempt has staged a file: rows are being written.
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (System.nanoTime() < deadline && entries(out).stream().noneMatch(e -> e.contains("attempt-")
                && e.endsWith(".qvr"))) {
            Thread.sleep(20);
        }
        assertTrue(entries(out).stream().anyMatch(e -> e.contains("attempt-")), entries(out).toString());
        // A reader lists only what was committed (its listing, on the driver: a read job would wait for
        // the write's tasks, which hold both of local[2]'s cores).
        List<String> files = io.quiver.spark.read.QuiverFileListing.list(spark,
                new org.apache.spark.sql.util.CaseInsensitiveStringMap(java.util.Map.of("path", out.toString())), null)
                .allFiles().stream().map(io.quiver.spark.read.QuiverFileListing.ListedFile::path)
                .collect(Collectors.toList());
        assertEquals(3, files.size(), files.toString());
        for (String f : files) {
            assertFalse(f.contains(WriteLayout.STAGING_PREFIX), f);
        }
        spark.sparkContext().cancelAllJobs();
        writer.join(120_000);
        assertFalse(writer.isAlive(), "the cancelled write returned");
        assertTrue(failed.get() != null, "the cancelled write failed");
        // The killed tasks end on their own threads: wait (bounded) for them to let go of their files.
        deadline = System.nanoTime() + 120_000_000_000L;
        while (System.nanoTime() < deadline && (spark.sparkContext().statusTracker().getActiveJobIds().length > 0
                || entries(out).stream().anyMatch(e -> e.contains(WriteLayout.STAGING_PREFIX)))) {
            Thread.sleep(50);
        }
        assertNoStaging(out);
        List<String> after = sorted(spark.read().format("quiver").load(out.toString()).select("id", "k"));
        assertEquals(sorted(good), after.size() > 100 ? List.of(after.size() + " rows") : after);
    }
}
