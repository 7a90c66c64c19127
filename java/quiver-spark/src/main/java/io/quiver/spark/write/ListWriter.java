package io.quiver.spark.write;

import org.apache.arrow.vector.complex.ListVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * Spark arrays into Arrow lists (int32 offsets): the list's slot is opened
 * at the element vector's end, each element is written by the element's
 * own writer straight from the {@link ArrayData}, and the slot is closed
 * with the element count.
 */
final class ListWriter extends OffsetsWriter {
    private final FieldWriter element;

    ListWriter(ListVector vector, FieldWriter element, String path, boolean nullable) {
        super(vector, "elements", "an array", path, nullable);
        this.element = element;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        ArrayData a = in.getArray(ordinal);
        int n = a.numElements();
        int start = open(slot, n);
        for (int j = 0; j < n; j++) {
            element.write(a, j, start + j);
        }
        close(slot, start, n);
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
        finishOffsets(count);
    }

    @Override
    long allocatedBytes() {
        return offsetsBytes() + element.allocatedBytes();
    }

    @Override
    long largestOffset() {
        return Math.max(end, element.largestOffset());
    }
}
