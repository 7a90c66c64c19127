package io.quiver;

import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;

/**
 * One ArrowSchema, ArrowArray and ArrowArrayStream in native memory
 * (struct qvj_cdata in the JNI library), for a native call to fill and Arrow
 * Java to import. Arrow Java's importers move what they import and mark the
 * struct released; {@link #close()} releases whatever is still unreleased
 * and frees the block, so every failure path (a native error, an import
 * that throws half-way) leaks nothing when the CData is closed in a
 * try-with-resources:
 *
 * <pre>{@code
 * try (CData c = CData.create()) {
 *     nativeFill(handle, c.address());          // fills c.schema()
 *     return Data.importSchema(allocator, c.schema(), null, false);
 * }
 * }</pre>
 *
 * Internal to Quiver's Java API (public for the other io.quiver packages).
 */
public final class CData implements AutoCloseable {
    private static final long[] OFFSETS;

    static {
        NativeLibrary.load();
        OFFSETS = nativeOffsets();
    }

    private long address;

    private CData(long address) {
        this.address = address;
    }

    /** A new zeroed block (every struct released). */
    public static CData create() {
        return new CData(nativeCreate());
    }

    /** The block's address, for the native call that fills it. */
    public long address() {
        if (address == 0) {
            throw new IllegalStateException("CData is closed");
        }
        return address;
    }

    public ArrowSchema schema() {
        return ArrowSchema.wrap(address() + OFFSETS[0]);
    }

    public ArrowArray array() {
        return ArrowArray.wrap(address() + OFFSETS[1]);
    }

    public ArrowArrayStream stream() {
        return ArrowArrayStream.wrap(address() + OFFSETS[2]);
    }

    /** Releases what was not imported and frees the block; idempotent. */
    @Override
    public void close() {
        long a = address;
        address = 0;
        if (a != 0) {
            nativeDestroy(a);
        }
    }

    private static native long nativeCreate();

    private static native void nativeDestroy(long address);

    private static native long[] nativeOffsets();
}
