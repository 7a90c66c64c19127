package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.QuiverWriter;
import io.quiver.WriterOptions;
import io.quiver.spark.memory.TaskMemory;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
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
 * The read path attacked as a hostile user would: schemas that differ
 * between files in ways a merge must not confuse, user schemas that do not
 * match the files, filters whose native evaluation could differ from
 * Spark's, odd directories and options. Each case either reads exactly the
 * rows Spark would (checked against the same rows in a local relation, where
 * nothing is pushed) or fails with an error naming what and where.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class QuiverReadAttackTest {
    @TempDir static Path dir;
    static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.startUtc("QuiverReadAttackTest", "64m");
        spark.conf().set("spark.sql.adaptive.enabled", "false");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    @AfterEach
    void nothingLive() {
        assertEquals(0, TaskMemory.liveCount());
    }

    // ---- helpers ----

    static Field i64(String name) {
        return new Field(name, FieldType.nullable(new ArrowType.Int(64, true)), null);
    }

    static Field struct(String name, Field... children) {
        return new Field(name, FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(children));
    }

    /** Writes one row group of {@code rows} rows of {@code schema}, {@code fill} setting the values. */
    static Path write(Path p, Schema schema, int rows, Consumer<VectorSchemaRoot> fill) throws Exception {
        Files.createDirectories(p.getParent());
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema, WriterOptions.defaults())) {
            root.allocateNew();
            fill.accept(root);
            root.setRowCount(rows);
            w.write(root);
            w.finish();
        }
        return p;
    }

    static List<String> sorted(Dataset<Row> df) {
        List<String> out = new ArrayList<>();
        for (Row r : df.collectAsList()) {
            out.add(r.toString());
        }
        out.sort(null);
        return out;
    }

    static String trace(Throwable e) {
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    /** {@code cond} through format("quiver") (pushed) and over the same rows in a local relation (not pushed). */
    static void sameAsSpark(Dataset<Row> quiver, String cond) {
        Dataset<Row> local = spark.createDataFrame(quiver.collectAsList(), quiver.schema());
        assertEquals(sorted(local.filter(cond)), sorted(quiver.filter(cond)), cond);
    }

    // ---- schemas ----

    /** s struct<a, b> in one file and s struct<b, a> in the other: merged by name, values must not swap. */
    @Test
    void mergedStructFieldsInAnotherOrder() throws Exception {
        Path t = dir.resolve("structOrder");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a"), i64("b")))), 3, root -> {
            BigIntVector id = (BigIntVector) root.getVector("id");
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 3; r++) {
                id.setSafe(r, r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 10 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 20 + r);
            }
        });
        write(t.resolve("2.qvr"), new Schema(List.of(i64("id"), struct("s", i64("b"), i64("a")))), 3, root -> {
            BigIntVector id = (BigIntVector) root.getVector("id");
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 3; r++) {
                id.setSafe(r, 100 + r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 110 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 120 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        List<Row> rows = df.select("id", "s.a", "s.b").orderBy("id").collectAsList();
        assertEquals(6, rows.size());
        for (Row r : rows) {
            long id = r.getLong(0);
            assertEquals(id + 10, r.getLong(1), "s.a of id " + id);
            assertEquals(id + 20, r.getLong(2), "s.b of id " + id);
        }
        List<Row> whole = df.select("id", "s").orderBy("id").collectAsList();
        for (Row r : whole) {
            long id = r.getLong(0);
            Row s = r.getStruct(1);
            assertEquals(id + 10, s.getLong(s.fieldIndex("a")), "s.a of id " + id);
            assertEquals(id + 20, s.getLong(s.fieldIndex("b")), "s.b of id " + id);
        }
    }

    /** s struct<a, b> in one file and s struct<a> in the other: s.b is null there. */
    @Test
    void mergedStructFieldMissingFromOneFile() throws Exception {
        Path t = dir.resolve("structMissing");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a"), i64("b")))), 2, root -> {
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 2; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 10 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 20 + r);
            }
        });
        write(t.resolve("2.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a")))), 2, root -> {
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 2; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, 100 + r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 110 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        List<Row> rows = df.select("id", "s.a", "s.b").orderBy("id").collectAsList();
        assertEquals(4, rows.size());
        for (Row r : rows) {
            long id = r.getLong(0);
            assertEquals(id + 10, r.getLong(1));
            if (id < 100) {
                assertEquals(id + 20, r.getLong(2));
            } else {
                assertTrue(r.isNullAt(2), "s.b of id " + id);
            }
        }
        assertEquals(2, df.filter("s.b IS NULL").count());
        sameAsSpark(df.select("id", "s"), "s.b IS NULL OR s.a > 110");
    }

    /** A user schema whose type differs from the file's: an error naming the column, not a crash or wrong values. */
    @Test
    void userSchemaOfAnotherType() throws Exception {
        Path t = dir.resolve("userType");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").schema("id INT").load(t.toString());
        Throwable e = assertThrows(Throwable.class, df::collectAsList);
        String s = trace(e);
        assertTrue(s.contains("id") && s.contains("1.qvr"), s);
    }

    /** A user schema with a column no file has: nulls, also under a filter on it. */
    @Test
    void userSchemaWithAColumnNoFileHas() throws Exception {
        Path t = dir.resolve("userMissing");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").schema("id BIGINT, extra BIGINT").load(t.toString());
        assertEquals(3, df.filter("extra IS NULL").count());
        assertEquals(0, df.filter("extra = 1").count());
    }

    // ---- filters ----

    /** Float and double columns with NaN, ±0.0, ±Infinity, nulls under comparisons with casts. */
    @Test
    void floatsAgainstSpark() throws Exception {
        Path t = dir.resolve("floats");
        float[] fs = {Float.NaN, -0.0f, 0.0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0.1f, 1.0f, -1.5f,
            Float.MAX_VALUE, Float.MIN_VALUE, 16777217f, 3.4e38f};
        Schema schema = new Schema(List.of(i64("id"),
                new Field("f", FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null),
                new Field("d", FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)), null)));
        int n = fs.length + 1;
        write(t.resolve("1.qvr"), schema, n, root -> {
            for (int r = 0; r < n; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                if (r == fs.length) {
                    ((Float4Vector) root.getVector("f")).setNull(r);
                    ((Float8Vector) root.getVector("d")).setNull(r);
                } else {
                    ((Float4Vector) root.getVector("f")).setSafe(r, fs[r]);
                    ((Float8Vector) root.getVector("d")).setSafe(r, fs[r]);
                }
            }
        });
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        String[] conds = {"f = 0.1", "f = 0.1f", "f > 0.1", "f < 0.1", "d = 0.1", "f = d", "f <=> d",
            "f = 'NaN'", "f > 'Infinity'", "d >= double('NaN')", "f = -0.0", "d = 0.0", "f < 0",
            "f IN (0.1, 1.0, double('NaN'))", "f IN (NULL, 1.0)", "NOT (f IN (NULL, 1.0))", "NOT (f > 0)",
            "f <=> NULL", "f <=> 1.0", "d IN (cast('NaN' as double))", "f = 16777216", "f = 16777217",
            "try_cast(f as int) = 0", "f > 1e39", "d > 3.4e38", "f = 3.4e38", "d = cast(3.4e38 as float)",
            "f != 'NaN'", "isnan(f)", "f BETWEEN -1 AND 1", "try_cast(f as decimal(10,2)) = 0.10"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
    }

    /** Strings: non-ASCII, long values past statistics truncation, prefixes. */
    @Test
    void stringsAgainstSpark() throws Exception {
        Path t = dir.resolve("strings");
        String longA = "a".repeat(100);
        String[] ss = {"", "a", longA, longA + "b", longA.substring(0, 64) + "\u00ff", "\u00e9t\u00e9", "\uD83D\uDE00",
            "zzz", "\uFFFF", "A", "a\u0000b", "aa"};
        Schema schema = new Schema(List.of(i64("id"), new Field("s", FieldType.nullable(new ArrowType.Utf8()), null)));
        int n = ss.length + 1;
        write(t.resolve("1.qvr"), schema, n, root -> {
            for (int r = 0; r < n; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                if (r == ss.length) {
                    ((VarCharVector) root.getVector("s")).setNull(r);
                } else {
                    ((VarCharVector) root.getVector("s")).setSafe(r,
                            ss[r].getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
            }
        });
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        String[] conds = {"s > '" + longA + "'", "s >= '" + longA + "'", "s < 'b'", "s > '\u00e9'",
            "s LIKE 'a%'", "s LIKE '" + longA + "%'", "s > '\uD83D'", "s = ''", "s < ''", "s IN ('a', NULL)",
            "NOT s IN ('a', NULL)", "s <=> NULL", "s > 'zz'", "s >= '\uFFFF'", "startswith(s, 'a')",
            "s > 'a'", "s = 'a\u0000b'"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
    }

    /** Column names with dots, quotes, spaces and another case. */
    @Test
    void oddColumnNames() throws Exception {
        Path t = dir.resolve("names");
        Schema schema = new Schema(List.of(i64("a.b"), i64("q\"t"), i64("sp ace"), i64("Upper"),
                struct("a", i64("b"))));
        write(t.resolve("1.qvr"), schema, 5, root -> {
            StructVector s = (StructVector) root.getVector("a");
            for (int r = 0; r < 5; r++) {
                ((BigIntVector) root.getVector("a.b")).setSafe(r, r);
                ((BigIntVector) root.getVector("q\"t")).setSafe(r, 10 + r);
                ((BigIntVector) root.getVector("sp ace")).setSafe(r, 20 + r);
                ((BigIntVector) root.getVector("Upper")).setSafe(r, 30 + r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 40 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        String[] conds = {"`a.b` = 2", "a.b = 42", "`q\"t` > 12", "`sp ace` < 21", "upper = 31", "UPPER >= 33",
            "`a.b` + 40 = a.b"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
        assertEquals(List.of("[2,42]"), sorted(df.filter("`a.b` = 2").select("`a.b`", "a.b")));
    }

    // ---- planning ----

    @Test
    void emptyDirectoriesAndFiles() throws Exception {
        Path empty = dir.resolve("emptyDir");
        Files.createDirectories(empty);
        Throwable e = assertThrows(Throwable.class, () -> spark.read().format("quiver").load(empty.toString())
                .collectAsList());
        assertTrue(trace(e).contains("emptyDir"), trace(e));

        Path zero = dir.resolve("zeroRows");
        write(zero.resolve("0.qvr"), new Schema(List.of(i64("id"))), 0, root -> { });
        write(zero.resolve("1.qvr"), new Schema(List.of(i64("id"))), 2, root -> {
            ((BigIntVector) root.getVector("id")).setSafe(0, 7);
            ((BigIntVector) root.getVector("id")).setSafe(1, 8);
        });
        Dataset<Row> df = spark.read().format("quiver").load(zero.toString());
        assertEquals(2, df.count());
        assertEquals(1, df.filter("id > 7").count());

        Path other = dir.resolve("notQuiver");
        write(other.resolve("1.qvr"), new Schema(List.of(i64("id"))), 1, root ->
                ((BigIntVector) root.getVector("id")).setSafe(0, 1));
        Files.writeString(other.resolve("README.txt"), "not a quiver file");
        Throwable bad = assertThrows(Throwable.class, () -> spark.read().format("quiver").load(other.toString())
                .collectAsList());
        assertTrue(trace(bad).contains("README.txt"), trace(bad));
    }

    @Test
    void extremeOptions() throws Exception {
        Path t = dir.resolve("opts");
        Files.createDirectories(t);
        ReadTestFiles.writeLongs(t.resolve("1.qvr"), 2, 5000, 1000);
        for (String[] o : new String[][] {{"threads", "0"}, {"threads", "1024"}, {"batchRows", "1"},
                {"prefetch", "1"}, {"prefetch", "1024"}, {"batchRows", "2147483647"}}) {
            Dataset<Row> df = spark.read().format("quiver").option(o[0], o[1]).load(t.toString());
            assertEquals(5000, df.count(), o[0] + "=" + o[1]);
            assertEquals(1000, df.filter("c0 >= 4000").collectAsList().size(), o[0] + "=" + o[1]);
        }
        for (String[] o : new String[][] {{"threads", "-2"}, {"threads", "1025"}, {"prefetch", "0"},
                {"prefetch", "-1"}, {"batchRows", "0"}, {"threads", "abc"}}) {
            Throwable e = assertThrows(Throwable.class, () -> spark.read().format("quiver").option(o[0], o[1])
                    .load(t.toString()).collectAsList());
            assertTrue(trace(e).contains(o[0]), trace(e));
        }
    }

    /** One file spells the column "ID", the other "id": merged ignoring case, read and filtered in both. */
    @Test
    void columnSpelledDifferentlyInTwoFiles() throws Exception {
        Path t = dir.resolve("caseMerge");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("ID"), i64("v"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("ID")).setSafe(r, r);
                ((BigIntVector) root.getVector("v")).setSafe(r, r);
            }
        });
        write(t.resolve("2.qvr"), new Schema(List.of(i64("id"), i64("v"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, 10 + r);
                ((BigIntVector) root.getVector("v")).setSafe(r, 10 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        assertEquals(6, df.filter("id = v").count());
        assertEquals(List.of("[1,1]", "[11,11]"), sorted(df.filter("id IN (1, 11)").select("id", "v")));
        Dataset<Row> user = spark.read().format("quiver").schema("Id BIGINT, V BIGINT").load(t.toString());
        assertEquals(List.of("[2,2]"), sorted(user.filter("id = 2")));
    }

    /** LIMIT above pushed filters, count(*) with a pushed filter on an unprojected column. */
    @Test
    void limitAndCountWithFilters() throws Exception {
        Path t = dir.resolve("limit");
        Files.createDirectories(t);
        ReadTestFiles.writeLongs(t.resolve("1.qvr"), 2, 5000, 1000);
        ReadTestFiles.writeLongs(t.resolve("2.qvr"), 2, 5000, 1000);
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        List<Row> rows = df.filter("c0 >= 4990").limit(7).collectAsList();
        assertEquals(7, rows.size());
        for (Row r : rows) {
            assertTrue(r.getLong(0) >= 4990, r.toString());
        }
        assertEquals(20, df.filter("c0 >= 4990").count());
        assertEquals(20, df.filter("c1 >= 9980").selectExpr("count(*)").first().getLong(0));
        assertEquals(0, df.filter("c0 > 10000").limit(3).count());
    }

    // ---- more filters ----

    /** Timestamps with and without zone, dates, near the epoch and far from it, in a non-UTC session. */
    @Test
    void timestampsAndDatesAgainstSpark() throws Exception {
        Path t = dir.resolve("times");
        long[] us = {0L, -1L, 1L, -62135596800000000L, 253402300799999999L, 86_400_000_000L, -86_400_000_001L,
            1_700_000_000_123_456L};
        int[] days = {0, -1, 1, -719162, 2932896, 19000, -100000, 365};
        Schema schema = new Schema(List.of(i64("id"),
                new Field("ts", FieldType.nullable(new ArrowType.Timestamp(
                        org.apache.arrow.vector.types.TimeUnit.MICROSECOND, "UTC")), null),
                new Field("ntz", FieldType.nullable(new ArrowType.Timestamp(
                        org.apache.arrow.vector.types.TimeUnit.MICROSECOND, null)), null),
                new Field("d", FieldType.nullable(new ArrowType.Date(org.apache.arrow.vector.types.DateUnit.DAY)),
                        null)));
        int n = us.length + 1;
        write(t.resolve("1.qvr"), schema, n, root -> {
            for (int r = 0; r < n; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                var ts = (org.apache.arrow.vector.TimeStampMicroTZVector) root.getVector("ts");
                var ntz = (org.apache.arrow.vector.TimeStampMicroVector) root.getVector("ntz");
                var d = (org.apache.arrow.vector.DateDayVector) root.getVector("d");
                if (r == us.length) {
                    ts.setNull(r);
                    ntz.setNull(r);
                    d.setNull(r);
                } else {
                    ts.setSafe(r, us[r]);
                    ntz.setSafe(r, us[r]);
                    d.setSafe(r, days[r]);
                }
            }
        });
        String zone = spark.conf().get("spark.sql.session.timeZone");
        spark.conf().set("spark.sql.session.timeZone", "America/Los_Angeles");
        try {
            Dataset<Row> df = spark.read().format("quiver").load(t.toString());
            String[] conds = {"ts > timestamp'1970-01-01 00:00:00'", "ts >= timestamp'1969-12-31 16:00:00'",
                "ntz > timestamp_ntz'1970-01-01 00:00:00'", "ntz = timestamp_ntz'1970-01-02 00:00:00'",
                "ts = timestamp'1969-12-31 16:00:00'", "ntz < timestamp_ntz'0001-01-01 00:00:01'",
                "ntz > timestamp_ntz'9999-12-31 23:59:59'", "d = date'1970-01-01'", "d < date'0001-01-02'",
                "d > date'9999-12-30'", "ts > ntz", "cast(ntz as timestamp) > timestamp'1970-01-01 00:00:00'",
                "cast(d as timestamp) >= ts", "d IN (date'1970-01-02', NULL)", "NOT (d IN (date'1970-01-02', NULL))",
                "ts <=> NULL", "ts IS NOT NULL AND d > date'1970-01-01'", "ntz <=> timestamp_ntz'1969-12-31 23:59:59.999999'",
                "ts < timestamp'1970-01-01 00:00:00Z'", "ts = timestamp'2023-11-14 22:13:20.123456Z'"};
            for (String c : conds) {
                sameAsSpark(df, c);
            }
        } finally {
            spark.conf().set("spark.sql.session.timeZone", zone);
        }
    }

    /** Decimals against literals of other scales and precisions. */
    @Test
    void decimalsAgainstSpark() throws Exception {
        Path t = dir.resolve("decimals");
        long[] unscaled = {0, 150, 151, -150, 99999999, -99999999, 1, 100};
        Schema schema = new Schema(List.of(i64("id"),
                new Field("m", FieldType.nullable(new ArrowType.Decimal(10, 2, 128)), null)));
        int n = unscaled.length + 1;
        write(t.resolve("1.qvr"), schema, n, root -> {
            var m = (org.apache.arrow.vector.DecimalVector) root.getVector("m");
            for (int r = 0; r < n; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                if (r == unscaled.length) {
                    m.setNull(r);
                } else {
                    m.setSafe(r, java.math.BigDecimal.valueOf(unscaled[r], 2));
                }
            }
        });
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        String[] conds = {"m = 1.5", "m = 1.50000", "m > 1.505", "m >= 1.505", "m < -1.4999999999", "m = 1",
            "m IN (1.5, NULL)", "m IN (1.51, 0.01)", "m > 999999.99", "m >= 999999.99", "m < -999999.99",
            "cast(m as decimal(20,5)) = 1.5", "m = 1e0", "m > 0.015", "cast(m as double) = 1.5", "m <=> 1.00",
            "NOT (m <=> 1.00)", "m = 12345678901234567890.5"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
    }

    /** Partition columns mixed with data columns in filters, paths with spaces, unicode and '='. */
    @Test
    void partitionsMixedWithDataAndOddPaths() throws Exception {
        Path t = dir.resolve("odd path é");
        for (int p = 1; p <= 3; p++) {
            Path f = t.resolve("p=" + p).resolve("q=a b").resolve("file " + p + " é=x.qvr");
            Files.createDirectories(f.getParent());
            ReadTestFiles.writeLongs(f, 2, 10, 4);
        }
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        assertEquals(30, df.count());
        String[] conds = {"p = 1 OR c0 > 5", "p + c0 = 3", "p = c0", "p = 2 AND c0 < 3", "q = 'a b' AND c1 = 4",
            "NOT (p = 1 AND c0 = 1)", "p IN (1, NULL) OR c0 IN (9, NULL)", "p > 1 AND c0 > 8"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
        Throwable e = assertThrows(Throwable.class,
                () -> spark.read().format("quiver").load(t.resolve("nothing*").toString()).collectAsList());
        assertTrue(trace(e).contains("PATH_NOT_FOUND"), trace(e));
    }

    // ---- executor ----

    /** A file truncated, or replaced by another of the same size, after planning: an error naming it, no crash. */
    @Test
    void fileChangedAfterPlanning() throws Exception {
        Path t = dir.resolve("changed");
        Files.createDirectories(t);
        Path f = t.resolve("1.qvr");
        ReadTestFiles.writeLongs(f, 2, 5000, 1000);
        byte[] original = Files.readAllBytes(f);

        Dataset<Row> planned = spark.read().format("quiver").load(t.toString()).filter("c0 >= 100");
        planned.queryExecution().executedPlan();
        Files.write(f, java.util.Arrays.copyOf(original, original.length / 2));
        Throwable e = assertThrows(Throwable.class, planned::collectAsList);
        assertTrue(trace(e).contains("FAILED_READ_FILE") && trace(e).contains("1.qvr"), trace(e));

        Files.write(f, original);
        Dataset<Row> again = spark.read().format("quiver").load(t.toString()).filter("c0 >= 100");
        again.queryExecution().executedPlan();
        // Same size, other bytes: a row group's data changed under the same footer.
        byte[] flipped = original.clone();
        for (int i = 64; i < flipped.length / 3; i += 7) {
            flipped[i] ^= 0x5a;
        }
        Files.write(f, flipped);
        Throwable e2 = assertThrows(Throwable.class, again::collectAsList);
        assertTrue(trace(e2).contains("FAILED_READ_FILE") && trace(e2).contains("1.qvr"), trace(e2));
    }

    /** Two queries on one DataFrame at once, many tiny files. */
    @Test
    void concurrentQueriesOverManyTinyFiles() throws Exception {
        Path t = dir.resolve("tiny");
        Files.createDirectories(t);
        for (int i = 0; i < 300; i++) {
            ReadTestFiles.writeLongs(t.resolve(String.format("f%03d.qvr", i)), 2, 3, 1000);
        }
        Dataset<Row> df = spark.read().format("quiver").option("threads", "2").load(t.toString()).filter("c0 >= 1");
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            var a = pool.submit(() -> df.collectAsList().size());
            var b = pool.submit(() -> df.collectAsList().size());
            assertEquals(600, a.get(120, TimeUnit.SECONDS));
            assertEquals(600, b.get(120, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
        assertEquals(900, spark.read().format("quiver").load(t.toString()).count());
    }

    /** A user schema naming a struct's fields in another order, or fewer: read by name. */
    @Test
    void userSchemaStructByName() throws Exception {
        Path t = dir.resolve("userStruct");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a"), i64("b")))), 3, root -> {
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 10 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 20 + r);
            }
        });
        Dataset<Row> narrow = spark.read().format("quiver").schema("id BIGINT, s STRUCT<b: BIGINT>").load(t.toString());
        assertEquals(List.of("[0,[20]]", "[1,[21]]", "[2,[22]]"), sorted(narrow));
        Dataset<Row> swapped = spark.read().format("quiver").schema("id BIGINT, s STRUCT<b: BIGINT, a: BIGINT>")
                .load(t.toString());
        assertEquals(List.of("[0,[20,10]]", "[1,[21,11]]", "[2,[22,12]]"), sorted(swapped));
        assertEquals(List.of("[21]"), sorted(swapped.filter("s.a = 11").select("s.b")));
    }

    /** Arrays of structs whose fields two files order differently, merged: elements read by name. */
    @Test
    void mergedArrayOfStructsInAnotherOrder() throws Exception {
        Path t = dir.resolve("arrayStruct");
        for (int k = 0; k < 2; k++) {
            final int file = k;
            Field a = i64("a");
            Field b = i64("b");
            Field elem = struct("item", file == 0 ? a : b, file == 0 ? b : a);
            Field list = new Field("l", FieldType.nullable(ArrowType.List.INSTANCE), List.of(elem));
            write(t.resolve(file + ".qvr"), new Schema(List.of(i64("id"), list)), 2, root -> {
                var lv = (org.apache.arrow.vector.complex.ListVector) root.getVector("l");
                StructVector sv = (StructVector) lv.getDataVector();
                int e = 0;
                for (int r = 0; r < 2; r++) {
                    long id = 100L * file + r;
                    ((BigIntVector) root.getVector("id")).setSafe(r, id);
                    lv.startNewValue(r);
                    for (int j = 0; j < 2; j++, e++) {
                        sv.setIndexDefined(e);
                        ((BigIntVector) sv.getChild("a")).setSafe(e, id * 10 + j);
                        ((BigIntVector) sv.getChild("b")).setSafe(e, -(id * 10 + j));
                    }
                    lv.endValue(r, 2);
                }
                sv.setValueCount(e);
                ((BigIntVector) sv.getChild("a")).setValueCount(e);
                ((BigIntVector) sv.getChild("b")).setValueCount(e);
            });
        }
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        List<Row> rows = df.selectExpr("id", "l[1].a", "l[1].b").collectAsList();
        assertEquals(4, rows.size());
        for (Row r : rows) {
            long id = r.getLong(0);
            assertEquals(id * 10 + 1, r.getLong(1), "l[1].a of id " + id);
            assertEquals(-(id * 10 + 1), r.getLong(2), "l[1].b of id " + id);
        }
    }

    /** A file of no columns, a struct field named as a top-level column, a partition column also in the file. */
    @Test
    void shadowedNamesAndNoColumns() throws Exception {
        Path none = dir.resolve("noColumns");
        Throwable e = null;
        try {
            write(none.resolve("1.qvr"), new Schema(List.of()), 4, root -> { });
        } catch (Throwable refused) {
            e = refused; // the writer may refuse a schema of no columns; then there is nothing to read
            System.out.println("QuiverReadAttackTest: a file of no columns cannot be written: " + refused);
        }
        if (e == null) {
            Dataset<Row> df = spark.read().format("quiver").load(none.toString());
            assertEquals(0, df.schema().size());
            assertEquals(4, df.count());
        }

        Path t = dir.resolve("shadow");
        for (int p = 0; p < 2; p++) {
            final int part = p;
            write(t.resolve("id=" + (p + 5)).resolve("1.qvr"),
                    new Schema(List.of(i64("id"), i64("v"), struct("s", i64("id")))), 3, root -> {
                        StructVector s = (StructVector) root.getVector("s");
                        for (int r = 0; r < 3; r++) {
                            ((BigIntVector) root.getVector("id")).setSafe(r, r);
                            ((BigIntVector) root.getVector("v")).setSafe(r, 10 * part + r);
                            s.setIndexDefined(r);
                            ((BigIntVector) s.getChild("id")).setSafe(r, 100 + r);
                        }
                    });
        }
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        String[] conds = {"id = 5", "s.id = 101", "s.id = id + 96", "id = 6 AND v = 11", "v = 1 OR s.id = 102"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
        assertEquals(List.of("[5,101]", "[6,101]"), sorted(df.filter("s.id = 101").select("id", "s.id")));
    }
}
