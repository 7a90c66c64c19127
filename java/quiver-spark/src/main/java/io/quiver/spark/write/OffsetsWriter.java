package io.quiver.spark.write;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.ListVector;

/**
 * What Spark arrays and maps share as Arrow lists with int32 offsets (an
 * Arrow map is a list of entry structs): opening a slot at the children's
 * end, refusing a value whose children would pass 2^31 in the batch, closing
 * it with the child count, nulls and empty defaults, and the offsets' part of
 * finishing and accounting. The subclass writes the children.
 */
abstract class OffsetsWriter extends FieldWriter {
    final ListVector vector;
    /** What one child is called in errors ("elements", "entries"). */
    private final String children;
    /** What one value is called in errors ("an array", "a map"). */
    private final String container;
    /** Children written: where the next value starts. */
    int end;

    OffsetsWriter(ListVector vector, String children, String container, String path, boolean nullable) {
        super(path, nullable);
        this.vector = vector;
        this.children = children;
        this.container = container;
    }

    @Override
    final FieldVector vector() {
        return vector;
    }

    /** Opens {@code slot} for {@code n} children and returns the index of the first. */
    final int open(int slot, int n) {
        int start = vector.startNewValue(slot);
        if ((long) start + n > Integer.MAX_VALUE) {
            throw new FieldWriteException(path, "the batch's " + children + " would pass 2^31 (int32 offsets) with "
                    + container + " of " + n + " " + children);
        }
        return start;
    }

    /** Closes {@code slot}, opened at {@code start}, after its {@code n} children were written. */
    final void close(int slot, int start, int n) {
        vector.endValue(slot, n);
        end = start + n;
    }

    @Override
    final void writeNull(int slot) {
        vector.setNull(slot);
    }

    @Override
    final void writeDefault(int slot) {
        vector.startNewValue(slot);
        vector.endValue(slot, 0);
    }

    /** Sets the list's own counts, after the children were finished at {@link #end}. */
    final void finishOffsets(int count) {
        vector.setLastSet(count - 1);
        vector.setValueCount(count);
    }

    /** The list's own buffers (validity and offsets), without the children. */
    final long offsetsBytes() {
        return vector.getValidityBuffer().capacity() + vector.getOffsetBuffer().capacity();
    }
}
