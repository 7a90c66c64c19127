package io.quiver.bench;

import java.util.Random;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rows of the writer-alone benchmark: one schema and a pool of distinct
 * rows made once, before any measurement, by Spark's {@link UnsafeProjection}
 * and kept as the bytes of their UnsafeRows in one array. {@link #feed} hands
 * them to a writer through ONE {@link UnsafeRow} pointed at each row in turn,
 * as Spark's projections reuse their output row: a writer that kept a
 * reference instead of copying would see its rows change under it, and the
 * loop itself allocates nothing, so what the thread allocates while feeding
 * is the writer's.
 *
 * <p>The values are deterministic (a fixed seed) and varied enough that
 * neither format sees a trivially constant column: ids, random longs over
 * several ranges, doubles, short strings from a small vocabulary (dictionary
 * friendly, like l_shipmode) and free text (like l_comment), some nulls.
 * When the benchmark writes more rows than the pool holds, the pool repeats.
 */
final class WriteRows {
    /** The four schemas of issue 13's benchmark. */
    enum Kind {
        LONGS5("5 longs"), NUMERIC100("100 numeric columns"), STRINGS4("long + 4 strings"),
        NESTED("struct/array/map"), EVERY_TYPE("every type");

        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    private static final String[] WORDS = {"AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "REG AIR", "FOB",
        "DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN", "furiously", "quickly", "carefully",
        "blithely", "regular", "express", "pending", "final", "ironic", "deposits", "accounts", "packages"};

    final Kind kind;
    final StructType schema;
    private final byte[] bytes;
    private final int[] offsets; // row i is bytes[offsets[i], offsets[i + 1])

    private WriteRows(Kind kind, StructType schema, byte[] bytes, int[] offsets) {
        this.kind = kind;
        this.schema = schema;
        this.bytes = bytes;
        this.offsets = offsets;
    }

    int distinct() {
        return offsets.length - 1;
    }

    /** Bytes of the pool's UnsafeRows per row, on average (what Spark hands a writer). */
    double unsafeBytesPerRow() {
        return (double) offsets[offsets.length - 1] / distinct();
    }

    /** Something that takes rows: a writer under measurement. */
    interface Sink {
        void write(InternalRow row) throws Exception;
    }

    /** Feeds {@code n} rows to {@code sink} through one reused UnsafeRow. */
    void feed(long n, Sink sink) throws Exception {
        UnsafeRow row = new UnsafeRow(schema.size());
        int k = distinct();
        int i = 0;
        for (long r = 0; r < n; r++) {
            row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + offsets[i], offsets[i + 1] - offsets[i]);
            sink.write(row);
            if (++i == k) {
                i = 0;
            }
        }
    }

    /** Makes {@code distinct} rows of {@code kind} (seeded: the same rows every run). */
    static WriteRows make(Kind kind, int distinct) {
        StructType schema = schema(kind);
        UnsafeProjection project = UnsafeProjection.create(schema);
        Random rnd = new Random(42 + kind.ordinal());
        GenericInternalRow g = new GenericInternalRow(schema.size());
        int[] offsets = new int[distinct + 1];
        byte[] buf = new byte[1 << 20];
        int used = 0;
        for (int i = 0; i < distinct; i++) {
            fill(kind, schema, g, i, rnd);
            UnsafeRow u = project.apply(g);
            int size = u.getSizeInBytes();
            if (used + size > buf.length) {
                long grown = Math.max((long) buf.length * 2, (long) used + size);
                if (grown > Integer.MAX_VALUE - 16) {
                    throw new IllegalArgumentException(distinct + " rows of " + kind.label + " exceed 2 GiB");
                }
                buf = java.util.Arrays.copyOf(buf, (int) grown);
            }
            u.writeToMemory(buf, Platform.BYTE_ARRAY_OFFSET + used);
            used += size;
            offsets[i + 1] = used;
        }
        return new WriteRows(kind, schema, java.util.Arrays.copyOf(buf, used), offsets);
    }

    static StructType schema(Kind kind) {
        StructType s = new StructType();
        switch (kind) {
            case LONGS5 -> {
                for (String n : new String[] {"id", "key", "small", "time", "amount"}) {
                    s = s.add(n, DataTypes.LongType, false);
                }
            }
            case NUMERIC100 -> {
                DataType[] types = {DataTypes.IntegerType, DataTypes.LongType, DataTypes.DoubleType,
                    DataTypes.FloatType, DataTypes.LongType, DataTypes.DoubleType, DataTypes.IntegerType,
                    DataTypes.ShortType, DataTypes.DoubleType, DataTypes.ByteType};
                for (int c = 0; c < 100; c++) {
                    s = s.add("c" + c, types[c % types.length], true);
                }
            }
            case STRINGS4 -> s = s.add("id", DataTypes.LongType, false).add("mode", DataTypes.StringType, false)
                    .add("comment", DataTypes.StringType, true).add("uuid", DataTypes.StringType, false)
                    .add("code", DataTypes.StringType, true);
            case NESTED -> s = s.add("id", DataTypes.LongType, false)
                    .add("s", new StructType().add("a", DataTypes.IntegerType, true)
                            .add("b", DataTypes.StringType, true).add("c", DataTypes.DoubleType, true), true)
                    .add("xs", DataTypes.createArrayType(DataTypes.LongType, true), true)
                    .add("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType, true), true);
            case EVERY_TYPE -> s = s.add("p", DataTypes.IntegerType, false)
                    .add("bool", DataTypes.BooleanType, true).add("i8", DataTypes.ByteType, true)
                    .add("i16", DataTypes.ShortType, true).add("i32", DataTypes.IntegerType, true)
                    .add("i64", DataTypes.LongType, true).add("f32", DataTypes.FloatType, true)
                    .add("f64", DataTypes.DoubleType, true).add("dec", DataTypes.createDecimalType(12, 2), true)
                    .add("wide", DataTypes.createDecimalType(38, 6), true).add("str", DataTypes.StringType, true)
                    .add("bin", DataTypes.BinaryType, true).add("day", DataTypes.DateType, true)
                    .add("ts", DataTypes.TimestampType, true).add("ntz", DataTypes.TimestampNTZType, true)
                    .add("s", new StructType().add("a", DataTypes.IntegerType, true)
                            .add("b", DataTypes.StringType, true), true)
                    .add("xs", DataTypes.createArrayType(DataTypes.LongType, true), true)
                    .add("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType, true), true);
        }
        return s;
    }

    private static void fill(Kind kind, StructType schema, GenericInternalRow g, int i, Random rnd) {
        switch (kind) {
            case LONGS5 -> {
                g.setLong(0, i);
                g.setLong(1, rnd.nextLong());
                g.setLong(2, rnd.nextInt(1000));
                g.setLong(3, 1_700_000_000_000_000L + i * 1_000_000L + rnd.nextInt(1_000_000));
                g.setLong(4, rnd.nextInt(10_000_000));
            }
            case NUMERIC100 -> {
                for (int c = 0; c < 100; c++) {
                    // Every tenth column has 5% nulls; the rest none.
                    if (c % 10 == 9 && rnd.nextInt(20) == 0) {
                        g.setNullAt(c);
                        continue;
                    }
                    g.update(c, numeric(schema.fields()[c].dataType(), c, i, rnd));
                }
            }
            case STRINGS4 -> {
                g.setLong(0, i);
                g.update(1, UTF8String.fromString(WORDS[rnd.nextInt(11)]));
                g.update(2, rnd.nextInt(50) == 0 ? null : UTF8String.fromString(text(rnd, 10, 43)));
                g.update(3, UTF8String.fromString(new java.util.UUID(rnd.nextLong(), rnd.nextLong()).toString()));
                g.update(4, rnd.nextInt(50) == 0 ? null : UTF8String.fromString("C" + rnd.nextInt(5000)));
            }
            case NESTED -> {
                g.setLong(0, i);
                g.update(1, rnd.nextInt(20) == 0 ? null : struct3(rnd));
                g.update(2, rnd.nextInt(20) == 0 ? null : longs(rnd, 8));
                g.update(3, rnd.nextInt(20) == 0 ? null : map(rnd, 4));
            }
            case EVERY_TYPE -> {
                g.setInt(0, i);
                for (int c = 1; c < schema.size(); c++) {
                    if (rnd.nextInt(10) == 0) {
                        g.setNullAt(c);
                        continue;
                    }
                    g.update(c, switch (c) {
                        case 1 -> rnd.nextBoolean();
                        case 2 -> (byte) rnd.nextInt();
                        case 3 -> (short) rnd.nextInt();
                        case 4 -> rnd.nextInt();
                        case 5 -> rnd.nextLong();
                        case 6 -> rnd.nextFloat();
                        case 7 -> rnd.nextDouble();
                        case 8 -> Decimal.apply(rnd.nextInt(100_000_000), 12, 2);
                        case 9 -> Decimal.apply(new java.math.BigDecimal(new java.math.BigInteger(100, rnd), 6), 38, 6);
                        case 10 -> UTF8String.fromString(text(rnd, 0, 30));
                        case 11 -> text(rnd, 0, 16).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                        case 12 -> 10_000 + rnd.nextInt(5000);
                        case 13, 14 -> 1_700_000_000_000_000L + rnd.nextInt() * 1000L;
                        case 15 -> new GenericInternalRow(new Object[] {rnd.nextInt(),
                            UTF8String.fromString(WORDS[rnd.nextInt(WORDS.length)])});
                        case 16 -> longs(rnd, 5);
                        default -> map(rnd, 3);
                    });
                }
            }
        }
    }

    private static Object numeric(DataType t, int c, int i, Random rnd) {
        if (t == DataTypes.IntegerType) {
            return c % 3 == 0 ? i : rnd.nextInt(1 << (8 + c % 20));
        } else if (t == DataTypes.LongType) {
            return c % 3 == 0 ? 1_000_000_000L * c + i : rnd.nextLong() >> (c % 40);
        } else if (t == DataTypes.DoubleType) {
            return c % 3 == 0 ? Math.round(rnd.nextDouble() * 10_000) / 100.0 : rnd.nextGaussian() * c;
        } else if (t == DataTypes.FloatType) {
            return rnd.nextFloat() * c;
        } else if (t == DataTypes.ShortType) {
            return (short) rnd.nextInt(1 << 12);
        } else {
            return (byte) rnd.nextInt(100);
        }
    }

    private static String text(Random rnd, int min, int max) {
        int len = min + rnd.nextInt(max - min + 1);
        StringBuilder b = new StringBuilder(len + 16);
        while (b.length() < len) {
            b.append(WORDS[11 + rnd.nextInt(WORDS.length - 11)]).append(' ');
        }
        b.setLength(len);
        return b.toString();
    }

    private static InternalRow struct3(Random rnd) {
        return new GenericInternalRow(new Object[] {rnd.nextInt(10) == 0 ? null : rnd.nextInt(1000),
            UTF8String.fromString(WORDS[rnd.nextInt(WORDS.length)]), rnd.nextDouble()});
    }

    private static GenericArrayData longs(Random rnd, int max) {
        Object[] xs = new Object[rnd.nextInt(max + 1)];
        for (int j = 0; j < xs.length; j++) {
            xs[j] = rnd.nextInt(20) == 0 ? null : (Object) (long) rnd.nextInt(100_000);
        }
        return new GenericArrayData(xs);
    }

    private static ArrayBasedMapData map(Random rnd, int max) {
        int n = rnd.nextInt(max + 1);
        Object[] keys = new Object[n];
        Object[] values = new Object[n];
        for (int j = 0; j < n; j++) {
            keys[j] = UTF8String.fromString("k" + j); // distinct within a map, as Spark requires
            values[j] = rnd.nextInt(10) == 0 ? null : (Object) rnd.nextLong();
        }
        return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
    }
}
