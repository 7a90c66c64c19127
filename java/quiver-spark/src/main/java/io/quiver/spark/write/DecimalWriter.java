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
 * taken when its scale is the column's. Wider decimals go through
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

    /** Precision above 18: through BigDecimal. */
    static final class Wide extends DecimalWriter {
        Wide(DecimalVector vector, String path, boolean nullable, int precision, int scale) {
            super(vector, path, nullable, precision, scale);
        }

        @Override
        void writeValue(SpecializedGetters in, int ordinal, int slot) {
            BigDecimal d = atScale(in.getDecimal(ordinal, precision, scale).toJavaBigDecimal());
            if (d.precision() > precision && d.signum() != 0) {
                throw overflow(d.toPlainString());
            }
            BigInteger u = d.unscaledValue();
            store(slot, u.longValue(), u.shiftRight(64).longValue());
        }
    }
}
