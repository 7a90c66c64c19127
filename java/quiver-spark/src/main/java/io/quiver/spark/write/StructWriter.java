package io.quiver.spark.write;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;

/**
 * Spark structs into Arrow structs: every child gets a slot for every
 * struct slot. Under a null struct, nullable children get nulls and
 * non-nullable ones their type's default, so no non-nullable field ever
 * holds a null.
 */
final class StructWriter extends FieldWriter {
    private final StructVector vector;
    private final FieldWriter[] children;

    StructWriter(StructVector vector, FieldWriter[] children, String path, boolean nullable) {
        super(path, nullable);
        this.vector = vector;
        this.children = children;
    }

    @Override
    FieldVector vector() {
        return vector;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        InternalRow r = in.getStruct(ordinal, children.length);
        vector.setIndexDefined(slot);
        for (int c = 0; c < children.length; c++) {
            children[c].write(r, c, slot);
        }
    }

    @Override
    void writeNull(int slot) {
        vector.setNull(slot);
        for (FieldWriter c : children) {
            c.writeAbsent(slot);
        }
    }

    @Override
    void writeDefault(int slot) {
        vector.setIndexDefined(slot);
        for (FieldWriter c : children) {
            c.writeAbsent(slot);
        }
    }

    @Override
    void configure(int slots) {
        vector.setInitialCapacity(slots);
        for (FieldWriter c : children) {
            c.configure(slots);
        }
    }

    @Override
    void allocated() {
        for (FieldWriter c : children) {
            c.allocated();
        }
    }

    @Override
    void finish(int count) {
        for (FieldWriter c : children) {
            c.finish(count);
        }
        vector.setValueCount(count);
    }

    @Override
    long allocatedBytes() {
        long n = vector.getValidityBuffer().capacity();
        for (FieldWriter c : children) {
            n += c.allocatedBytes();
        }
        return n;
    }

    @Override
    long largestOffset() {
        long m = 0;
        for (FieldWriter c : children) {
            m = Math.max(m, c.largestOffset());
        }
        return m;
    }
}
