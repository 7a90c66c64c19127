package io.quiver.spark.write;

import java.math.BigDecimal;
import java.math.BigInteger;

import org.apache.arrow.vector.DecimalVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.Platform;

/**
 * Decimals into Arrow's decimal128: the unscaled value as a 16-byte
 * little-endian two's complement integer.
 *
 * <p>A decimal of precision up to 18 has an unscaled value that fits a
 * long. Spark's unsafe rows and arrays hold exactly that long, so it is
 * read with {@code getLong} (no {@link Decimal} object is made) and stored
 * sign-extended; other rows hold a {@link Decimal}, whose unscaled long is
 * taken when its scale is the column's. Wider decimals are kept by unsafe
 * rows and arrays as the big-endian two's complement bytes of the unscaled
 * value (at most 16): they are read from there into the two longs of the
 * slot, again without an object; other rows' wider decimals go through
 * {@link BigDecimal}. Either way a value outside the column's precision,
 * or one whose scale cannot be made the column's without rounding, is an
 * error naming the value, never written rounded or wrapped.
 */
abstract class DecimalWriter extends FixedWidthWriter {
    /** Spark's largest precision whose unscaled values fit a long. */
    static final int MAX_LONG_PRECISION = 18;

    final int precision;
    final int scale;

    DecimalWriter(DecimalVector vector, String path, boolean nullable, int precision, int scale) {
        super(vector, path, nullable);
        this.precision = precision;
        this.scale = scale;
    }

    static DecimalWriter of(DecimalVector vector, String path, boolean nullable, int precision, int scale) {
        return precision <= MAX_LONG_PRECISION
                ? new Compact(vector, path, nullable, precision, scale)
                : new Wide(vector, path, nullable, precision, scale);
    }

    /** Stores {@code lo} and {@code hi} (the high 64 bits) into {@code slot}. */
    final void store(int slot, long lo, long hi) {
        ensure(slot);
        long a = values + 16L * slot;
        Platform.putLong(null, a, lo);
        Platform.putLong(null, a + 8, hi);
        setValid(slot);
    }

    /** {@code d} at the column's scale, or an error if that needs rounding. */
    final BigDecimal atScale(BigDecimal d) {
        if (d.scale() == scale) {
            return d;
        }
        try {
            return d.setScale(scale);
        } catch (ArithmeticException e) {
            throw new FieldWriteException(path, "value " + d.toPlainString() + " does not fit "
                    + type() + " without rounding");
        }
    }

    final FieldWriteException overflow(String value) {
        return new FieldWriteException(path, "value " + value + " does not fit " + type());
    }

    final String type() {
        return "decimal(" + precision + ", " + scale + ")";
    }

    /** Precision up to 18: the unscaled long, sign-extended. */
    static final class Compact extends DecimalWriter {
        /** 10^precision: unscaled values lie strictly between -bound and bound. */
        private final long bound;

        Compact(DecimalVector vector, String path, boolean nullable, int precision, int scale) {
            super(vector, path, nullable, precision, scale);
            this.bound = BigInteger.TEN.pow(precision).longValueExact();
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            long unscaled;
            if (in instanceof UnsafeRow || in instanceof UnsafeArrayData) {
                unscaled = in.getLong(ordinal);
            } else {
                unscaled = unscaled(in.getDecimal(ordinal, precision, scale));
            }
            if (unscaled >= bound || unscaled <= -bound) {
                throw overflow(BigDecimal.valueOf(unscaled, scale).toPlainString());
            }
            store(slot, unscaled, unscaled >> 63);
        }

        private long unscaled(Decimal d) {
            if (d.scale() == scale && d.precision() <= MAX_LONG_PRECISION) {
                return d.toUnscaledLong();
            }
            // Another scale or a wide representation: exact arithmetic,
            // off the common path.
            BigInteger u = atScale(d.toJavaBigDecimal()).unscaledValue();
            if (u.bitLength() > 63) {
                throw overflow(d.toJavaBigDecimal().toPlainString());
            }
            return u.longValue();
        }
    }

    /** Precision above 18: from an unsafe row's bytes, or through BigDecimal. */
    static final class Wide extends DecimalWriter {
        /** 10^precision as a 128-bit integer: magnitudes must lie below it. */
        private final long boundHi;
        private final long boundLo;

        Wide(DecimalVector vector, String path, boolean nullable, int precision, int scale) {
            super(vector, path, nullable, precision, scale);
            BigInteger bound = BigInteger.TEN.pow(precision);
            this.boundLo = bound.longValue();
            this.boundHi = bound.shiftRight(64).longValue();
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            if (in instanceof UnsafeRow r) {
                long offsetAndSize = r.getLong(ordinal);
                fromBytes(slot, r.getBaseObject(), r.getBaseOffset() + (int) (offsetAndSize >> 32), (int) offsetAndSize);
                return;
            }
            if (in instanceof UnsafeArrayData a) {
                long offsetAndSize = a.getLong(ordinal);
                fromBytes(slot, a.getBaseObject(), a.getBaseOffset() + (int) (offsetAndSize >> 32), (int) offsetAndSize);
                return;
            }
            BigDecimal d = atScale(in.getDecimal(ordinal, precision, scale).toJavaBigDecimal());
            if (d.precision() > precision && d.signum() != 0) {
                throw overflow(d.toPlainString());
            }
            BigInteger u = d.unscaledValue();
            store(slot, u.longValue(), u.shiftRight(64).longValue());
        }

        /** The unscaled value from its {@code length} big-endian two's complement bytes at {@code address}. */
        private void fromBytes(int slot, Object base, long address, int length) {
            if (length < 1 || length > 16) {
                throw new FieldWriteException(path, "the row holds a decimal of " + length
                        + " bytes, not 1 to 16: not a " + type());
            }
            // Sign-extend from the first byte, then shift the bytes in.
            long hi = Platform.getByte(base, address) < 0 ? -1L : 0L;
            long lo = hi;
            for (int i = 0; i < length; i++) {
                hi = (hi << 8) | (lo >>> 56);
                lo = (lo << 8) | (Platform.getByte(base, address + i) & 0xFF);
            }
            // The magnitude, compared (unsigned) with 10^precision.
            long mHi = hi;
            long mLo = lo;
            if (hi < 0) {
                mLo = -lo;
                mHi = ~hi + (lo == 0 ? 1 : 0);
            }
            int c = Long.compareUnsigned(mHi, boundHi);
            if (c > 0 || (c == 0 && Long.compareUnsigned(mLo, boundLo) >= 0)) {
                BigInteger u = BigInteger.valueOf(hi).shiftLeft(64).or(BigInteger.valueOf(lo).and(LOW_64));
                throw overflow(new BigDecimal(u, scale).toPlainString());
            }
            store(slot, lo, hi);
        }
    }

    /** 2^64 - 1: the low 64 bits of a two-long integer, unsigned. */
    private static final BigInteger LOW_64 = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
}
