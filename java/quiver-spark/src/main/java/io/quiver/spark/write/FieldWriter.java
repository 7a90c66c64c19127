package io.quiver.spark.write;

import org.apache.arrow.vector.FieldVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;

/**
 * Writes the values of one column (or of one nested field) into its Arrow
 * vector. The writer is chosen once, from the column's Spark type, so
 * appending a value is one virtual call that knows the type already.
 *
 * <p>Values are read from {@link SpecializedGetters}, which both a row
 * (for columns and struct fields) and an array (for list elements, map
 * keys and values) are: the same writer serves a column and an element.
 * Every slot is written exactly once, in order, after the vector was
 * allocated zeroed (Arrow zeroes fresh and grown buffers), so a writer only
 * sets what differs from zero.
 *
 * <p>Lifecycle: {@link #configure} sets the start capacity (before the
 * top-level vector allocates itself and its children), {@link #allocated}
 * takes note of the fresh buffers, the {@code write} methods append,
 * {@link #finish} sets the value counts.
 */
abstract class FieldWriter {
    /** The dotted path of the field, for errors. */
    final String path;
    /** Whether the field may hold nulls (a null otherwise is an error). */
    final boolean nullable;

    FieldWriter(String path, boolean nullable) {
        this.path = path;
        this.nullable = nullable;
    }

    /** The vector this writer fills. */
    abstract FieldVector vector();

    /**
     * Writes value {@code ordinal} of {@code in} into slot {@code slot}.
     * Anything failing on the way is rethrown as a
     * {@link FieldWriteException} naming the innermost field it concerns.
     */
    final void write(SpecializedGetters in, int ordinal, int slot) {
        try {
            if (in.isNullAt(ordinal)) {
                if (!nullable) {
                    throw new FieldWriteException(path, "null value in a non-nullable field");
                }
                writeNull(slot);
            } else {
                writeValue(in, ordinal, slot);
            }
        } catch (FieldWriteException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new FieldWriteException(path, e);
        }
    }

    /** Writes the non-null value {@code ordinal} of {@code in} into {@code slot}. */
    abstract void writeValue(SpecializedGetters in, int ordinal, int slot);

    /** Makes {@code slot} null. */
    abstract void writeNull(int slot);

    /** Makes {@code slot} the type's default value: zero, empty, a struct of defaults. */
    abstract void writeDefault(int slot);

    /**
     * Fills {@code slot} under a null parent: a null where the field may
     * hold nulls, the default value where it may not (as Quiver's own
     * builder does, so a non-nullable field never carries a null).
     */
    final void writeAbsent(int slot) {
        if (nullable) {
            writeNull(slot);
        } else {
            writeDefault(slot);
        }
    }

    /** Sets the capacity the next allocation gives this field and its children. */
    abstract void configure(int slots);

    /** Takes note of freshly allocated (empty) buffers, here and in the children. */
    abstract void allocated();

    /** Sets the value counts: this field holds {@code count} values. */
    abstract void finish(int count);

    /** The bytes of the buffers this field and its children hold. */
    abstract long allocatedBytes();

    /** The largest offset of a variable-width buffer here or below (0 if none). */
    long largestOffset() {
        return 0;
    }
}
