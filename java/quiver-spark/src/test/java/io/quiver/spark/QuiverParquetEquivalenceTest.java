package io.quiver.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.read.ReadTestFiles;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The same rows read through format("quiver") and through Spark's Parquet
 * source give the same answers: whole rows of every type, projections of
 * nested fields, filters on the values filters get wrong (null, NaN, ±0.0,
 * ±inf, empty and long strings, integer and decimal extremes), aggregates,
 * joins, and a Hive-partitioned dataset. Rows are compared as sorted
 * canonical text (SparkQuiverData.canonicalRows), so -0.0 and 0.0, NaN, null
 * and empty stay apart. Each query's text names the table {t}: q (Quiver) or
 * p (Parquet).
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class QuiverParquetEquivalenceTest {
    private static final long ROWS = 3000;
    private static SparkSession spark;
    @TempDir
    static Path dir;

    @BeforeAll
    static void write() throws Exception {
        spark = SparkTestSession.start("quiver-vs-parquet", "64m");
        // Not UTC, so zone handling shows (timestamps before 1970 and across DST too).
        spark.conf().set("spark.sql.session.timeZone", "America/Los_Angeles");
        Dataset<Row> df = SparkQuiverData.everyType(spark, ROWS).cache();
        SparkQuiverData.writeParquet(df, dir.resolve("parquet"), 3);
        ReadTestFiles.writeQuiver(df, dir.resolve("quiver"), 3, 500);
        df.unpersist(true);
        spark.read().parquet(dir.resolve("parquet").toString()).createOrReplaceTempView("p");
        spark.read().format("quiver").load(dir.resolve("quiver").toString()).createOrReplaceTempView("q");

        // Partitioned: p=<int>/k=<string>/ folders, two files each on the Quiver side.
        Dataset<Row> parts = spark.sql("SELECT id, i32, f64, str, st, m, CAST(id % 3 AS INT) AS part,"
                + " IF(id % 2 = 0, 'a', 'b') AS k FROM p WHERE id < 1200");
        parts.write().mode("overwrite").partitionBy("part", "k").parquet(dir.resolve("parquet-parts").toString());
        for (int part = 0; part < 3; part++) {
            for (String k : List.of("a", "b")) {
                Dataset<Row> slice = parts.where("part = " + part + " AND k = '" + k + "'").drop("part", "k");
                ReadTestFiles.writeQuiver(slice, dir.resolve("quiver-parts/part=" + part + "/k=" + k), 2, 100);
            }
        }
        spark.read().parquet(dir.resolve("parquet-parts").toString()).createOrReplaceTempView("pp");
        spark.read().format("quiver").load(dir.resolve("quiver-parts").toString()).createOrReplaceTempView("qp");
    }

    @AfterAll
    static void stop() throws Exception {
        if (spark != null) {
            spark.stop();
        }
    }

    /** Runs `sql` over Quiver ({t} = q, {pt} = qp) and Parquet ({t} = p, {pt} = pp) and compares the rows. */
    private static int assertSameRows(String sql) {
        List<String> parquet = SparkQuiverData.canonicalRows(spark.sql(sql.replace("{t}", "p").replace("{pt}", "pp")));
        List<String> quiver = SparkQuiverData.canonicalRows(spark.sql(sql.replace("{t}", "q").replace("{pt}", "qp")));
        return SparkQuiverData.assertSameRows(sql + " (expected: Parquet, got: Quiver)", parquet, quiver);
    }

    @Test
    void schemaIsParquets() {
        // Parquet reads every column as nullable; compare names and types.
        assertEquals(spark.table("p").schema().catalogString(), spark.table("q").schema().catalogString());
        assertEquals(spark.table("pp").schema().catalogString(), spark.table("qp").schema().catalogString());
    }

    @Test
    void everyRowOfEveryType() {
        assertEquals(ROWS, assertSameRows("SELECT * FROM {t}"));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT count(*) FROM {t}",
        "SELECT id, str FROM {t}",
        "SELECT f32, f64, dec38 FROM {t}",
        "SELECT st.c.x, st.b, id FROM {t}",
        "SELECT st.c.y, arr_st.v FROM {t}",
        "SELECT m, m_arr, arr FROM {t}",
        "SELECT st FROM {t}",
        "SELECT ts, ts_ntz, day, bin FROM {t}",
        "SELECT xxhash64(id, str, f64, dec38, st, arr) FROM {t}",
    })
    void projections(String sql) {
        assertSameRows(sql);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "f64 > 1.0", "f64 < 0", "f64 = 0.0", "f64 = -0.0", "f64 <= 0.0 AND f64 >= 0.0",
        "f64 = double('NaN')", "f64 > double('Infinity')", "f64 >= double('Infinity')", "f64 < double('-Infinity')",
        "f64 = double('-Infinity')", "f64 <> 1.5", "f64 != f64", "f64 IN (0.0, double('NaN'), 1.5)",
        "f64 NOT IN (0.0, double('NaN'))", "isnan(f64)", "f64 IS NULL", "f64 IS NOT NULL", "f64 <=> NULL",
        "f32 > 10", "f32 = float('NaN')", "f32 < float('-Infinity')", "f32 >= 0.0",
        "NOT (f64 > 0) AND id < 2000", "coalesce(f64, 0) > 1",
        "str = ''", "str IS NULL", "str <> ''", "str LIKE 'long%'", "str > 's3'", "str < ''", "startswith(str, 'ünï')",
        "str IN ('', 's1', 's2')", "str = concat(repeat('long', 1500), '12')", "length(str) > 100",
        "i64 = 9223372036854775807", "i64 = -9223372036854775808", "i64 < -1000", "i8 = -128", "i8 > 100",
        "i16 BETWEEN -100 AND 100", "i32 = 2147483647", "i32 IS NULL OR i32 < 0",
        "dec38 > 0", "dec38 = CAST('9999999999999999999999999999.9999999999' AS DECIMAL(38,10))",
        "dec38 < CAST('-1000000000000' AS DECIMAL(38,10))", "dec9 BETWEEN -1 AND 1", "dec18 >= 0.0001",
        "day < DATE'1960-01-01'", "day = DATE'1970-01-01'", "ts >= TIMESTAMP'2000-01-01 00:00:00'",
        "ts < TIMESTAMP'1900-01-01 00:00:00 UTC'", "ts_ntz < TIMESTAMP_NTZ'1990-01-01 00:00:00'",
        "bool", "NOT bool", "bool IS NULL", "bin = X'6231'", "bin > X'62'",
        "st.a > 100", "st IS NULL", "st.c IS NULL", "st.c.x = 2.0", "st.b = 'n1' OR st.a IS NULL",
        "size(arr) = 0", "array_contains(arr, 3)", "m['z'] IS NULL", "m['k1'] > 10",
        "id % 3 = 0 OR f64 IS NULL", "i32 > 0 AND (str IS NULL OR str = '')", "id IN (0, 1, 2, 2999, 5000)",
    })
    void filters(String where) {
        assertSameRows("SELECT * FROM {t} WHERE " + where);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT bool, count(*), count(str), sum(i32), min(i64), max(i64), min(f64), max(f64), sum(f32) IS NULL,"
            + " max(dec38), min(dec38), sum(dec18), avg(dec9), min(ts), max(ts_ntz), min(str), max(day), max(bin)"
            + " FROM {t} GROUP BY bool",
        "SELECT i8 % 4 AS g, count(DISTINCT str), count(DISTINCT f64), collect_set(st.b) IS NOT NULL FROM {t} GROUP BY g",
        "SELECT f64, count(*) FROM {t} GROUP BY f64",
        "SELECT f32, count(*) FROM {t} WHERE f32 IS NOT NULL GROUP BY f32 HAVING count(*) > 2",
        "SELECT sum(size(arr)), sum(size(m)), count(arr_st), max(st.c.x) FROM {t}",
        "SELECT str, count(*) FROM {t} GROUP BY str ORDER BY count(*) DESC, str LIMIT 10",
    })
    void aggregates(String sql) {
        assertSameRows(sql);
    }

    @Test
    void joins() {
        assertSameRows("SELECT a.id, b.id, a.str FROM {t} a JOIN {t} b ON a.i8 = b.i8 AND a.id < b.id");
        assertSameRows("SELECT a.id, b.f64 FROM {t} a LEFT JOIN {t} b ON a.f64 = b.f64 AND a.id <> b.id WHERE a.id < 400");
        assertSameRows("SELECT a.id FROM {t} a LEFT ANTI JOIN (SELECT * FROM {t} WHERE str IS NULL) b ON a.id = b.id");
        // Quiver against Parquet directly: every row has its twin (<=> is true for NaN = NaN and null <=> null).
        long twins = spark.sql("SELECT count(*) FROM q JOIN p ON q.id = p.id AND q.f64 <=> p.f64 AND q.f32 <=> p.f32"
                + " AND q.str <=> p.str AND q.dec38 <=> p.dec38 AND q.ts <=> p.ts AND q.ts_ntz <=> p.ts_ntz"
                + " AND q.st <=> p.st AND q.arr <=> p.arr AND q.bin <=> p.bin AND q.day <=> p.day")
                .first().getLong(0);
        assertEquals(ROWS, twins);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "SELECT * FROM {pt}",
        "SELECT part, k, count(*), sum(i32), count(str) FROM {pt} GROUP BY part, k",
        "SELECT id, k FROM {pt} WHERE part = 1",
        "SELECT * FROM {pt} WHERE k = 'b' AND f64 > 0",
        "SELECT part, st.c.x FROM {pt} WHERE part > 0 OR str IS NULL",
        "SELECT count(*) FROM {pt} WHERE part = 2 AND k = 'a'",
    })
    void partitioned(String sql) {
        assertTrue(assertSameRows(sql) > 0, sql + " returned no rows: a poor test");
    }
}
