package io.quiver.spark.write;

import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Strings and binaries into Arrow's utf8 and binary (int32 offsets): each
 * value's bytes are copied once, from where the row keeps them straight to
 * the end of the data buffer.
 *
 * <p>An unsafe row or array keeps a variable-width value as an
 * offset-and-length word pointing into its own memory (on or off heap);
 * the bytes are copied from there, so neither a {@link UTF8String} nor a
 * {@code byte[]} is made per value. Other rows give their
 * {@link UTF8String} (whose base object and offset are copied from) or
 * {@code byte[]}. Nothing of the row is kept: the caller may overwrite it.
 *
 * <p>The data buffer grows geometrically (at least doubling); the offsets
 * and validity grow with the slots. A batch whose data would pass 2 GiB
 * (int32 offsets) is refused at the value that would overflow; the row
 * writer's {@code isFull} ends batches long before that.
 */
final class VariableWidthWriter extends FieldWriter {
    private final BaseVariableWidthVector vector;
    private final boolean utf8;
    private long validity;
    private long offsets;
    private long data;
    private int capacity;
    private long dataCapacity;
    /** Bytes of data written: the offset the next value starts at. */
    private int end;

    VariableWidthWriter(BaseVariableWidthVector vector, boolean utf8, String path, boolean nullable) {
        super(path, nullable);
        this.vector = vector;
        this.utf8 = utf8;
    }

    @Override
    FieldVector vector() {
        return vector;
    }

    @Override
    void writeValue(SpecializedGetters in, int ordinal, int slot) {
        if (in instanceof UnsafeRow r) {
            long offsetAndSize = r.getLong(ordinal);
            append(slot, r.getBaseObject(), r.getBaseOffset() + (int) (offsetAndSize >> 32), (int) offsetAndSize);
        } else if (in instanceof UnsafeArrayData a) {
            long offsetAndSize = a.getLong(ordinal);
            append(slot, a.getBaseObject(), a.getBaseOffset() + (int) (offsetAndSize >> 32), (int) offsetAndSize);
        } else if (utf8) {
            UTF8String s = in.getUTF8String(ordinal);
            append(slot, s.getBaseObject(), s.getBaseOffset(), s.numBytes());
        } else {
            byte[] b = in.getBinary(ordinal);
            append(slot, b, Platform.BYTE_ARRAY_OFFSET, b.length);
        }
    }

    private void append(int slot, Object base, long address, int length) {
        if (length < 0) {
            throw new FieldWriteException(path, "value of negative length " + length);
        }
        ensure(slot);
        long next = (long) end + length;
        if (next > Integer.MAX_VALUE) {
            throw new FieldWriteException(path, "the batch's data would pass 2 GiB (int32 offsets) with a value of "
                    + length + " bytes");
        }
        if (next > dataCapacity) {
            growData(next);
        }
        Platform.copyMemory(base, address, null, data + end, length);
        end = (int) next;
        Platform.putInt(null, offsets + 4L * (slot + 1), end);
        setValid(slot);
    }

    private void growData(long needed) {
        vector.reallocDataBuffer(Math.max(needed, 2 * dataCapacity));
        cache();
    }

    private void ensure(int slot) {
        if (slot >= capacity) {
            while (slot >= vector.getValueCapacity()) {
                vector.reallocValidityAndOffsetBuffers();
            }
            cache();
        }
    }

    private void setValid(int slot) {
        long a = validity + (slot >>> 3);
        Platform.putByte(null, a, (byte) (Platform.getByte(null, a) | (1 << (slot & 7))));
    }

    @Override
    void writeNull(int slot) {
        ensure(slot);
        Platform.putInt(null, offsets + 4L * (slot + 1), end);
        long a = validity + (slot >>> 3);
        Platform.putByte(null, a, (byte) (Platform.getByte(null, a) & ~(1 << (slot & 7))));
    }

    @Override
    void writeDefault(int slot) {
        ensure(slot);
        Platform.putInt(null, offsets + 4L * (slot + 1), end);
        setValid(slot);
    }

    @Override
    void configure(int slots) {
        vector.setInitialCapacity(slots);
    }

    @Override
    void allocated() {
        cache();
        end = 0;
    }

    private void cache() {
        validity = vector.getValidityBuffer().memoryAddress();
        offsets = vector.getOffsetBuffer().memoryAddress();
        data = vector.getDataBuffer().memoryAddress();
        capacity = vector.getValueCapacity();
        dataCapacity = vector.getDataBuffer().capacity();
    }

    @Override
    void finish(int count) {
        // The offsets are all written; lastSet tells Arrow so, or it would
        // "fill holes" over them.
        vector.setLastSet(count - 1);
        vector.setValueCount(count);
    }

    @Override
    long allocatedBytes() {
        return vector.getValidityBuffer().capacity() + vector.getOffsetBuffer().capacity()
                + vector.getDataBuffer().capacity();
    }

    @Override
    long largestOffset() {
        return end;
    }
}
