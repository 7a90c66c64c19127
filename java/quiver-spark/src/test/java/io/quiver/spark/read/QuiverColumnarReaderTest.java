package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.FileIdentity;
import io.quiver.spark.memory.TaskMemory;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The columnar reader inside real Spark tasks (local[2], off-heap, the leak
 * check on), run through a test DataSource with partitions made here: every
 * type the scan delivers, partition constants, columns missing from a file,
 * a pushed filter and its metrics, limits and early stops, the row reader.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class QuiverColumnarReaderTest {
    @TempDir static Path dir;
    static SparkSession spark;
    static JavaSparkContext jsc;
    static String file;
    static FileIdentity identity;
    static final int ROWS = 5000;
    static final long RG = 1024; // 5 row groups

    static final StructType PARTS = new StructType().add("part", DataTypes.StringType).add("year", DataTypes.IntegerType);

    @BeforeAll
    static void start() {
        Path p = dir.resolve("types.qvr");
        identity = ReadTestFiles.writeTypes(p, 0, ROWS, RG);
        file = p.toString();
        spark = SparkTestSession.startUtc("QuiverColumnarReaderTest", "64m");
        spark.conf().set("spark.sql.adaptive.enabled", "false");
        jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    static InternalRow parts(String part, int year) {
        return new GenericInternalRow(new Object[] {UTF8String.fromString(part), year});
    }

    static FileSlice slice(long rgBegin, long rgEnd, InternalRow parts) {
        long rows = Math.min(ROWS, rgEnd * RG) - rgBegin * RG;
        return new FileSlice(file, identity, rgBegin, rgEnd, rows, 0, parts);
    }

    static List<String> names(StructType s) {
        List<String> out = new ArrayList<>();
        for (StructField f : s.fields()) {
            out.add(f.name());
        }
        return out;
    }

    static Dataset<Row> read(ReadConfig c, List<QuiverInputPartition> partitions) {
        return spark.read().format(TestSource.class.getName()).option("id", TestSource.register(c, partitions)).load();
    }

    /** Three partitions: row groups [0,2) of part a; [2,3) of part b and [3,5) of part c in one. */
    static List<QuiverInputPartition> threePartitions() {
        return List.of(new QuiverInputPartition(0, List.of(slice(0, 2, parts("a", 2001)))),
                new QuiverInputPartition(1, List.of(slice(2, 3, parts("b", 2002)), slice(3, 5, parts("c", 2003)))));
    }

    static String partOf(long r) {
        return r < 2 * RG ? "a" : r < 3 * RG ? "b" : "c";
    }

    @Test
    void everyTypeMatchesTheData() {
        StructType data = ReadTestFiles.typesSparkSchema();
        ReadConfig c = ReadTestFiles.config(data, PARTS, names(data), null, 0);
        Dataset<Row> df = read(c, threePartitions());
        assertEquals(ReadTestFiles.typesSparkSchema().add("part", DataTypes.StringType).add("year", DataTypes.IntegerType),
                df.schema());
        List<Row> rows = df.selectExpr("id", "i32", "flag", "d", "s", "dec", "unix_date(day)",
                "unix_micros(ts_us_utc)", "unix_micros(cast(ts_ns as timestamp))", "unix_micros(ts_ns_utc)",
                "st", "l", "part", "year").orderBy("id").collectAsList();
        assertEquals(ROWS, rows.size());
        for (Row row : rows) {
            long r = row.getLong(0);
            String at = "row " + r;
            assertEquals(ReadTestFiles.i32(r), row.isNullAt(1) ? null : row.getInt(1), at);
            assertEquals(ReadTestFiles.flag(r), row.getBoolean(2), at);
            double d = row.getDouble(3);
            assertTrue(Double.compare(ReadTestFiles.d(r), d) == 0, at + ": " + d);
            assertEquals(ReadTestFiles.s(r), row.isNullAt(4) ? null : row.getString(4), at);
            BigDecimal dec = ReadTestFiles.dec(r);
            if (dec == null) {
                assertTrue(row.isNullAt(5), at);
            } else {
                assertEquals(0, dec.compareTo(row.getDecimal(5)), at + ": " + row.getDecimal(5));
            }
            assertEquals(ReadTestFiles.day(r), row.getInt(6), at);
            assertEquals(ReadTestFiles.tsUsUtc(r), row.getLong(7), at);
            assertEquals(ReadTestFiles.tsNs(r) / 1000, row.getLong(8), at);
            Long ns = ReadTestFiles.tsNsUtc(r);
            assertEquals(ns == null ? null : Math.floorDiv(ns, 1000), row.isNullAt(9) ? null : row.getLong(9), at);
            if (ReadTestFiles.stNull(r)) {
                assertTrue(row.isNullAt(10), at);
            } else {
                Row st = row.getStruct(10);
                assertEquals((int) r, st.getInt(0), at);
                assertEquals(ReadTestFiles.stB(r), st.isNullAt(1) ? null : st.getString(1), at);
            }
            assertEquals(ReadTestFiles.list(r), row.isNullAt(11) ? null : row.getList(11), at);
            assertEquals(partOf(r), row.getString(12), at);
            assertEquals(partOf(r).equals("a") ? 2001 : partOf(r).equals("b") ? 2002 : 2003, row.getInt(13), at);
        }
        assertEquals(0, TaskMemory.liveCount());
    }

    @Test
    void columnsMissingFromTheFileAreNull() {
        StructType data = new StructType()
                .add("id", DataTypes.LongType, false)
                .add("extra", DataTypes.LongType)
                .add("gone", new StructType().add("x", DataTypes.IntegerType).add("y", DataTypes.StringType))
                .add("S", DataTypes.StringType); // matches column s ignoring case
        ReadConfig c = ReadTestFiles.config(data, new StructType(), List.of("id", "extra", "gone", "S"), null, 0);
        List<Row> rows = read(c, List.of(new QuiverInputPartition(0, List.of(slice(0, 5, new GenericInternalRow(0))))))
                .orderBy("id").collectAsList();
        assertEquals(ROWS, rows.size());
        for (Row row : rows) {
            long r = row.getLong(0);
            assertTrue(row.isNullAt(1));
            assertTrue(row.isNullAt(2));
            assertEquals(ReadTestFiles.s(r), row.isNullAt(3) ? null : row.getString(3));
        }
    }

    @Test
    void noDataColumnCountsRows() {
        ReadConfig c = ReadTestFiles.config(new StructType(), PARTS, List.of(), null, 0);
        List<Row> rows = read(c, threePartitions()).groupBy("part").count().orderBy("part").collectAsList();
        assertEquals("[[a,2048], [b,1024], [c,1928]]", rows.toString());
    }

    static BatchScanExec scanOf(Dataset<Row> df) {
        SparkPlan plan = df.queryExecution().executedPlan();
        List<SparkPlan> found = new ArrayList<>();
        plan.foreach(p -> {
            if (p instanceof BatchScanExec) {
                found.add(p);
            }
            return scala.runtime.BoxedUnit.UNIT;
        });
        assertEquals(1, found.size(), plan.toString());
        return (BatchScanExec) found.get(0);
    }

    static long metric(Dataset<Row> df, String name) {
        return scanOf(df).metrics().get(name).get().value();
    }

    @Test
    void filterAndMetrics() {
        StructType data = new StructType().add("id", DataTypes.LongType, false).add("s", DataTypes.StringType);
        ReadConfig c = ReadTestFiles.config(data, PARTS, names(data), "id >= 3500", 0);
        Dataset<Row> df = read(c, threePartitions());
        List<Row> rows = df.collectAsList();
        assertEquals(ROWS - 3500, rows.size());
        for (Row row : rows) {
            assertTrue(row.getLong(0) >= 3500);
            assertEquals(ReadTestFiles.s(row.getLong(0)), row.isNullAt(1) ? null : row.getString(1));
        }
        // Row groups 0, 1 (partition 0) and 2 (first slice of partition 1)
        // lie below 3500 by their statistics; of row group 3 (3072..4095),
        // 428 rows fail the filter.
        long pruned = metric(df, QuiverMetrics.ROW_GROUPS_PRUNED);
        long filtered = metric(df, QuiverMetrics.ROWS_FILTERED_NATIVELY);
        long bytes = metric(df, QuiverMetrics.BYTES_READ);
        System.out.println("metrics: rowGroupsPruned=" + pruned + " rowsFilteredNatively=" + filtered
                + " bytesRead=" + bytes);
        assertEquals(3, pruned);
        assertEquals(3500 - 3 * RG, filtered);
        // Unfiltered, every row group's id and s segments are read: more bytes.
        Dataset<Row> all = read(ReadTestFiles.config(data, PARTS, names(data), null, 0), threePartitions());
        assertEquals(ROWS, all.collectAsList().size());
        long allBytes = metric(all, QuiverMetrics.BYTES_READ);
        System.out.println("metrics unfiltered: bytesRead=" + allBytes);
        assertTrue(bytes > 0, "bytes read with the filter: " + bytes);
        assertTrue(allBytes > bytes, allBytes + " > " + bytes);
        assertEquals(0, metric(all, QuiverMetrics.ROW_GROUPS_PRUNED));
        assertEquals(0, metric(all, QuiverMetrics.ROWS_FILTERED_NATIVELY));
    }

    @Test
    void floatFiltersOrderNaNAsSparkDoes() {
        StructType data = new StructType().add("id", DataTypes.LongType, false).add("d", DataTypes.DoubleType);
        // Values are r * 0.5 <= 2499.5, or NaN on every 11th row: only NaN is
        // above 100000 in Spark's order (and in none under IEEE comparisons).
        ReadConfig c = ReadTestFiles.config(data, PARTS, names(data), "d > 100000.0", 0);
        List<Row> rows = read(c, threePartitions()).orderBy("id").collectAsList();
        assertEquals((ROWS + 10) / 11, rows.size());
        for (Row row : rows) {
            assertEquals(0, row.getLong(0) % 11);
            assertTrue(Double.isNaN(row.getDouble(1)));
        }
        // And Spark's own filter over the unfiltered read agrees.
        ReadConfig all = ReadTestFiles.config(data, PARTS, names(data), null, 0);
        assertEquals(rows.size(), read(all, threePartitions()).where("d > 100000.0").count());
    }

    @Test
    void limitStopsEachTask() {
        StructType data = new StructType().add("id", DataTypes.LongType, false);
        ReadConfig c = ReadTestFiles.config(data, PARTS, names(data), null, 1500);
        List<Row> rows = read(c, threePartitions()).orderBy("id").collectAsList();
        // 1,500 rows of each task: partition 0 from row 0; partition 1 from
        // row 2048, crossing from its first slice (1,024 rows) into its second.
        assertEquals(3000, rows.size());
        assertEquals(0, rows.get(0).getLong(0));
        assertEquals(1499, rows.get(1499).getLong(0));
        assertEquals(2048, rows.get(1500).getLong(0));
        assertEquals(2048 + 1499, rows.get(2999).getLong(0));
        assertEquals(0, TaskMemory.liveCount());
    }

    @Test
    void anEarlyStopReleasesEverything() {
        StructType data = ReadTestFiles.typesSparkSchema();
        ReadConfig c = ReadTestFiles.config(data, PARTS, names(data), null, 0);
        // LIMIT 3 stops consuming each task after its first batch; the
        // reader is closed by Spark and by the completion listener, and the
        // leak checks (Spark's and TaskMemory's) would fail the task otherwise.
        for (int i = 0; i < 3; i++) {
            assertEquals(3, read(c, threePartitions()).limit(3).collectAsList().size());
            assertEquals(3, read(c, threePartitions()).select("st", "l").limit(3).collectAsList().size());
        }
        assertEquals(0, TaskMemory.liveCount());
    }

    @Test
    void theRowReaderWalksTheBatches() {
        StructType data = new StructType().add("id", DataTypes.LongType, false).add("s", DataTypes.StringType);
        QuiverPartitionReaderFactory f = new QuiverPartitionReaderFactory(
                ReadTestFiles.config(data, PARTS, names(data), null, 0));
        List<QuiverInputPartition> ps = threePartitions();
        List<String> out = jsc.parallelize(Arrays.asList(0, 1), 2).map(i -> {
            long n = 0;
            long sum = 0;
            String last = null;
            try (PartitionReader<InternalRow> r = f.createReader(ps.get(i))) {
                while (r.next()) {
                    InternalRow row = r.get();
                    long id = row.getLong(0);
                    String s = row.isNullAt(1) ? null : row.getUTF8String(1).toString();
                    if (!java.util.Objects.equals(s, ReadTestFiles.s(id))) {
                        throw new AssertionError("row " + id + ": " + s);
                    }
                    n++;
                    sum += id;
                    last = row.getUTF8String(2).toString() + row.getInt(3);
                }
            }
            return n + "/" + sum + "/" + last;
        }).collect();
        assertEquals(List.of("2048/" + (2047L * 2048 / 2) + "/a2001",
                "2952/" + ((4999L * 5000 / 2) - (2047L * 2048 / 2)) + "/c2003"), out);
        assertTrue(f.supportColumnarReads(ps.get(0)));
    }
}
