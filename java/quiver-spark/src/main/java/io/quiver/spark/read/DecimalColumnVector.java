package io.quiver.spark.read;

import org.apache.arrow.vector.DecimalVector;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A decimal column of precision at most 18 over the scan's Arrow
 * decimal128 vector, read as Spark's vectorized Parquet reader reads its own:
 * the unscaled value as a long. Spark's {@code ArrowColumnVector} makes a
 * {@code java.math.BigDecimal} of every value it is asked for (Arrow Java's
 * {@code DecimalVector.getObject}) and converts that to a Spark Decimal,
 * which made TPC-H Q1 (four sums over decimals) twice as slow through Quiver
 * as through Parquet. Values of precision at most 18 fit in a long, and the
 * low eight bytes of Arrow's little-endian two's complement 128-bit value
 * are that long (the scan validated them against the precision). Like
 * {@link BorrowedArrowColumnVector}, closing it does nothing: the vector is
 * the reader's.
 */
final class DecimalColumnVector extends ColumnVector {
    /** The widest precision whose unscaled values always fit in a long. */
    static final int MAX_LONG_PRECISION = 18;

    private final DecimalVector vector;

    DecimalColumnVector(DecimalVector vector, DecimalType type) {
        super(type);
        if (type.precision() > MAX_LONG_PRECISION) {
            throw new IllegalArgumentException("decimal(" + type.precision() + ", " + type.scale()
                    + ") does not fit in a long");
        }
        this.vector = vector;
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        if (vector.isNull(rowId)) {
            return null;
        }
        long unscaled = vector.getDataBuffer().getLong((long) rowId * DecimalVector.TYPE_WIDTH);
        return Decimal.createUnsafe(unscaled, precision, scale);
    }

    @Override
    public boolean hasNull() {
        return vector.getNullCount() > 0;
    }

    @Override
    public int numNulls() {
        return vector.getNullCount();
    }

    @Override
    public boolean isNullAt(int rowId) {
        return vector.isNull(rowId);
    }

    @Override
    public void close() {
        // The reader's vector, not Spark's, to free.
    }

    @Override
    public void closeIfFreeable() {
        // As close().
    }

    private UnsupportedOperationException notDecimal() {
        return new UnsupportedOperationException("a " + type.simpleString() + " column read as another type");
    }

    @Override public boolean getBoolean(int rowId) { throw notDecimal(); }
    @Override public byte getByte(int rowId) { throw notDecimal(); }
    @Override public short getShort(int rowId) { throw notDecimal(); }
    @Override public int getInt(int rowId) { throw notDecimal(); }
    @Override public long getLong(int rowId) { throw notDecimal(); }
    @Override public float getFloat(int rowId) { throw notDecimal(); }
    @Override public double getDouble(int rowId) { throw notDecimal(); }
    @Override public ColumnarArray getArray(int rowId) { throw notDecimal(); }
    @Override public ColumnarMap getMap(int ordinal) { throw notDecimal(); }
    @Override public UTF8String getUTF8String(int rowId) { throw notDecimal(); }
    @Override public byte[] getBinary(int rowId) { throw notDecimal(); }
    @Override public ColumnVector getChild(int ordinal) { throw notDecimal(); }
}
