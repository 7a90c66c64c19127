package io.quiver.spark.read;

import io.quiver.FileIdentity;
import io.quiver.QuiverFile;
import io.quiver.QuiverWriter;
import io.quiver.WriterOptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampNanoTZVector;
import org.apache.arrow.vector.TimeStampNanoVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
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
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * The one place the Spark tests write Quiver files: a generic writer
 * ({@link #write}: batches filled by the caller, row groups of a given size),
 * and on it files of every type a scan delivers to Spark, with the value of
 * each cell a function of its row so tests can check what Spark reads against
 * the same functions; int64 files; the driver tests' id/x/name and nested
 * files; and files of a Spark DataFrame's rows. Also read configurations.
 */
public final class ReadTestFiles {
    private ReadTestFiles() {}

    /** Fills rows [first, first + n) of a file into an allocated root; the writer sets the row count. */
    @FunctionalInterface
    public interface Rows {
        void fill(VectorSchemaRoot root, long first, int n);
    }

    /**
     * Writes {@code rows} rows of {@code schema} to {@code p} (creating its
     * folder), in batches of {@code batchRows} filled by {@code fill}, row
     * groups of {@code rowGroupRows} rows (the writer cuts them exactly, so
     * the batch size does not shape the file). A file without rows gets one
     * empty batch. Returns the file's identity.
     */
    public static FileIdentity write(Path p, Schema schema, long rows, int batchRows, long rowGroupRows, Rows fill) {
        try {
            Files.createDirectories(p.toAbsolutePath().getParent());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema,
                        WriterOptions.builder().rowGroupRows(rowGroupRows).build())) {
            long start = 0;
            do {
                int n = (int) Math.min(batchRows, rows - start);
                root.allocateNew();
                fill.fill(root, start, n);
                root.setRowCount(n);
                w.write(root);
                start += n;
            } while (start < rows);
            w.finish();
        }
        try (QuiverFile f = QuiverFile.open(p)) {
            return f.identity();
        }
    }

    // ---- the values of row r ----

    static Integer i32(long r) {
        return r % 7 == 0 ? null : (int) (r * 3 - 1000);
    }

    static boolean flag(long r) {
        return r % 3 == 0;
    }

    static double d(long r) {
        return r % 11 == 0 ? Double.NaN : r * 0.5;
    }

    static String s(long r) {
        if (r % 5 == 0) {
            return null;
        }
        return (r % 13 == 0 ? "é" : "s") + r;
    }

    /** decimal(38, 2): 36-digit values, negative on odd rows. */
    static BigDecimal dec(long r) {
        if (r % 9 == 0) {
            return null;
        }
        BigDecimal v = new BigDecimal(BigInteger.TEN.pow(35).add(BigInteger.valueOf(r)), 2);
        return r % 2 == 1 ? v.negate() : v;
    }

    static int day(long r) {
        return (int) (r - 1000);
    }

    static long tsUsUtc(long r) {
        return 1_700_000_000_000_000L + r * 1_000_001L;
    }

    /** Nanoseconds, whole microseconds (the Spark cast to microseconds keeps them exactly). */
    static long tsNs(long r) {
        return 1_600_000_000_000_000_000L + r * 1_000_003_000L;
    }

    static Long tsNsUtc(long r) {
        return r % 4 == 0 ? null : -86_400_000_000_000L + r * 7_000L;
    }

    static boolean stNull(long r) {
        return r % 6 == 0;
    }

    static String stB(long r) {
        return r % 4 == 0 ? null : "b" + r;
    }

    static List<Long> list(long r) {
        if (r % 8 == 0) {
            return null;
        }
        List<Long> l = new ArrayList<>();
        for (int k = 0; k < r % 4; k++) {
            l.add(r * 10 + k);
        }
        return l;
    }

    static Schema typesSchema() {
        return typesSchema(true);
    }

    /** The typed columns; without the struct and list columns when !nested. */
    static Schema typesSchema(boolean nested) {
        FieldType i32 = FieldType.nullable(new ArrowType.Int(32, true));
        FieldType i64 = FieldType.nullable(new ArrowType.Int(64, true));
        FieldType utf8 = FieldType.nullable(ArrowType.Utf8.INSTANCE);
        List<Field> all = List.of(
                new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                new Field("i32", i32, null),
                new Field("flag", FieldType.nullable(ArrowType.Bool.INSTANCE), null),
                new Field("d", FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)), null),
                new Field("s", utf8, null),
                new Field("dec", FieldType.nullable(new ArrowType.Decimal(38, 2, 128)), null),
                new Field("day", FieldType.nullable(new ArrowType.Date(DateUnit.DAY)), null),
                new Field("ts_us_utc", FieldType.nullable(new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")), null),
                new Field("ts_ns", FieldType.nullable(new ArrowType.Timestamp(TimeUnit.NANOSECOND, null)), null),
                new Field("ts_ns_utc", FieldType.nullable(new ArrowType.Timestamp(TimeUnit.NANOSECOND, "UTC")), null),
                new Field("st", FieldType.nullable(ArrowType.Struct.INSTANCE),
                        List.of(new Field("a", i32, null), new Field("b", utf8, null))),
                new Field("l", FieldType.nullable(ArrowType.List.INSTANCE), List.of(new Field("item", i64, null))));
        return new Schema(nested ? all : all.subList(0, all.size() - 2));
        // No map column: QuiverWriter.write's Arrow validation
        // (ValueVector.validate) refuses every MapVector in Arrow Java 19
        // ("Incorrect arrow type for class MapVector: Map(false)"), so
        // QuiverWriter cannot write maps today (reported, not ours to fix).
    }

    /** Spark's schema of those columns after Cast.SPARK. */
    static StructType typesSparkSchema() {
        return new StructType()
                .add("id", DataTypes.LongType, false)
                .add("i32", DataTypes.IntegerType)
                .add("flag", DataTypes.BooleanType)
                .add("d", DataTypes.DoubleType)
                .add("s", DataTypes.StringType)
                .add("dec", DataTypes.createDecimalType(38, 2))
                .add("day", DataTypes.DateType)
                .add("ts_us_utc", DataTypes.TimestampType)
                .add("ts_ns", DataTypes.TimestampNTZType)
                .add("ts_ns_utc", DataTypes.TimestampType)
                .add("st", new StructType().add("a", DataTypes.IntegerType).add("b", DataTypes.StringType))
                .add("l", DataTypes.createArrayType(DataTypes.LongType));
    }

    /** Writes rows [first, first + rows) of the typed columns. */
    static FileIdentity writeTypes(Path p, long first, int rows, long rowGroupRows) {
        return writeTypes(p, first, rows, rowGroupRows, true);
    }

    static FileIdentity writeTypes(Path p, long first, int rows, long rowGroupRows, boolean nested) {
        return write(p, typesSchema(nested), rows, 1000, rowGroupRows, (root, start, n) -> fill(root, first + start, n));
    }

    private static void fill(VectorSchemaRoot root, long first, int n) {
        BigIntVector id = (BigIntVector) root.getVector("id");
        IntVector i32 = (IntVector) root.getVector("i32");
        BitVector flag = (BitVector) root.getVector("flag");
        Float8Vector d = (Float8Vector) root.getVector("d");
        VarCharVector s = (VarCharVector) root.getVector("s");
        DecimalVector dec = (DecimalVector) root.getVector("dec");
        DateDayVector day = (DateDayVector) root.getVector("day");
        TimeStampMicroTZVector tsUs = (TimeStampMicroTZVector) root.getVector("ts_us_utc");
        TimeStampNanoVector tsNs = (TimeStampNanoVector) root.getVector("ts_ns");
        TimeStampNanoTZVector tsNsUtc = (TimeStampNanoTZVector) root.getVector("ts_ns_utc");
        StructVector st = (StructVector) root.getVector("st");
        ListVector l = (ListVector) root.getVector("l");
        boolean nested = st != null;
        IntVector stA = nested ? st.getChild("a", IntVector.class) : null;
        VarCharVector stB = nested ? st.getChild("b", VarCharVector.class) : null;
        BigIntVector item = nested ? (BigIntVector) l.getDataVector() : null;
        int items = 0;
        for (int i = 0; i < n; i++) {
            long r = first + i;
            id.setSafe(i, r);
            if (i32(r) == null) {
                i32.setNull(i);
            } else {
                i32.setSafe(i, i32(r));
            }
            flag.setSafe(i, flag(r) ? 1 : 0);
            d.setSafe(i, d(r));
            if (s(r) == null) {
                s.setNull(i);
            } else {
                s.setSafe(i, s(r).getBytes(StandardCharsets.UTF_8));
            }
            if (dec(r) == null) {
                dec.setNull(i);
            } else {
                dec.setSafe(i, dec(r));
            }
            day.setSafe(i, day(r));
            tsUs.setSafe(i, tsUsUtc(r));
            tsNs.setSafe(i, tsNs(r));
            if (tsNsUtc(r) == null) {
                tsNsUtc.setNull(i);
            } else {
                tsNsUtc.setSafe(i, tsNsUtc(r));
            }
            if (!nested) {
                continue;
            }
            if (stNull(r)) {
                st.setNull(i);
                stA.setNull(i);
                stB.setNull(i);
            } else {
                st.setIndexDefined(i);
                stA.setSafe(i, (int) r);
                if (stB(r) == null) {
                    stB.setNull(i);
                } else {
                    stB.setSafe(i, stB(r).getBytes(StandardCharsets.UTF_8));
                }
            }
            List<Long> lv = list(r);
            if (lv == null) {
                l.setNull(i);
            } else {
                l.startNewValue(i);
                for (Long x : lv) {
                    item.setSafe(items++, x);
                }
                l.endValue(i, lv.size());
            }
        }
        if (nested) {
            item.setValueCount(items);
        }
    }

    /** `columns` int64 columns c0.. of `rows` rows; c_k of row r holds r * (k + 1). */
    public static FileIdentity writeLongs(Path p, int columns, int rows, long rowGroupRows) {
        List<Field> fields = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            fields.add(new Field("c" + c, FieldType.notNullable(new ArrowType.Int(64, true)), null));
        }
        return write(p, new Schema(fields), rows, 65536, rowGroupRows, (root, start, n) -> {
            for (int c = 0; c < columns; c++) {
                BigIntVector v = (BigIntVector) root.getVector(c);
                for (int i = 0; i < n; i++) {
                    v.setSafe(i, (start + i) * (c + 1));
                }
            }
        });
    }

    // ---- the driver tests' files ----

    static final Field ID = new Field("id", FieldType.nullable(new ArrowType.Int(64, true)), null);
    static final Field X = new Field("x", FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
            null);
    static final Field NAME = new Field("name", FieldType.nullable(new ArrowType.Utf8()), null);

    /**
     * Writes {@code rows} rows of {@code fields} (each an int64, float64 or
     * utf8 column) to {@code path}, rows {@code first..first+rows-1}: id = r,
     * x = r / 2.0 (null when r % 10 == 9), name = "n" + r; row groups of
     * {@code rowGroupRows} rows.
     */
    static Path write(Path path, List<Field> fields, long first, int rows, long rowGroupRows) {
        write(path, new Schema(fields), rows, 1000, rowGroupRows, (root, start, n) -> {
            for (int c = 0; c < fields.size(); c++) {
                Object v = root.getVector(c);
                for (int i = 0; i < n; i++) {
                    long r = first + start + i;
                    if (v instanceof BigIntVector b) {
                        b.setSafe(i, r);
                    } else if (v instanceof Float8Vector d) {
                        if (r % 10 == 9) {
                            d.setNull(i);
                        } else {
                            d.setSafe(i, r / 2.0);
                        }
                    } else if (v instanceof VarCharVector s) {
                        s.setSafe(i, ("n" + r).getBytes(StandardCharsets.UTF_8));
                    }
                }
            }
        });
        return path;
    }

    /**
     * {@code rows} rows of id int64 (= r), s struct{a int64 (= 10 r), b utf8
     * ("b" + r)} and ts timestamp[ns] without zone (r seconds + 1 ns), in
     * one row group.
     */
    static Path writeNested(Path path, int rows) {
        Field a = new Field("a", FieldType.nullable(new ArrowType.Int(64, true)), null);
        Field b = new Field("b", FieldType.nullable(new ArrowType.Utf8()), null);
        Field st = new Field("s", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(a, b));
        Field ts = new Field("ts", FieldType.nullable(new ArrowType.Timestamp(TimeUnit.NANOSECOND, null)), null);
        // One batch; row groups of 0 rows mean the writer's default (131,072), so one group.
        write(path, new Schema(List.of(ID, st, ts)), rows, Math.max(rows, 1), 0, (root, start, n) -> {
            BigIntVector id = (BigIntVector) root.getVector("id");
            StructVector sv = (StructVector) root.getVector("s");
            BigIntVector av = (BigIntVector) sv.getChild("a");
            VarCharVector bv = (VarCharVector) sv.getChild("b");
            TimeStampNanoVector tv = (TimeStampNanoVector) root.getVector("ts");
            for (int r = 0; r < n; r++) {
                id.setSafe(r, r);
                sv.setIndexDefined(r);
                av.setSafe(r, 10L * r);
                bv.setSafe(r, ("b" + r).getBytes(StandardCharsets.UTF_8));
                tv.setSafe(r, r * 1_000_000_000L + 1);
            }
        });
        return path;
    }

    // ---- a Spark DataFrame's rows ----

    /**
     * Writes the rows of `df` as Quiver files part-0.qvr .. part-(files-1).qvr
     * in `dir` (rows dealt out in order), row groups of `rowGroupRows` rows.
     * The Arrow schema is Spark's mapping of df's schema (ArrowUtils), the
     * vectors are filled by Spark's ArrowWriter: the same conversion Spark
     * uses for Arrow itself, nothing of Quiver's.
     */
    public static void writeQuiver(Dataset<Row> df, Path dir, int files, long rowGroupRows) {
        InternalRow[] rows = df.queryExecution().executedPlan().executeCollect();
        String zone = df.sparkSession().sessionState().conf().sessionLocalTimeZone();
        Schema schema = ArrowUtils.toArrowSchema(df.schema(), zone, true, false);
        int per = (rows.length + files - 1) / Math.max(files, 1);
        for (int f = 0; f < files; f++) {
            int from = Math.min(rows.length, f * per);
            int to = Math.min(rows.length, from + per);
            write(dir.resolve("part-" + f + ".qvr"), schema, to - from, 4096, rowGroupRows, (root, start, n) -> {
                ArrowWriter writer = ArrowWriter.create(root);
                for (int i = 0; i < n; i++) {
                    writer.write(rows[from + (int) start + i]);
                }
                writer.finish();
            });
        }
    }

    static ReadConfig config(StructType data, StructType partitions, List<String> columns, String filter, long limit) {
        return new ReadConfig(data, partitions, columns, filter, limit, 512, 2, 2, false, false);
    }

    static ReadConfig withIgnore(ReadConfig c, boolean missing, boolean corrupt) {
        return new ReadConfig(c.dataSchema(), c.partitionSchema(), c.columns(), c.filter(), c.limit(),
                c.batchRows(), c.threads(), c.prefetch(), missing, corrupt);
    }
}
