package io.quiver.spark.write;

import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.spark.unsafe.Platform;

/**
 * The common part of writers into fixed-width vectors: the addresses of
 * the validity and value buffers are kept, so a value is written with one
 * store and one bit set, and the vector grows (doubling) only when a slot
 * lies beyond its capacity. Arrow buffers are little-endian, as are the
 * machines Quiver runs on, so native-order stores give Arrow's layout.
 */
abstract class FixedWidthWriter extends FieldWriter {
    final BaseFixedWidthVector vector;
    /** Address of the validity bitmap. */
    long validity;
    /** Address of the values buffer. */
    long values;
    /** Slots the buffers hold now. */
    int capacity;

    FixedWidthWriter(BaseFixedWidthVector vector, String path, boolean nullable) {
        super(path, nullable);
        this.vector = vector;
    }

    @Override
    final FieldVector vector() {
        return vector;
    }

    /** Makes sure {@code slot} is inside the buffers. */
    final void ensure(int slot) {
        if (slot >= capacity) {
            grow(slot);
        }
    }

    private void grow(int slot) {
        while (slot >= vector.getValueCapacity()) {
            vector.reAlloc();
        }
        allocated();
    }

    /** Sets the validity bit of {@code slot} (inside the buffers). */
    final void setValid(int slot) {
        long a = validity + (slot >>> 3);
        Platform.putByte(null, a, (byte) (Platform.getByte(null, a) | (1 << (slot & 7))));
    }

    @Override
    final void writeNull(int slot) {
        ensure(slot);
        long a = validity + (slot >>> 3);
        Platform.putByte(null, a, (byte) (Platform.getByte(null, a) & ~(1 << (slot & 7))));
    }

    @Override
    final void writeDefault(int slot) {
        // The value bytes are zero already: a slot is written once.
        ensure(slot);
        setValid(slot);
    }

    @Override
    final void configure(int slots) {
        vector.setInitialCapacity(slots);
    }

    @Override
    final void allocated() {
        validity = vector.getValidityBuffer().memoryAddress();
        values = vector.getDataBuffer().memoryAddress();
        capacity = vector.getValueCapacity();
    }

    @Override
    final void finish(int count) {
        vector.setValueCount(count);
    }

    @Override
    final long allocatedBytes() {
        return vector.getValidityBuffer().capacity() + vector.getDataBuffer().capacity();
    }
}
