package io.quiver.spark.read;

import static io.quiver.spark.read.V2.and;
import static io.quiver.spark.read.V2.cast;
import static io.quiver.spark.read.V2.col;
import static io.quiver.spark.read.V2.decLit;
import static io.quiver.spark.read.V2.lit;
import static io.quiver.spark.read.V2.not;
import static io.quiver.spark.read.V2.nullLit;
import static io.quiver.spark.read.V2.or;
import static io.quiver.spark.read.V2.pred;
import static io.quiver.spark.read.V2.rawLit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.NanOrder;
import io.quiver.QuiverFile;
import io.quiver.QuiverScanReader;
import io.quiver.ScanOptions;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.util.V2ExpressionBuilder;
import org.apache.spark.sql.connector.expressions.filter.AlwaysFalse;
import org.apache.spark.sql.connector.expressions.filter.AlwaysTrue;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * For many predicates, the rows Spark selects (df.filter on the same rows,
 * Spark's own evaluation) are exactly the rows a native Quiver scan selects
 * with the translated filter and NaN ordered as Spark orders it. The file has
 * ten row groups, half of them of ordered values so that pruning by
 * statistics decides, half of edge values (NaN, signed zeros, infinities,
 * extremes, long strings beyond the 64-byte statistics, bytes that are not
 * UTF-8), with nulls in every nullable column. Each SQL condition is also
 * turned into a V2 predicate by Spark's own V2ExpressionBuilder (what a scan
 * is offered); when it translates, its rows must match too.
 */
@Timeout(value = 600, unit = java.util.concurrent.TimeUnit.SECONDS)
class FilterTranslatorSparkTest {
    static final int ROWS = 1000;
    static final int GROUP = 100;

    static final DataType DEC10 = DataTypes.createDecimalType(10, 2);
    static final DataType DEC38 = DataTypes.createDecimalType(38, 10);
    static final StructType ST = new StructType(new StructField[] {
        field("x", DataTypes.IntegerType), field("y", DataTypes.StringType)});
    static final StructType SCHEMA = new StructType(new StructField[] {
        new StructField("id", DataTypes.LongType, false, Metadata.empty()),
        field("sh", DataTypes.ShortType),
        field("i", DataTypes.IntegerType),
        field("l", DataTypes.LongType),
        field("f", DataTypes.FloatType),
        field("d", DataTypes.DoubleType),
        field("dec", DEC10),
        field("big", DEC38),
        field("s", DataTypes.StringType),
        field("bin", DataTypes.BinaryType),
        field("b", DataTypes.BooleanType),
        field("dt", DataTypes.DateType),
        field("ts", DataTypes.TimestampType),
        field("ntz", DataTypes.TimestampNTZType),
        field("st", ST),
    });

    static SparkSession spark;
    static Dataset<Row> df;
    static Path dir;
    static Path file;
    static BufferAllocator allocator;

    static StructField field(String name, DataType t) {
        return new StructField(name, t, true, Metadata.empty());
    }

    // ---- The rows ----

    static final String X64 = "x".repeat(64);
    static final float NAN_F2 = Float.intBitsToFloat(0x7fc00123);
    static final double NAN_D2 = Double.longBitsToDouble(0x7ff8000000000123L);
    static final short[] SH = {Short.MIN_VALUE, Short.MAX_VALUE, 0, -1, 7};
    static final int[] I = {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, 1, 42};
    static final long[] L = {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1, 9007199254740993L};
    static final float[] F = {Float.NaN, 0.0f, -0.0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0.1f,
        Float.MIN_VALUE, Float.MAX_VALUE, -1.5f, NAN_F2, 3.0f};
    static final double[] D = {Double.NaN, 0.0, -0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.1,
        Double.MIN_VALUE, Double.MAX_VALUE, (double) 0.1f, -1.5, NAN_D2, 3.0};
    static final String[] DECS = {"99999999.99", "-99999999.99", "0.00", "0.01", "-0.01", "12.30"};
    static final String[] BIGS = {"9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
        "0E-10", "1E-10", "12345678901234567890.1234567890", "-0.5000000000"};
    static final String[] S = {"", "é", "ü", "a'b", X64 + "xa", X64 + "xb", X64, "日本語", "tab\t", "e", "k0123"};
    static final byte[][] BIN = {{}, {(byte) 0xFF}, {0}, {0x61, 0x62}, {(byte) 0xFF, (byte) 0xFE, 0},
        (X64 + "!").getBytes(StandardCharsets.UTF_8), (X64 + "~").getBytes(StandardCharsets.UTF_8)};
    static final int[] DT = {0, -1, -719162, 2932896, 19000};
    static final long[] TS = {-62135596800000000L, 253402300799999999L, 0, -1, 1, 1709214301250000L};

    static boolean isNull(int col, long r) {
        return r % (5 + col) == col % 3 + 1;
    }

    /** Row r's values, in SCHEMA order (Spark's external classes), null where the column is null. */
    static Object[] values(long r) {
        Object[] v = new Object[SCHEMA.size()];
        boolean ordered = r < ROWS / 2;
        long k = r - ROWS / 4; // ordered values cross zero
        int e = (int) r;
        v[0] = r;
        v[1] = ordered ? (short) k : SH[e % SH.length];
        v[2] = ordered ? (int) k : I[e % I.length];
        v[3] = ordered ? k * 1_000_000_007L : L[e % L.length];
        v[4] = ordered ? k / 8.0f : F[e % F.length];
        v[5] = ordered ? k / 4.0 : D[e % D.length];
        v[6] = ordered ? BigDecimal.valueOf(k * 25, 2) : new BigDecimal(DECS[e % DECS.length]);
        v[7] = (ordered ? BigDecimal.valueOf(k * 3, 1) : new BigDecimal(BIGS[e % BIGS.length])).setScale(10);
        v[8] = ordered ? String.format("k%04d", r) : S[e % S.length];
        v[9] = ordered ? String.format("b%04d", r).getBytes(StandardCharsets.UTF_8) : BIN[e % BIN.length];
        v[10] = r % 3 == 0;
        v[11] = LocalDate.ofEpochDay(ordered ? k * 40 : DT[e % DT.length]);
        long us = ordered ? k * 3_600_000_000L + r : TS[e % TS.length];
        v[12] = Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000);
        v[13] = LocalDateTime.ofEpochSecond(Math.floorDiv(us, 1_000_000L), (int) Math.floorMod(us, 1_000_000L) * 1000,
                ZoneOffset.UTC);
        v[14] = RowFactory.create((int) (r % 17) - 8, r % 4 == 0 ? null : (ordered ? "y" + r : S[e % S.length]));
        for (int c = 1; c < v.length; c++) if (isNull(c, r)) v[c] = null;
        return v;
    }

    static Field arrow(String name, ArrowType t, Field... children) {
        return new Field(name, new FieldType(true, t, null), List.of(children));
    }

    static Schema arrowSchema() {
        return new Schema(List.of(
                new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                arrow("sh", new ArrowType.Int(16, true)),
                arrow("i", new ArrowType.Int(32, true)),
                arrow("l", new ArrowType.Int(64, true)),
                arrow("f", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)),
                arrow("d", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
                arrow("dec", new ArrowType.Decimal(10, 2, 128)),
                arrow("big", new ArrowType.Decimal(38, 10, 128)),
                arrow("s", ArrowType.Utf8.INSTANCE),
                arrow("bin", ArrowType.Binary.INSTANCE),
                arrow("b", ArrowType.Bool.INSTANCE),
                arrow("dt", new ArrowType.Date(DateUnit.DAY)),
                arrow("ts", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")),
                arrow("ntz", new ArrowType.Timestamp(TimeUnit.MICROSECOND, null)),
                arrow("st", ArrowType.Struct.INSTANCE,
                        arrow("x", new ArrowType.Int(32, true)), arrow("y", ArrowType.Utf8.INSTANCE))));
    }

    static long micros(Object ts) {
        if (ts instanceof Instant i) return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
        LocalDateTime l = (LocalDateTime) ts;
        return l.toEpochSecond(ZoneOffset.UTC) * 1_000_000L + l.getNano() / 1000;
    }

    static void writeFile(Path p) {
        ReadTestFiles.write(p, arrowSchema(), ROWS, GROUP, GROUP, (root, start, n) -> {
            StructVector st = (StructVector) root.getVector("st");
            IntVector stx = st.getChild("x", IntVector.class);
            VarCharVector sty = st.getChild("y", VarCharVector.class);
            for (int j = 0; j < n; j++) {
                long r = start + j;
                Object[] v = values(r);
                ((BigIntVector) root.getVector(0)).setSafe(j, r);
                if (v[1] == null) ((SmallIntVector) root.getVector(1)).setNull(j);
                else ((SmallIntVector) root.getVector(1)).setSafe(j, (Short) v[1]);
                if (v[2] == null) ((IntVector) root.getVector(2)).setNull(j);
                else ((IntVector) root.getVector(2)).setSafe(j, (Integer) v[2]);
                if (v[3] == null) ((BigIntVector) root.getVector(3)).setNull(j);
                else ((BigIntVector) root.getVector(3)).setSafe(j, (Long) v[3]);
                if (v[4] == null) ((Float4Vector) root.getVector(4)).setNull(j);
                else ((Float4Vector) root.getVector(4)).setSafe(j, (Float) v[4]);
                if (v[5] == null) ((Float8Vector) root.getVector(5)).setNull(j);
                else ((Float8Vector) root.getVector(5)).setSafe(j, (Double) v[5]);
                if (v[6] == null) ((DecimalVector) root.getVector(6)).setNull(j);
                else ((DecimalVector) root.getVector(6)).setSafe(j, (BigDecimal) v[6]);
                if (v[7] == null) ((DecimalVector) root.getVector(7)).setNull(j);
                else ((DecimalVector) root.getVector(7)).setSafe(j, (BigDecimal) v[7]);
                if (v[8] == null) ((VarCharVector) root.getVector(8)).setNull(j);
                else ((VarCharVector) root.getVector(8)).setSafe(j, ((String) v[8]).getBytes(StandardCharsets.UTF_8));
                if (v[9] == null) ((VarBinaryVector) root.getVector(9)).setNull(j);
                else ((VarBinaryVector) root.getVector(9)).setSafe(j, (byte[]) v[9]);
                if (v[10] == null) ((BitVector) root.getVector(10)).setNull(j);
                else ((BitVector) root.getVector(10)).setSafe(j, (Boolean) v[10] ? 1 : 0);
                if (v[11] == null) ((DateDayVector) root.getVector(11)).setNull(j);
                else ((DateDayVector) root.getVector(11)).setSafe(j, (int) ((LocalDate) v[11]).toEpochDay());
                if (v[12] == null) ((TimeStampMicroTZVector) root.getVector(12)).setNull(j);
                else ((TimeStampMicroTZVector) root.getVector(12)).setSafe(j, micros(v[12]));
                if (v[13] == null) ((TimeStampMicroVector) root.getVector(13)).setNull(j);
                else ((TimeStampMicroVector) root.getVector(13)).setSafe(j, micros(v[13]));
                if (v[14] == null) {
                    st.setNull(j);
                    stx.setNull(j);
                    sty.setNull(j);
                } else {
                    Row sr = (Row) v[14];
                    st.setIndexDefined(j);
                    stx.setSafe(j, sr.getInt(0));
                    if (sr.isNullAt(1)) sty.setNull(j);
                    else sty.setSafe(j, sr.getString(1).getBytes(StandardCharsets.UTF_8));
                }
            }
        });
    }

    @BeforeAll
    static void setUp() throws Exception {
        allocator = new RootAllocator(Long.MAX_VALUE);
        dir = Files.createTempDirectory("quiver-filters");
        file = dir.resolve("edge.qvr");
        writeFile(file);
        spark = SparkTestSession.builder("FilterTranslatorSparkTest", null)
                .config("spark.sql.datetime.java8API.enabled", "true")
                // a zone far from UTC: TIMESTAMP literals must not depend on it
                .config("spark.sql.session.timeZone", "America/Los_Angeles")
                // keep the filter in generated code rather than folded into the local relation
                .config("spark.sql.optimizer.excludedRules",
                        "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation")
                .getOrCreate();
        List<Row> rows = new ArrayList<>();
        for (long r = 0; r < ROWS; r++) rows.add(RowFactory.create(values(r)));
        df = spark.createDataFrame(rows, SCHEMA);
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (spark != null) spark.stop();
        if (allocator != null) allocator.close();
        if (file != null) Files.deleteIfExists(file);
        if (dir != null) Files.deleteIfExists(dir);
    }

    // ---- Comparing ----

    static TreeSet<Long> sparkRows(String sql) {
        TreeSet<Long> ids = new TreeSet<>();
        for (Row r : df.filter(sql).select("id").collectAsList()) ids.add(r.getLong(0));
        return ids;
    }

    static TreeSet<Long> quiverRows(String filter) {
        TreeSet<Long> ids = new TreeSet<>();
        try (QuiverFile f = QuiverFile.open(file);
                QuiverScanReader r = f.scan(allocator, ScanOptions.builder().columns("id").filter(filter)
                        .nanOrder(NanOrder.LARGEST).batchRows(64).threads(ScanOptions.SYNC).build())) {
            while (r.loadNextBatch()) {
                BigIntVector id = (BigIntVector) r.getVectorSchemaRoot().getVector(0);
                for (int i = 0; i < id.getValueCount(); i++) ids.add(id.get(i));
            }
        } catch (Exception e) {
            throw new AssertionError("scan with filter " + filter + " failed", e);
        }
        return ids;
    }

    /** Spark's V2 form of the optimized filter of `sql` (null when Spark keeps no filter or cannot convert it). */
    static Predicate sparkV2(String sql) {
        LogicalPlan plan = df.filter(sql).queryExecution().optimizedPlan();
        Filter filter = findFilter(plan);
        if (filter == null) return null;
        scala.Option<Predicate> p = new V2ExpressionBuilder(filter.condition(), true).buildPredicate();
        return p.isDefined() ? p.get() : null;
    }

    static Filter findFilter(LogicalPlan plan) {
        if (plan instanceof Filter f) return f;
        scala.collection.Iterator<LogicalPlan> it = plan.children().iterator();
        while (it.hasNext()) {
            Filter f = findFilter(it.next());
            if (f != null) return f;
        }
        return null;
    }

    /** Equal row sets; a failure names the rows only one side selected (the sets are long). */
    static void assertSameRows(TreeSet<Long> spark, TreeSet<Long> quiver, String what) {
        if (spark.equals(quiver)) return;
        TreeSet<Long> onlySpark = new TreeSet<>(spark);
        onlySpark.removeAll(quiver);
        TreeSet<Long> onlyQuiver = new TreeSet<>(quiver);
        onlyQuiver.removeAll(spark);
        throw new AssertionError(what + ": rows only Spark selects " + head(onlySpark) + ", rows only Quiver selects "
                + head(onlyQuiver) + " (of " + spark.size() + " and " + quiver.size() + ")");
    }

    static String head(TreeSet<Long> s) {
        List<String> out = new ArrayList<>();
        for (long id : s) {
            if (out.size() == 12) {
                out.add("... " + s.size() + " in all");
                break;
            }
            out.add(id + " " + java.util.Arrays.deepToString(values(id)));
        }
        return out.toString();
    }

    int checked = 0;
    int sparkChecked = 0;

    /** p (built by hand) and sql mean the same; both select the same rows in Spark and in Quiver. */
    void same(Predicate p, String sql) {
        String text = FilterTranslator.translate(p, SCHEMA, path -> true);
        assertNotNull(text, "no translation for " + p.describe() + " (" + sql + ")");
        TreeSet<Long> expected = sparkRows(sql);
        assertSameRows(expected, quiverRows(text), sql + "  ->  " + text);
        checked++;
        Predicate fromSpark = sparkV2(sql);
        if (fromSpark != null) {
            String t2 = FilterTranslator.translate(fromSpark, SCHEMA, path -> true);
            if (t2 != null) {
                assertSameRows(expected, quiverRows(t2), sql + "  (Spark's " + fromSpark.describe() + ")  ->  " + t2);
                sparkChecked++;
            }
        }
    }

    /** Spark's own V2 form of sql translates, and selects the same rows. */
    boolean sameFromSpark(String sql) {
        Predicate fromSpark = sparkV2(sql);
        if (fromSpark == null) return false; // the optimizer folded the condition away (i = 2.5 is never TRUE)
        String t = FilterTranslator.translate(fromSpark, SCHEMA, path -> true);
        assertNotNull(t, "no translation for Spark's " + fromSpark.describe());
        assertSameRows(sparkRows(sql), quiverRows(t), sql + "  (Spark's " + fromSpark.describe() + ")  ->  " + t);
        sparkChecked++;
        return true;
    }

    static Predicate cmp(String op, String column, Object v) {
        return pred(op, col(column), lit(v));
    }

    static final String[] OPS = {"=", "<>", "<", "<=", ">", ">="};
    static final String[] SQL_OPS = {"=", "<>", "<", "<=", ">", ">="};

    @Test
    void floatsAndDoublesOrderNaNAsSpark() {
        double[] dl = {Double.NaN, 0.0, -0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.1, -1.5, 3.0,
            Double.MAX_VALUE, Double.MIN_VALUE, (double) 0.1f};
        for (double v : dl) {
            for (int o = 0; o < OPS.length; o++) {
                same(cmp(OPS[o], "d", v), "d " + SQL_OPS[o] + " " + sqlDouble(v));
            }
            same(pred("<=>", col("d"), lit(v)), "d <=> " + sqlDouble(v));
            same(not(pred("<=>", col("d"), lit(v))), "NOT (d <=> " + sqlDouble(v) + ")");
            same(not(cmp("<", "d", v)), "NOT (d < " + sqlDouble(v) + ")");
        }
        float[] fl = {Float.NaN, 0.0f, -0.0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0.1f, -1.5f, 3.0f,
            Float.MAX_VALUE, Float.MIN_VALUE};
        for (float v : fl) {
            for (int o = 0; o < OPS.length; o++) {
                same(cmp(OPS[o], "f", v), "f " + SQL_OPS[o] + " " + sqlFloat(v));
            }
        }
        // a float column against double literals: Spark widens the column
        for (double v : new double[] {0.1, (double) 0.1f, Double.NaN, 1e39}) {
            for (int o = 0; o < OPS.length; o++) {
                same(pred(OPS[o], cast(col("f"), DataTypes.FloatType, DataTypes.DoubleType), lit(v)),
                        "f " + SQL_OPS[o] + " " + sqlDouble(v));
            }
        }
        same(pred("IN", col("d"), lit(Double.NaN), lit(0.0), lit(3.0)), "d IN (double('NaN'), 0.0D, 3.0D)");
        same(not(pred("IN", col("d"), lit(Double.NaN), lit(-0.0))), "d NOT IN (double('NaN'), -0.0D)");
        same(pred("IN", col("f"), lit(Float.NaN), lit(-0.0f), lit(0.1f)),
                "f IN (float('NaN'), cast(-0.0 as float), cast(0.1 as float))");
        same(pred("IN", col("d"), lit(Double.NaN), nullLit(DataTypes.DoubleType)), "d IN (double('NaN'), NULL)");
        same(not(pred("IN", col("d"), lit(1.5), nullLit(DataTypes.DoubleType))), "d NOT IN (1.5D, NULL)");
        // eleven values: Spark's optimizer turns the IN into an InSet
        List<String> many = new ArrayList<>();
        List<org.apache.spark.sql.connector.expressions.Expression> kids = new ArrayList<>();
        kids.add(col("d"));
        for (double v : new double[] {Double.NaN, -0.0, 0.1, 1, 2, 3, 4, 5, 6, 7, Double.NEGATIVE_INFINITY}) {
            many.add(sqlDouble(v));
            kids.add(lit(v));
        }
        same(pred("IN", kids.toArray(new org.apache.spark.sql.connector.expressions.Expression[0])),
                "d IN (" + String.join(", ", many) + ")");
        // column to column
        for (int o = 0; o < OPS.length; o++) {
            same(pred(OPS[o], cast(col("f"), DataTypes.FloatType, DataTypes.DoubleType), col("d")),
                    "f " + SQL_OPS[o] + " d");
        }
        same(pred("<=>", cast(col("f"), DataTypes.FloatType, DataTypes.DoubleType), col("d")), "f <=> d");
        assertTrue(checked > 100);
    }

    static String sqlDouble(double v) {
        if (Double.isNaN(v)) return "double('NaN')";
        if (Double.isInfinite(v)) return v > 0 ? "double('Infinity')" : "double('-Infinity')";
        if (v == 0 && 1 / v < 0) return "-0.0D";
        return Double.toString(v) + "D";
    }

    static String sqlFloat(float v) {
        if (Float.isNaN(v)) return "float('NaN')";
        if (Float.isInfinite(v)) return v > 0 ? "float('Infinity')" : "float('-Infinity')";
        if (v == 0 && 1 / v < 0) return "cast(-0.0 as float)";
        return "cast('" + v + "' as float)";
    }

    @Test
    void integersAndDecimals() {
        long[] vals = {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1, 42, 9007199254740993L, -200, 240, 1_000_000_007L * 100};
        for (long v : vals) {
            for (int o = 0; o < OPS.length; o++) {
                same(cmp(OPS[o], "l", v), "l " + SQL_OPS[o] + " " + v + "L");
                if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
                    same(cmp(OPS[o], "i", (int) v), "i " + SQL_OPS[o] + " " + v);
                    same(pred(OPS[o], cast(col("i"), DataTypes.IntegerType, DataTypes.LongType), lit(v)),
                            "i " + SQL_OPS[o] + " " + v + "L");
                }
                if (v >= Short.MIN_VALUE && v <= Short.MAX_VALUE) {
                    same(pred(OPS[o], cast(col("sh"), DataTypes.ShortType, DataTypes.IntegerType), lit((int) v)),
                            "sh " + SQL_OPS[o] + " " + v);
                }
            }
        }
        same(pred("<", cast(col("i"), DataTypes.IntegerType, DataTypes.createDecimalType(11, 1)), decLit("2.5", 11, 1)),
                "i < 2.5BD");
        same(pred("=", cast(col("i"), DataTypes.IntegerType, DataTypes.DoubleType), lit(2.5)), "i = 2.5D");
        same(pred("<", cast(col("i"), DataTypes.IntegerType, DataTypes.DoubleType), lit(Double.NaN)), "i < double('NaN')");
        same(pred(">", cast(col("i"), DataTypes.IntegerType, DataTypes.DoubleType), lit(Double.NEGATIVE_INFINITY)),
                "i > double('-Infinity')");
        same(pred("IN", col("i"), lit(Integer.MIN_VALUE), lit(0), lit(42), nullLit(DataTypes.IntegerType)),
                "i IN (-2147483648, 0, 42, NULL)");
        same(not(pred("IN", col("l"), lit(Long.MIN_VALUE), lit(0L))), "l NOT IN (" + Long.MIN_VALUE + "L, 0L)");
        String[] decs = {"99999999.99", "-99999999.99", "0.00", "0.01", "-0.01", "12.30", "-3.25"};
        for (String v : decs) {
            for (int o = 0; o < OPS.length; o++) {
                same(pred(OPS[o], col("dec"), decLit(v, 10, 2)), "dec " + SQL_OPS[o] + " CAST(" + v + " AS DECIMAL(10,2))");
            }
        }
        same(pred("<", cast(col("dec"), DEC10, DataTypes.createDecimalType(12, 3)), decLit("0.005", 12, 3)),
                "dec < 0.005BD");
        String[] bigs = {"9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
            "0.0000000001", "12345678901234567890.1234567890", "-0.5", "7.5"};
        for (String v : bigs) {
            for (int o = 0; o < OPS.length; o++) {
                same(pred(OPS[o], col("big"), decLit(new BigDecimal(v).setScale(10).toPlainString(), 38, 10)),
                        "big " + SQL_OPS[o] + " CAST(" + v + " AS DECIMAL(38,10))");
            }
        }
        same(pred("=", cast(col("i"), DataTypes.IntegerType, DataTypes.LongType), col("l")), "i = l");
        same(pred("<", col("sh"), cast(col("st", "x"), DataTypes.IntegerType, DataTypes.IntegerType)), "sh < st.x");
        same(pred("<=>", col("i"), nullLit(DataTypes.IntegerType)), "i <=> NULL");
        same(pred("=", col("i"), nullLit(DataTypes.IntegerType)), "i = NULL");
        same(not(pred("=", col("i"), nullLit(DataTypes.IntegerType))), "NOT (i = NULL)");
    }

    @Test
    void stringsAndBinaries() {
        String[] sv = {"", "é", "ü", "a'b", X64 + "xa", X64 + "xb", X64, X64 + "x", "日本語", "tab\t", "k0100", "k", "e"};
        for (String v : sv) {
            for (int o = 0; o < OPS.length; o++) {
                same(cmp(OPS[o], "s", v), "s " + SQL_OPS[o] + " " + sqlString(v));
            }
            same(pred("STARTS_WITH", col("s"), lit(v)), "startswith(s, " + sqlString(v) + ")");
            same(not(pred("STARTS_WITH", col("s"), lit(v))), "NOT startswith(s, " + sqlString(v) + ")");
        }
        same(pred("IN", col("s"), lit(""), lit("é"), lit(X64 + "xb")), "s IN ('', 'é', '" + X64 + "xb')");
        same(pred("=", col("st", "y"), col("s")), "st.y = s");
        same(pred("<", col("st", "y"), lit("y3")), "st.y < 'y3'");
        same(pred("STARTS_WITH", col("st", "y"), lit(X64)), "startswith(st.y, '" + X64 + "')");
        byte[][] bv = {{}, {(byte) 0xFF}, {0}, {0x61, 0x62}, {(byte) 0xFF, (byte) 0xFE, 0},
            (X64 + "!").getBytes(StandardCharsets.UTF_8), "b0300".getBytes(StandardCharsets.UTF_8)};
        for (byte[] v : bv) {
            for (int o = 0; o < OPS.length; o++) {
                same(pred(OPS[o], col("bin"), rawLit(v, DataTypes.BinaryType)), "bin " + SQL_OPS[o] + " " + sqlBinary(v));
            }
        }
        same(pred("<=>", col("bin"), rawLit(new byte[0], DataTypes.BinaryType)), "bin <=> X''");
        // an invalid UTF-8 string literal, as Spark can hold it
        same(pred(">", col("s"), rawLit(UTF8String.fromBytes(new byte[] {(byte) 0xFF}), DataTypes.StringType)),
                "s > cast(X'FF' as string)");
    }

    static String sqlString(String v) {
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'").replace("\t", "\\t") + "'";
    }

    static String sqlBinary(byte[] v) {
        StringBuilder sb = new StringBuilder("X'");
        for (byte b : v) sb.append(String.format("%02X", b));
        return sb.append("'").toString();
    }

    @Test
    void boolsDatesTimestampsAndLogic() {
        same(pred("=", col("b"), lit(true)), "b");
        same(not(pred("=", col("b"), lit(true))), "NOT b");
        same(pred("=", col("b"), lit(false)), "b = false");
        same(pred("<", col("b"), lit(true)), "b < true");
        int[] days = {0, -1, -719162, 2932896, 19000, -400, 4000, -10000};
        for (int v : days) {
            for (int o = 0; o < OPS.length; o++) {
                same(pred(OPS[o], col("dt"), rawLit(v, DataTypes.DateType)),
                        "dt " + SQL_OPS[o] + " date_from_unix_date(" + v + ")");
            }
        }
        long[] tss = {-62135596800000000L, 253402300799999999L, 0, -1, 1, 1709214301250000L, 3_600_000_000L * 5 + 255,
            -3_600_000_000L * 100};
        for (long v : tss) {
            for (int o = 0; o < OPS.length; o++) {
                same(pred(OPS[o], col("ts"), rawLit(v, DataTypes.TimestampType)),
                        "ts " + SQL_OPS[o] + " timestamp_micros(" + v + "L)");
                same(pred(OPS[o], col("ntz"), rawLit(v, DataTypes.TimestampNTZType)),
                        "ntz " + SQL_OPS[o] + " TIMESTAMP_NTZ '" + ntzText(v) + "'");
            }
        }
        same(pred("=", col("dt"), col("dt")), "dt = dt");
        same(new AlwaysTrue(), "true");
        same(new AlwaysFalse(), "false");
        same(pred("IS_NULL", col("st")), "st IS NULL");
        same(pred("IS_NULL", col("st", "y")), "st.y IS NULL");
        same(pred("IS_NOT_NULL", col("st", "x")), "st.x IS NOT NULL");
        same(pred("IS_NULL", col("f")), "f IS NULL");
        same(or(pred("IS_NULL", col("i")), not(and(cmp(">", "d", 0.0), pred("STARTS_WITH", col("s"), lit("k0"))))),
                "i IS NULL OR NOT (d > 0.0D AND startswith(s, 'k0'))");
        same(and(or(cmp("<", "l", 0L), pred("=", col("b"), lit(true))), not(pred("<>", col("dec"), decLit("0.00", 10, 2)))),
                "(l < 0L OR b) AND NOT (dec <> CAST(0 AS DECIMAL(10,2)))");
    }

    static String ntzText(long micros) {
        LocalDateTime t = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
                (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
        return t.toString().replace('T', ' ');
    }

    /** Conditions as a user writes them: Spark's own V2 predicates (casts, flipped sides, InSet, LIKE prefixes). */
    @Test
    void sparksOwnPredicates() {
        String[] sqls = {
            "f > 0.1", "f <= 0.1", "0.1 < f", "f >= 3", "d = 'NaN'", "d > 1", "i > 2.5", "i = 2.5", "sh < 5",
            "sh = 32767", "l > 9007199254740992", "dec > 0.005", "dec = 12.3", "big < 1", "big > 0.00000000001",
            "s LIKE 'k01%'", "s LIKE 'xxx%'", "s = 'é'", "s IN ('', 'a''b', 'k0101')",
            "i IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 42)", "i NOT IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 42)",
            "d IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, double('NaN'))", "dt > DATE '1972-01-01'",
            "dt < DATE '0001-01-02'", "ts > TIMESTAMP '1970-01-01 00:00:00Z'", "ts <= TIMESTAMP '1970-01-01 00:00:00.000001Z'",
            "ntz >= TIMESTAMP_NTZ '1970-01-01 05:00:00'", "b AND i > 0", "NOT b OR s IS NULL", "st.x > 3",
            "st.y = s", "i <=> 42", "NOT (d <=> double('NaN'))", "i = l", "f = d", "i <=> l"};
        List<String> folded = new ArrayList<>();
        for (String sql : sqls) {
            if (!sameFromSpark(sql)) folded.add(sql);
        }
        // a few conditions are decided by the optimizer alone; the rest must all have been pushed
        assertTrue(folded.size() <= 3, "Spark offers no predicate for " + folded);
    }

    /** What stays in Spark, checked on Spark's own V2 forms. */
    @Test
    void sparksUntranslatablePredicates() {
        String[] sqls = {"endswith(s, 'a')", "contains(s, 'b')", "upper(s) = 'A'", "cast(l as double) = 1.0",
            "cast(d as float) = 1.0", "cast(i as string) = '1'", "ts = ntz", "i IS NULL OR endswith(s, 'a')"};
        for (String sql : sqls) {
            Predicate p = sparkV2(sql);
            if (p == null) continue; // Spark does not even offer it
            assertEquals(null, FilterTranslator.translate(p, SCHEMA, path -> true), sql + " (" + p.describe() + ")");
        }
        // a column whose native values Spark does not see as they are
        Predicate p = sparkV2("ts > TIMESTAMP '1970-01-01 00:00:00Z'");
        assertNotNull(p);
        assertEquals(null, FilterTranslator.translate(p, SCHEMA, path -> !path.get(0).equals("ts")));
    }
}
