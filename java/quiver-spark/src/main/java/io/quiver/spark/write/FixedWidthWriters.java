package io.quiver.spark.write;

import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.unsafe.Platform;

/**
 * The writers of Spark's fixed-width primitive types, each reading its
 * value with the getter of its type and storing it at the slot's address.
 * Dates are Spark ints (days since the epoch) and timestamps Spark longs
 * (microseconds), exactly Arrow's date32 and timestamp[us]: they use the
 * int and long writers.
 */
final class FixedWidthWriters {
    private FixedWidthWriters() {}

    /** Booleans: one bit per value, like validity. */
    static final class Bool extends FixedWidthWriter {
        Bool(BitVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            boolean v = in.getBoolean(ordinal);
            ensure(slot);
            if (v) {
                long a = values + (slot >>> 3);
                Platform.putByte(null, a, (byte) (Platform.getByte(null, a) | (1 << (slot & 7))));
            }
            setValid(slot);
        }
    }

    static final class Int8 extends FixedWidthWriter {
        Int8(BaseFixedWidthVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            byte v = in.getByte(ordinal);
            ensure(slot);
            Platform.putByte(null, values + slot, v);
            setValid(slot);
        }
    }

    static final class Int16 extends FixedWidthWriter {
        Int16(BaseFixedWidthVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            short v = in.getShort(ordinal);
            ensure(slot);
            Platform.putShort(null, values + 2L * slot, v);
            setValid(slot);
        }
    }

    /** int32, and dates (days). */
    static final class Int32 extends FixedWidthWriter {
        Int32(BaseFixedWidthVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            int v = in.getInt(ordinal);
            ensure(slot);
            Platform.putInt(null, values + 4L * slot, v);
            setValid(slot);
        }
    }

    /** int64, and timestamps (microseconds). */
    static final class Int64 extends FixedWidthWriter {
        Int64(BaseFixedWidthVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            long v = in.getLong(ordinal);
            ensure(slot);
            Platform.putLong(null, values + 8L * slot, v);
            setValid(slot);
        }
    }

    static final class Float32 extends FixedWidthWriter {
        Float32(BaseFixedWidthVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            float v = in.getFloat(ordinal);
            ensure(slot);
            Platform.putFloat(null, values + 4L * slot, v);
            setValid(slot);
        }
    }

    static final class Float64 extends FixedWidthWriter {
        Float64(BaseFixedWidthVector vector, String path, boolean nullable) {
            super(vector, path, nullable);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            double v = in.getDouble(ordinal);
            ensure(slot);
            Platform.putDouble(null, values + 8L * slot, v);
            setValid(slot);
        }
    }
}
