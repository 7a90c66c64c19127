package io.quiver.spark.write;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.NullVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;

/**
 * Spark's NullType into Arrow's null type, which has no buffers: only the
 * count of values (all null) is kept.
 */
final class NullWriter extends FieldWriter {
    private final NullVector vector;

    NullWriter(NullVector vector, String path) {
        super(path, true);
        this.vector = vector;
    }

    @Override
    FieldVector vector() {
        return vector;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        // A NullType value is null whatever the row says about it.
    }

    @Override
    void writeNull(int slot) {}

    @Override
    void writeDefault(int slot) {}

    @Override
    void configure(int slots) {}

    @Override
    void allocated() {}

    @Override
    void finish(int count) {
        vector.setValueCount(count);
    }

    @Override
    long allocatedBytes() {
        return 0;
    }
}
