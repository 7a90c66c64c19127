package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Rows of every Spark type the writer takes, made from a seed (the same
 * seed gives equal rows, so a test can overwrite the rows it wrote and still
 * have the values to compare with), and a value-by-value comparison of
 * expected rows with rows read through Spark's own ArrowColumnVector.
 */
final class TestRows {
    private TestRows() {}

    /** Every type, nullable and not, nested in every way, nulls possible at every level. */
    static StructType everyType() {
        StructType inner = new StructType()
                .add("x", DataTypes.LongType, false)
                .add("y", DataTypes.createArrayType(DataTypes.StringType, true), true);
        StructType entry = new StructType()
                .add("k", DataTypes.StringType, true)
                .add("v", DataTypes.createDecimalType(20, 3), true);
        return new StructType()
                .add("b", DataTypes.BooleanType)
                .add("i8", DataTypes.ByteType)
                .add("i16", DataTypes.ShortType)
                .add("i32", DataTypes.IntegerType)
                .add("i64", DataTypes.LongType)
                .add("f32", DataTypes.FloatType)
                .add("f64", DataTypes.DoubleType)
                .add("d9", DataTypes.createDecimalType(9, 2))
                .add("d18", DataTypes.createDecimalType(18, 0))
                .add("d38", DataTypes.createDecimalType(38, 10))
                .add("s", DataTypes.StringType)
                .add("bin", DataTypes.BinaryType)
                .add("dt", DataTypes.DateType)
                .add("ts", DataTypes.TimestampType)
                .add("ntz", DataTypes.TimestampNTZType)
                .add("n", DataTypes.NullType)
                .add("nn_i64", DataTypes.LongType, false)
                .add("nn_s", DataTypes.StringType, false)
                .add("st", new StructType()
                        .add("a", DataTypes.IntegerType, true)
                        .add("s", DataTypes.StringType, true)
                        .add("inner", inner, false)
                        .add("d", DataTypes.createDecimalType(5, 2), false), true)
                .add("arr", DataTypes.createArrayType(DataTypes.IntegerType, true))
                .add("arr_nn", DataTypes.createArrayType(DataTypes.LongType, false))
                .add("arr_st", DataTypes.createArrayType(entry, true))
                .add("arr_arr", DataTypes.createArrayType(DataTypes.createArrayType(DataTypes.LongType, true), true))
                .add("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.IntegerType, true))
                .add("m_arr", DataTypes.createMapType(DataTypes.IntegerType,
                        DataTypes.createArrayType(DataTypes.BinaryType, true), false))
                .add("m_st", DataTypes.createMapType(DataTypes.LongType, inner, true))
                .add("arr_null", DataTypes.createArrayType(DataTypes.NullType, true));
    }

    /** {@code n} rows of {@code schema} from {@code seed}. */
    static List<GenericInternalRow> rows(StructType schema, int n, long seed) {
        Random r = new Random(seed);
        List<GenericInternalRow> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(row(schema, r));
        }
        return out;
    }

    static GenericInternalRow row(StructType schema, Random r) {
        StructField[] fs = schema.fields();
        Object[] values = new Object[fs.length];
        for (int i = 0; i < fs.length; i++) {
            values[i] = value(fs[i].dataType(), fs[i].nullable(), r, 0);
        }
        return new GenericInternalRow(values);
    }

    private static final String[] TEXT = {"", "a", "quiver", "ünïcödé ✓", "日本語のテキスト", "\u0000nul inside",
        "a longer string that spans more than a few bytes of the data buffer"};

    static Object value(DataType t, boolean nullable, Random r, int depth) {
        if (t instanceof NullType || (nullable && r.nextInt(5) == 0)) {
            return null;
        }
        if (t instanceof BooleanType) {
            return r.nextBoolean();
        } else if (t instanceof ByteType) {
            return (byte) r.nextInt();
        } else if (t instanceof ShortType) {
            return (short) r.nextInt();
        } else if (t instanceof IntegerType || t instanceof DateType) {
            int k = r.nextInt(8);
            return k == 0 ? Integer.MIN_VALUE : k == 1 ? Integer.MAX_VALUE : r.nextInt() / (t instanceof DateType ? 10000 : 1);
        } else if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
            int k = r.nextInt(8);
            return k == 0 ? Long.MIN_VALUE : k == 1 ? Long.MAX_VALUE : k == 2 ? -1L : r.nextLong();
        } else if (t instanceof FloatType) {
            float[] special = {Float.NaN, -0.0f, Float.NEGATIVE_INFINITY, Float.MIN_VALUE};
            return r.nextInt(5) == 0 ? special[r.nextInt(special.length)] : (r.nextFloat() - 0.5f) * 1e6f;
        } else if (t instanceof DoubleType) {
            double[] special = {Double.NaN, -0.0, Double.POSITIVE_INFINITY, Double.MAX_VALUE};
            return r.nextInt(5) == 0 ? special[r.nextInt(special.length)] : r.nextGaussian() * 1e12;
        } else if (t instanceof DecimalType d) {
            // Any unscaled value of up to precision digits, extremes included.
            BigInteger max = BigInteger.TEN.pow(d.precision()).subtract(BigInteger.ONE);
            BigInteger u;
            int k = r.nextInt(6);
            if (k == 0) {
                u = max;
            } else if (k == 1) {
                u = max.negate();
            } else {
                u = new BigInteger(d.precision() * 3, r).mod(max.add(BigInteger.ONE));
                if (r.nextBoolean()) {
                    u = u.negate();
                }
            }
            return Decimal.apply(new BigDecimal(u, d.scale()), d.precision(), d.scale());
        } else if (t instanceof StringType) {
            String s = TEXT[r.nextInt(TEXT.length)];
            return UTF8String.fromString(r.nextInt(4) == 0 ? s + r.nextInt(1000) : s);
        } else if (t instanceof BinaryType) {
            byte[] b = new byte[r.nextInt(depth == 0 ? 40 : 6)];
            r.nextBytes(b);
            return b;
        } else if (t instanceof StructType st) {
            StructField[] fs = st.fields();
            Object[] v = new Object[fs.length];
            for (int i = 0; i < fs.length; i++) {
                v[i] = value(fs[i].dataType(), fs[i].nullable(), r, depth + 1);
            }
            return new GenericInternalRow(v);
        } else if (t instanceof ArrayType at) {
            Object[] v = new Object[r.nextInt(depth == 0 ? 6 : 3)];
            for (int i = 0; i < v.length; i++) {
                v[i] = value(at.elementType(), at.containsNull(), r, depth + 1);
            }
            return new GenericArrayData(v);
        } else if (t instanceof MapType mt) {
            int n = r.nextInt(4);
            Object[] k = new Object[n];
            Object[] v = new Object[n];
            for (int i = 0; i < n; i++) {
                // Distinct keys, as Spark's maps have.
                k[i] = distinctKey(mt.keyType(), i, r);
                v[i] = value(mt.valueType(), mt.valueContainsNull(), r, depth + 1);
            }
            return new ArrayBasedMapData(new GenericArrayData(k), new GenericArrayData(v));
        }
        throw new IllegalArgumentException("no test values for " + t);
    }

    private static Object distinctKey(DataType t, int i, Random r) {
        if (t instanceof StringType) {
            return UTF8String.fromString("key-" + i + "-" + r.nextInt(100));
        } else if (t instanceof IntegerType) {
            return i * 1000 + r.nextInt(1000);
        } else if (t instanceof LongType) {
            return i * 1_000_000_000_000L - r.nextInt(1000);
        }
        throw new IllegalArgumentException("no test keys for " + t);
    }

    /** Spark's view of {@code root}'s rows, through ArrowColumnVector. */
    static ColumnarBatch asSpark(VectorSchemaRoot root) {
        List<FieldVector> vs = root.getFieldVectors();
        ColumnVector[] cols = new ColumnVector[vs.size()];
        for (int i = 0; i < cols.length; i++) {
            cols[i] = new ArrowColumnVector(vs.get(i));
        }
        return new ColumnarBatch(cols, root.getRowCount());
    }

    /** Asserts {@code batch} holds {@code expected} from row {@code from} on. */
    static void assertRows(StructType schema, List<? extends InternalRow> expected, int from, ColumnarBatch batch) {
        assertTrue(batch.numRows() > 0, "an empty batch compares nothing");
        for (int i = 0; i < batch.numRows(); i++) {
            assertRow(schema, expected.get(from + i), batch.getRow(i), "row " + (from + i));
        }
    }

    static void assertRow(StructType schema, InternalRow expected, InternalRow actual, String where) {
        StructField[] fs = schema.fields();
        for (int i = 0; i < fs.length; i++) {
            assertValue(fs[i].dataType(), expected, i, actual, i, where + ", " + fs[i].name());
        }
    }

    static void assertValue(DataType t, SpecializedGetters e, int ei, SpecializedGetters a, int ai, String where) {
        if (t instanceof NullType) {
            assertTrue(a.isNullAt(ai), where + ": null column holds a value");
            return;
        }
        assertEquals(e.isNullAt(ei), a.isNullAt(ai), where + ": nullness");
        if (e.isNullAt(ei)) {
            return;
        }
        if (t instanceof BooleanType) {
            assertEquals(e.getBoolean(ei), a.getBoolean(ai), where);
        } else if (t instanceof ByteType) {
            assertEquals(e.getByte(ei), a.getByte(ai), where);
        } else if (t instanceof ShortType) {
            assertEquals(e.getShort(ei), a.getShort(ai), where);
        } else if (t instanceof IntegerType || t instanceof DateType) {
            assertEquals(e.getInt(ei), a.getInt(ai), where);
        } else if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
            assertEquals(e.getLong(ei), a.getLong(ai), where);
        } else if (t instanceof FloatType) {
            assertEquals(Float.floatToRawIntBits(e.getFloat(ei)), Float.floatToRawIntBits(a.getFloat(ai)), where);
        } else if (t instanceof DoubleType) {
            assertEquals(Double.doubleToRawLongBits(e.getDouble(ei)), Double.doubleToRawLongBits(a.getDouble(ai)), where);
        } else if (t instanceof DecimalType d) {
            assertEquals(e.getDecimal(ei, d.precision(), d.scale()).toJavaBigDecimal(),
                    a.getDecimal(ai, d.precision(), d.scale()).toJavaBigDecimal(), where);
        } else if (t instanceof StringType) {
            assertEquals(e.getUTF8String(ei).toString(), a.getUTF8String(ai).toString(), where);
        } else if (t instanceof BinaryType) {
            assertArrayEquals(e.getBinary(ei), a.getBinary(ai), where);
        } else if (t instanceof StructType st) {
            StructField[] fs = st.fields();
            InternalRow es = e.getStruct(ei, fs.length);
            InternalRow as = a.getStruct(ai, fs.length);
            for (int i = 0; i < fs.length; i++) {
                assertValue(fs[i].dataType(), es, i, as, i, where + "." + fs[i].name());
            }
        } else if (t instanceof ArrayType at) {
            assertArray(at.elementType(), e.getArray(ei), a.getArray(ai), where);
        } else if (t instanceof MapType mt) {
            MapData em = e.getMap(ei);
            MapData am = a.getMap(ai);
            assertArray(mt.keyType(), em.keyArray(), am.keyArray(), where + ".key");
            assertArray(mt.valueType(), em.valueArray(), am.valueArray(), where + ".value");
        } else {
            throw new IllegalArgumentException("no comparison for " + t);
        }
    }

    private static void assertArray(DataType t, ArrayData e, ArrayData a, String where) {
        assertEquals(e.numElements(), a.numElements(), where + ": element count");
        for (int i = 0; i < e.numElements(); i++) {
            assertValue(t, e, i, a, i, where + "[" + i + "]");
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
