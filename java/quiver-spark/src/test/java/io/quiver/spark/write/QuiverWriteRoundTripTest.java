package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.SparkQuiverData;
import io.quiver.spark.read.SparkTestSession;

import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code df.write.format("quiver")} then {@code spark.read.format("quiver")}
 * gives back the DataFrame: every Spark type the writer takes (boolean,
 * byte, short, int, long, float and double with NaN, -0.0 and ±inf,
 * decimal(9,2), (18,4), (21,2) and (38,10), strings empty, multi-byte and
 * 6 KB long, binary, date, timestamp, timestamp_ntz, struct, array, map,
 * array of struct, map of array) with nulls at every level, written from the
 * same DataFrame as Parquet too; both read back and compared with the source
 * and with each other as sorted canonical rows (SparkQuiverData), and their
 * schemas compared. Then the same with the batch and row-group sizes that
 * make a writer grow, cut and reset many times, with {@code compact}, and
 * from rows Spark reuses: UnsafeRows of a projection (one on-heap buffer
 * rewritten per row) and of a sort (pointers into off-heap pages), whose
 * reuse the test checks before relying on it.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class QuiverWriteRoundTripTest {
    private static final long ROWS = 3000;
    private static SparkSession spark;
    private static TaskEnds tasks;
    @TempDir
    static Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("QuiverWriteRoundTripTest", "256m");
        // Not UTC, so the zone of TimestampType and the lack of one of TimestampNTZ both show.
        spark.conf().set("spark.sql.session.timeZone", "America/Los_Angeles");
        tasks = TaskEnds.attach(spark);
    }

    @AfterAll
    static void stop() {
        SparkTestSession.stop(spark);
    }

    @AfterEach
    void noTaskLeftMemory() {
        tasks.assertNoneFailed(spark);
    }

    /** Writes {@code df} as Quiver to {@code name} with the options (key, value, ...) and reads it back. */
    static Dataset<Row> roundTrip(Dataset<Row> df, String name, String... options) {
        var w = df.write().format("quiver").mode("overwrite");
        for (int i = 0; i < options.length; i += 2) {
            w = w.option(options[i], options[i + 1]);
        }
        String path = dir.resolve(name).toString();
        w.save(path);
        return spark.read().format("quiver").load(path);
    }

    static Dataset<Row> parquetRoundTrip(Dataset<Row> df, String name) {
        String path = dir.resolve(name).toString();
        df.write().mode("overwrite").parquet(path);
        return spark.read().parquet(path);
    }

    /** Asserts the Quiver copy holds {@code source}'s rows and {@code parquet}'s schema and rows. */
    static void assertSame(Dataset<Row> source, Dataset<Row> quiver, Dataset<Row> parquet, String what) {
        // Parquet reads every column back nullable; names and types must match.
        assertEquals(parquet.schema().catalogString(), quiver.schema().catalogString(), what + ": schema");
        assertEquals(source.schema().catalogString(), quiver.schema().catalogString(), what + ": schema vs source");
        List<String> expected = SparkQuiverData.canonicalRows(source);
        SparkQuiverData.assertSameRows(what + " (expected: source, got: Parquet)", expected,
                SparkQuiverData.canonicalRows(parquet));
        int n = SparkQuiverData.assertSameRows(what + " (expected: source, got: Quiver)", expected,
                SparkQuiverData.canonicalRows(quiver));
        assertTrue(n > 0, what + ": no rows, a poor test");
    }

    @Test
    void everyTypeWithNullsAtEveryLevel() {
        Dataset<Row> df = SparkQuiverData.everyType(spark, ROWS).cache();
        try {
            assertSame(df, roundTrip(df, "every"), parquetRoundTrip(df, "every-parquet"), "every type");
        } finally {
            df.unpersist(true);
        }
    }

    @Test
    void smallBatchesManyRowGroupsAndCompact() {
        Dataset<Row> df = SparkQuiverData.everyType(spark, ROWS).cache();
        try {
            Dataset<Row> parquet = parquetRoundTrip(df, "small-parquet");
            // 7-row batches: vectors grow inside none, the writer cuts and resets 400+ times.
            assertSame(df, roundTrip(df, "small", "batchRows", "7", "rowGroupRows", "100"), parquet,
                    "batchRows=7, rowGroupRows=100");
            // Batches larger than the 64-slot start: vectors grow inside each batch, then go back.
            assertSame(df, roundTrip(df, "grow", "batchRows", "1000", "rowGroupRows", "250"), parquet,
                    "batchRows=1000, rowGroupRows=250");
            assertSame(df, roundTrip(df, "compact", "compact", "true"), parquet, "compact=true");
        } finally {
            df.unpersist(true);
        }
    }

    /**
     * Nesting the everyType rows do not reach: arrays of arrays, maps of
     * structs, structs of maps, null and empty at each level, nulls inside
     * structs inside arrays inside maps.
     */
    @Test
    void deepNesting() {
        Dataset<Row> df = spark.sql("""
                SELECT id,
                  CASE id % 5 WHEN 0 THEN NULL WHEN 1 THEN array() WHEN 2 THEN array(CAST(NULL AS ARRAY<INT>))
                       WHEN 3 THEN array(array(), NULL, array(CAST(NULL AS INT)))
                       ELSE array(array(CAST(id AS INT), -1), array(2)) END AS aa,
                  CASE id % 4 WHEN 0 THEN NULL WHEN 1 THEN map()
                       WHEN 2 THEN map('a', CAST(NULL AS STRUCT<x: INT, s: STRING>))
                       ELSE map('a', named_struct('x', CAST(NULL AS INT), 's', 'é'), 'b',
                                named_struct('x', CAST(id AS INT), 's', CAST(NULL AS STRING))) END AS ms,
                  CASE id % 6 WHEN 0 THEN NULL
                       WHEN 1 THEN named_struct('m', CAST(NULL AS MAP<INT, ARRAY<STRUCT<d: DECIMAL(38,10), b: BINARY>>>),
                                                'f', CAST(NULL AS FLOAT))
                       WHEN 2 THEN named_struct('m', map(1, CAST(NULL AS ARRAY<STRUCT<d: DECIMAL(38,10), b: BINARY>>)),
                                                'f', float('NaN'))
                       WHEN 3 THEN named_struct('m', map(1, array(CAST(NULL AS STRUCT<d: DECIMAL(38,10), b: BINARY>))),
                                                'f', float('-0.0'))
                       ELSE named_struct('m', map(CAST(id AS INT),
                                array(named_struct('d', CAST(id / 7 AS DECIMAL(38,10)), 'b', X''),
                                      named_struct('d', CAST(NULL AS DECIMAL(38,10)), 'b', CAST(NULL AS BINARY)))),
                                'f', float('Infinity')) END AS sm,
                  CASE WHEN id % 3 = 0 THEN NULL
                       ELSE array(map('k', array(DATE'1969-12-31', NULL)), NULL, map()) END AS amd,
                  CAST(NULL AS STRING) AS always_null,
                  CASE WHEN id % 2 = 0 THEN '' ELSE 'ꝏ𝄞' END AS s
                FROM range(0, 600)
                """).cache();
        try {
            assertSame(df, roundTrip(df, "deep", "batchRows", "50"), parquetRoundTrip(df, "deep-parquet"),
                    "deep nesting");
        } finally {
            df.unpersist(true);
        }
    }

    /**
     * Rows of variable width from a generator (range) through a projection:
     * Spark hands the writer one UnsafeRow whose on-heap buffer is rewritten
     * for every row, so a writer that kept a reference instead of copying
     * would show later rows' bytes. (Not explode: Spark copies the rows a
     * generator of several rows per input makes.)
     */
    @Test
    void reusedOnHeapRows() {
        Dataset<Row> df = spark.sql("""
                SELECT id, n, repeat(concat('x', CAST(n AS STRING), '✓'), CAST((id * 7 + n) % 40 AS INT)) AS s,
                       CASE WHEN n % 3 = 0 THEN NULL ELSE sequence(0, CAST((id + n) % 9 AS INT)) END AS arr,
                       named_struct('b', CAST(repeat('b', CAST(n % 17 AS INT)) AS BINARY),
                                    'd', CAST(id * n / 3 AS DECIMAL(38,10))) AS st
                FROM (SELECT id, id % 31 AS n FROM range(0, 6000))
                """);
        assertReused(df, false);
        assertSame(df, roundTrip(df, "reused-heap", "batchRows", "100"), parquetRoundTrip(df, "reused-heap-parquet"),
                "reused on-heap rows");
    }

    /**
     * The same through a sort, which with off-heap memory enabled keeps its
     * rows in off-heap pages and hands out one UnsafeRow pointed at each in
     * turn.
     */
    @Test
    void reusedOffHeapRows() {
        Dataset<Row> df = SparkQuiverData.everyType(spark, ROWS).sortWithinPartitions("str", "id");
        assertReused(df, true);
        assertSame(df, roundTrip(df, "reused-offheap", "batchRows", "128"),
                parquetRoundTrip(df, "reused-offheap-parquet"), "reused off-heap rows");
    }

    /**
     * Checks the premise of the reuse tests: each task of {@code df}'s plan
     * produces UnsafeRows that are a handful of objects reused for all its
     * rows, backed by off-heap memory (base object null) or by a Java array.
     */
    static void assertReused(Dataset<Row> df, boolean offHeap) {
        List<String> seen = df.queryExecution().toRdd().toJavaRDD().mapPartitions(
                (Iterator<InternalRow> it) -> {
                    java.util.Set<Integer> objects = new java.util.HashSet<>();
                    long rows = 0;
                    long onHeap = 0;
                    while (it.hasNext()) {
                        InternalRow r = it.next();
                        objects.add(System.identityHashCode(r));
                        if (!(r instanceof UnsafeRow u)) {
                            return List.of("not an UnsafeRow: " + r.getClass().getName()).iterator();
                        }
                        rows++;
                        onHeap += u.getBaseObject() == null ? 0 : 1;
                    }
                    return List.of(rows + " rows, " + objects.size() + " objects, " + onHeap + " on heap").iterator();
                }).collect();
        long tasksWithRows = 0;
        for (String s : seen) {
            if (s.startsWith("0 rows")) {
                continue;
            }
            tasksWithRows++;
            String[] p = s.split(" ");
            long rows = Long.parseLong(p[0]);
            // A sort hands out its first row apart; every other row is the one reused object.
            assertTrue(Long.parseLong(p[2]) * 100 < rows, "rows are reused objects: " + seen);
            if (offHeap) {
                assertTrue(Long.parseLong(p[4]) * 100 < rows, "rows point into off-heap pages: " + seen);
            } else {
                assertEquals(rows, Long.parseLong(p[4]), "rows live in a Java array: " + seen);
            }
        }
        assertTrue(tasksWithRows > 0, "no rows: " + seen);
    }

    /** Spark's own options map also reaches the writer case-insensitively. */
    @Test
    void optionsAreCaseInsensitive() {
        Dataset<Row> df = spark.range(0, 1000).selectExpr("id", "CAST(id AS STRING) AS s");
        Dataset<Row> back = roundTrip(df, "case", "BATCHROWS", "10", "RowGroupRows", "30");
        SparkQuiverData.assertSameRows("options in any case", SparkQuiverData.canonicalRows(df),
                SparkQuiverData.canonicalRows(back));
    }
}
