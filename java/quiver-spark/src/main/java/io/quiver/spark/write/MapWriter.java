package io.quiver.spark.write;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;

/**
 * Spark maps into Arrow maps: a list of non-null "entries" structs of a
 * non-null key and a value. The keys and values are written by their own
 * writers from the map's key and value arrays, entry by entry.
 */
final class MapWriter extends FieldWriter {
    private final MapVector vector;
    private final StructVector entries;
    private final FieldWriter key;
    private final FieldWriter value;
    /** Entries written: where the next map starts. */
    private int end;

    MapWriter(MapVector vector, FieldWriter key, FieldWriter value, String path, boolean nullable) {
        super(path, nullable);
        this.vector = vector;
        this.entries = (StructVector) vector.getDataVector();
        this.key = key;
        this.value = value;
    }

    @Override
    FieldVector vector() {
        return vector;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        MapData m = in.getMap(ordinal);
        int n = m.numElements();
        ArrayData keys = m.keyArray();
        ArrayData values = m.valueArray();
        int start = vector.startNewValue(slot);
        if ((long) start + n > Integer.MAX_VALUE) {
            throw new FieldWriteException(path, "the batch's entries would pass 2^31 (int32 offsets) with a map of "
                    + n + " entries");
        }
        for (int j = 0; j < n; j++) {
            int at = start + j;
            entries.setIndexDefined(at);
            key.write(keys, j, at);
            value.write(values, j, at);
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
        entries.setInitialCapacity(slots);
        key.configure(slots);
        value.configure(slots);
    }

    @Override
    void allocated() {
        end = 0;
        key.allocated();
        value.allocated();
    }

    @Override
    void finish(int count) {
        key.finish(end);
        value.finish(end);
        entries.setValueCount(end);
        vector.setLastSet(count - 1);
        vector.setValueCount(count);
    }

    @Override
    long allocatedBytes() {
        return vector.getValidityBuffer().capacity() + vector.getOffsetBuffer().capacity()
                + entries.getValidityBuffer().capacity() + key.allocatedBytes() + value.allocatedBytes();
    }

    @Override
    long largestOffset() {
        return Math.max(end, Math.max(key.largestOffset(), value.largestOffset()));
    }
}
