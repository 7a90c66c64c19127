package io.quiver.spark;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import scala.collection.Iterator;

/**
 * What the end-to-end tests share: one DataFrame of every type, written as
 * Parquet by Spark here and as Quiver from the same rows by
 * {@link io.quiver.spark.read.ReadTestFiles#writeQuiver}, and a digest of a
 * query's rows that does not depend on row order, so a query over
 * format("quiver") and the same query over the Parquet copy can be compared
 * row for row. The session is {@link io.quiver.spark.read.SparkTestSession}'s.
 */
public final class SparkQuiverData {
    private SparkQuiverData() {}

    /**
     * {@code rows} rows of every Spark type Arrow and Quiver carry, with nulls
     * at every level and the values filters trip on: NaN, -0.0 and 0.0, ±inf,
     * empty and long strings, the integer extremes, decimal(38,10) near its
     * limit, timestamps with and without zone before 1970 and far after,
     * nested structs, arrays and maps. {@code id} is unique (0 .. rows-1).
     */
    public static Dataset<Row> everyType(SparkSession spark, long rows) {
        return spark.sql("""
                SELECT
                  id,
                  CASE WHEN id % 11 = 0 THEN NULL ELSE id % 2 = 0 END AS bool,
                  CAST(CASE WHEN id % 13 = 0 THEN NULL ELSE id % 256 - 128 END AS TINYINT) AS i8,
                  CAST(CASE WHEN id % 13 = 1 THEN NULL ELSE (id * 7) % 65536 - 32768 END AS SMALLINT) AS i16,
                  CAST(CASE id % 19 WHEN 0 THEN NULL WHEN 1 THEN -2147483648 WHEN 2 THEN 2147483647
                       ELSE (id * 104729) % 4000000 - 2000000 END AS INT) AS i32,
                  CASE id % 23 WHEN 0 THEN NULL WHEN 1 THEN -9223372036854775808L WHEN 2 THEN 9223372036854775807L
                       ELSE id * 1000003 - 500000000 END AS i64,
                  CAST(CASE id % 17 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN '-0.0' WHEN 3 THEN '0.0'
                       WHEN 4 THEN 'Infinity' WHEN 5 THEN '-Infinity' ELSE CAST((id % 1000 - 500) / 8.0 AS STRING) END
                       AS FLOAT) AS f32,
                  CAST(CASE id % 16 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN '-0.0' WHEN 3 THEN '0.0'
                       WHEN 4 THEN 'Infinity' WHEN 5 THEN '-Infinity' ELSE CAST((id % 977 - 400) / 3.0 AS STRING) END
                       AS DOUBLE) AS f64,
                  CAST(CASE WHEN id % 7 = 0 THEN NULL ELSE (id % 2000 - 1000) / 100.0 END AS DECIMAL(9,2)) AS dec9,
                  CAST(CASE WHEN id % 7 = 1 THEN NULL ELSE (id * 31 - 99999) / 10000.0 END AS DECIMAL(18,4)) AS dec18,
                  CASE id % 9 WHEN 0 THEN NULL
                       WHEN 1 THEN CAST('9999999999999999999999999999.9999999999' AS DECIMAL(38,10))
                       WHEN 2 THEN CAST('-9999999999999999999999999999.9999999999' AS DECIMAL(38,10))
                       ELSE CAST(concat(IF(id % 2 = 0, '-', ''), CAST(id * 1234567 AS STRING), lpad(CAST(id AS STRING), 12, '7'),
                                 '.', lpad(CAST(id * 7 % 10000000000 AS STRING), 10, '0')) AS DECIMAL(38,10)) END AS dec38,
                  CASE id % 10 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN concat(repeat('long', 1500), id)
                       WHEN 3 THEN concat('ünïcødé ✓ ', id) ELSE concat('s', id % 37) END AS str,
                  CASE WHEN id % 8 = 0 THEN NULL ELSE CAST(concat('b', id % 5) AS BINARY) END AS bin,
                  CASE WHEN id % 12 = 0 THEN NULL ELSE date_add(DATE'1970-01-01', CAST((id * 37) % 80000 - 40000 AS INT))
                       END AS day,
                  CASE WHEN id % 14 = 0 THEN NULL ELSE timestamp_micros(id * 86400123457 - 4000000000000000) END AS ts,
                  CASE WHEN id % 15 = 0 THEN NULL
                       ELSE CAST(timestamp_micros(id * 3600000001 - 1000000000000000) AS TIMESTAMP_NTZ) END AS ts_ntz,
                  CASE WHEN id % 10 = 5 THEN NULL
                       ELSE named_struct(
                         'a', CASE WHEN id % 3 = 0 THEN NULL ELSE id * 2 END,
                         'b', CASE WHEN id % 4 = 0 THEN NULL ELSE concat('n', id % 6) END,
                         'c', CASE WHEN id % 5 = 0 THEN NULL
                                   ELSE named_struct('x', CAST(id % 9 AS DOUBLE) / 2, 'y',
                                        CASE WHEN id % 6 = 0 THEN NULL ELSE array(id, NULL, -id) END) END)
                       END AS st,
                  CASE id % 8 WHEN 0 THEN NULL WHEN 1 THEN array()
                       ELSE array(CAST(id % 100 AS INT), NULL, CAST(id % 7 AS INT)) END AS arr,
                  CASE WHEN id % 9 = 3 THEN NULL
                       ELSE array(named_struct('k', concat('k', id % 3), 'v', CASE WHEN id % 2 = 0 THEN NULL
                                                                              ELSE CAST(id / 4.0 AS DECIMAL(21,2)) END),
                                  CAST(NULL AS STRUCT<k: STRING, v: DECIMAL(21,2)>)) END AS arr_st,
                  CASE id % 6 WHEN 0 THEN NULL WHEN 1 THEN map()
                       ELSE map(concat('k', id % 5), id, 'z', CAST(NULL AS BIGINT)) END AS m,
                  CASE WHEN id % 7 = 2 THEN NULL
                       ELSE map(CAST(id % 4 AS INT), array(concat('v', id), NULL)) END AS m_arr
                FROM range(0, $ROWS)
                """.replace("$ROWS", Long.toString(rows)));
    }

    /** Writes `df` as Parquet into `dir` (overwriting) with `files` files. */
    public static void writeParquet(Dataset<Row> df, Path dir, int files) {
        df.repartition(files).write().mode("overwrite").parquet(dir.toString());
    }

    /** Rows of `df`, each in a canonical text form, sorted: equal lists mean equal multisets of rows. */
    public static List<String> canonicalRows(Dataset<Row> df) {
        List<String> out = new ArrayList<>();
        for (Row r : df.collectAsList()) {
            out.add(canonical(r));
        }
        out.sort(null);
        return out;
    }

    /** SHA-256 over canonicalRows, for messages. */
    public static String digest(List<String> rows) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (String r : rows) {
                md.update(r.getBytes(StandardCharsets.UTF_8));
                md.update((byte) '\n');
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Fails naming the first difference unless {@code expected} and
     * {@code actual} (canonicalRows) are equal; returns the row count.
     */
    public static int assertSameRows(String what, List<String> expected, List<String> actual) {
        if (!expected.equals(actual)) {
            int i = 0;
            while (i < Math.min(expected.size(), actual.size()) && expected.get(i).equals(actual.get(i))) {
                i++;
            }
            throw new AssertionError(what + ": expected " + expected.size() + " rows (" + digest(expected)
                    + "), got " + actual.size() + " rows (" + digest(actual) + "); first difference at sorted row "
                    + i + ":\n  expected " + (i < expected.size() ? abbreviate(expected.get(i)) : "(none)")
                    + "\n  got      " + (i < actual.size() ? abbreviate(actual.get(i)) : "(none)"));
        }
        return expected.size();
    }

    private static String abbreviate(String s) {
        return s.length() > 2000 ? s.substring(0, 2000) + "..." : s;
    }

    /**
     * One SHA-256 per row of {@code df} (column {@code h}), computed by
     * Spark, for datasets too large to collect: the row as JSON with its
     * columns in {@code columns}' order, timestamps to the microsecond, -0.0
     * and NaN written as such, binary as base64, map entries in their order
     * (JSON leaves a null field out, which the schema makes unambiguous).
     */
    public static Dataset<Row> rowDigests(Dataset<Row> df, String... columns) {
        return df.selectExpr(digestExpr(columns) + " AS h");
    }

    private static String digestExpr(String... columns) {
        StringBuilder cols = new StringBuilder();
        for (String c : columns) {
            cols.append(cols.length() == 0 ? "" : ", ").append('`').append(c).append('`');
        }
        return "sha2(to_json(struct(" + cols + "), map("
                + "'timestampFormat', 'yyyy-MM-dd''T''HH:mm:ss.SSSSSSXXX',"
                + "'timestampNTZFormat', 'yyyy-MM-dd''T''HH:mm:ss.SSSSSS')), 256)";
    }

    /**
     * Fails unless {@code expected} and {@code actual} hold the same multiset
     * of rows (rowDigests over {@code expected}'s columns, compared in Spark
     * by a full outer join of the digests' counts); the message shows up to
     * three rows of each side the other lacks. Returns the row count.
     */
    public static long assertSameRowDigests(String what, Dataset<Row> expected, Dataset<Row> actual) {
        String[] columns = expected.columns();
        Dataset<Row> e = rowDigests(expected, columns).groupBy("h").count().withColumnRenamed("count", "ne");
        Dataset<Row> a = rowDigests(actual, columns).groupBy("h").count().withColumnRenamed("count", "na");
        Dataset<Row> diff = e.join(a, e.col("h").equalTo(a.col("h")), "full_outer")
                .where("ne IS NULL OR na IS NULL OR ne <> na").select(e.col("h").as("he"), a.col("h").as("ha"));
        long differing = diff.count();
        long rows = expected.count();
        if (differing != 0) {
            StringBuilder sb = new StringBuilder(what + ": " + differing + " row digests differ (expected " + rows
                    + " rows, got " + actual.count() + ")");
            List<Row> some = diff.limit(6).collectAsList();
            for (Row r : some) {
                String h = r.isNullAt(0) ? r.getString(1) : r.getString(0);
                Dataset<Row> side = r.isNullAt(0) ? actual : expected;
                Dataset<Row> withH = side.selectExpr("*", digestExpr(columns) + " AS `__h`");
                sb.append("\n  ").append(r.isNullAt(0) ? "only got:      " : "only expected: ");
                sb.append(abbreviate(String.valueOf(withH.where(withH.col("__h").equalTo(h))
                        .drop("__h").limit(1).collectAsList())));
            }
            throw new AssertionError(sb.toString());
        }
        return rows;
    }

    /**
     * A value as text that tells apart everything Spark does: -0.0 from 0.0,
     * NaN, a null from an empty string or array, the scale of a decimal,
     * bytes as hex, map entries in their order.
     */
    static String canonical(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Row r) {
            StringBuilder sb = new StringBuilder("{");
            for (int i = 0; i < r.length(); i++) {
                sb.append(i == 0 ? "" : ",").append(canonical(r.get(i)));
            }
            return sb.append('}').toString();
        }
        if (v instanceof byte[] b) {
            return "0x" + HexFormat.of().formatHex(b);
        }
        if (v instanceof String s) {
            return '"' + s + '"';
        }
        if (v instanceof BigDecimal d) {
            return d.toPlainString() + "m";
        }
        if (v instanceof Double d) {
            return Double.isNaN(d) ? "NaN" : d + "d";
        }
        if (v instanceof Float f) {
            return Float.isNaN(f) ? "NaNf" : f + "f";
        }
        if (v instanceof scala.collection.Map<?, ?> m) {
            StringBuilder sb = new StringBuilder("map(");
            Iterator<?> it = m.iterator();
            boolean first = true;
            while (it.hasNext()) {
                scala.Tuple2<?, ?> e = (scala.Tuple2<?, ?>) it.next();
                sb.append(first ? "" : ",").append(canonical(e._1())).append("->").append(canonical(e._2()));
                first = false;
            }
            return sb.append(')').toString();
        }
        if (v instanceof scala.collection.Iterable<?> s) {
            StringBuilder sb = new StringBuilder("[");
            Iterator<?> it = s.iterator();
            boolean first = true;
            while (it.hasNext()) {
                sb.append(first ? "" : ",").append(canonical(it.next()));
                first = false;
            }
            return sb.append(']').toString();
        }
        if (v instanceof Map<?, ?> || v instanceof List<?>) {
            throw new IllegalArgumentException("unexpected Java collection from Spark: " + v.getClass());
        }
        return v.getClass().getSimpleName() + ":" + v;
    }
}
