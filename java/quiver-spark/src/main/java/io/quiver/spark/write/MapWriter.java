package io.quiver.spark.write;

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
final class MapWriter extends OffsetsWriter {
    private final StructVector entries;
    private final FieldWriter key;
    private final FieldWriter value;

    MapWriter(MapVector vector, FieldWriter key, FieldWriter value, String path, boolean nullable) {
        super(vector, "entries", "a map", path, nullable);
        this.entries = (StructVector) vector.getDataVector();
        this.key = key;
        this.value = value;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        MapData m = in.getMap(ordinal);
        int n = m.numElements();
        ArrayData keys = m.keyArray();
        ArrayData values = m.valueArray();
        int start = open(slot, n);
        for (int j = 0; j < n; j++) {
            int at = start + j;
            entries.setIndexDefined(at);
            key.write(keys, j, at);
            value.write(values, j, at);
        }
        close(slot, start, n);
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
        finishOffsets(count);
    }

    @Override
    long allocatedBytes() {
        return offsetsBytes() + entries.getValidityBuffer().capacity() + key.allocatedBytes() + value.allocatedBytes();
    }

    @Override
    long largestOffset() {
        return Math.max(end, Math.max(key.largestOffset(), value.largestOffset()));
    }
}
