package io.quiver.spark.write;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * Spark arrays into Arrow lists (int32 offsets): the list's slot is opened
 * at the element vector's end, each element is written by the element's
 * own writer straight from the {@link ArrayData}, and the slot is closed
 * with the element count.
 */
final class ListWriter extends FieldWriter {
    private final ListVector vector;
    private final FieldWriter element;
    /** Elements written: where the next list starts. */
    private int end;

    ListWriter(ListVector vector, FieldWriter element, String path, boolean nullable) {
        super(path, nullable);
        this.vector = vector;
        this.element = element;
    }

    @Override
    FieldVector vector() {
        return vector;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        ArrayData a = in.getArray(ordinal);
        int n = a.numElements();
        int start = vector.startNewValue(slot);
        if ((long) start + n > Integer.MAX_VALUE) {
            throw new FieldWriteException(path, "the batch's elements would pass 2^31 (int32 offsets) with an array of "
                    + n + " elements");
        }
        for (int j = 0; j < n; j++) {
            element.write(a, j, start + j);
        }
        vector.endValue(slot, n);
        end = start + n;
    }

    @Override
    void writeNull(int slot) {
        vector.setNull(slot);
    }

    @Override
    void writeDefault(int slot) {
        vector.startNewValue(slot);
        vector.endValue(slot, 0);
    }

    @Override
    void configure(int slots) {
        vector.setInitialCapacity(slots);
        element.configure(slots);
    }

    @Override
    void allocated() {
        end = 0;
        element.allocated();
    }

    @Override
    void finish(int count) {
        element.finish(end);
        vector.setLastSet(count - 1);
        vector.setValueCount(count);
    }

    @Override
    long allocatedBytes() {
        return vector.getValidityBuffer().capacity() + vector.getOffsetBuffer().capacity() + element.allocatedBytes();
    }

    @Override
    long largestOffset() {
        return Math.max(end, element.largestOffset());
    }
}
