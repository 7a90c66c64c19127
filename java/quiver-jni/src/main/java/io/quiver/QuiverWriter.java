package io.quiver;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.validate.ValidateVectorBufferVisitor;

/**
 * Writes a new Quiver file from {@link VectorSchemaRoot}s pushed one at a
 * time, through the Arrow C Data interface (no copy on the Java side; the
 * native writer buffers what it keeps in its own pool).
 *
 * <pre>{@code
 * try (QuiverWriter w = QuiverWriter.open(allocator, path, root.getSchema(), WriterOptions.defaults())) {
 *     w.write(root);          // as often as needed
 *     WriteResult r = w.finish();
 * }
 * }</pre>
 *
 * <p>The file is written as a temporary file in the same directory and
 * appears under its name only when {@link #finish()} succeeds; an existing
 * file there is replaced then, atomically. {@link #abort()}, or
 * {@link #close()} before finish, removes the temporary file. A missing
 * directory is a {@link QuiverNotFoundException} naming it; a directory (or
 * FIFO, socket, device) at the path is a
 * {@link QuiverInvalidArgumentException}.
 *
 * <p><b>Failures.</b> A failed {@link #write} (a root whose schema differs
 * from the writer's, a batch the writer refuses, a memory limit, a full
 * disk) fails the writer: every later {@code write} and {@code finish}
 * throws an exception of the same class naming the first failure; only
 * {@code abort} and {@code close} remain, and they release the native
 * writer, its memory and the temporary file.
 *
 * <p><b>Allocators.</b> {@code allocator} holds the C structs of each export
 * (a few hundred bytes per write); it must share its root allocator with the
 * roots written (Arrow refuses to associate buffers across roots). Methods
 * are synchronized; a {@link Cleaner} aborts and frees a writer that was
 * never closed.
 */
public final class QuiverWriter implements AutoCloseable {
    private static final int EINVAL = 22;

    private final BufferAllocator allocator;
    private final Schema schema;
    private final String path;
    private final NativeHandle handle; // frees (and so aborts unless finished) once, also by the Cleaner
    private QuiverException failure; // the first failure; the writer is poisoned
    private WriteResult result;      // set by a successful finish
    private boolean aborted, closed;

    private QuiverWriter(BufferAllocator allocator, Schema schema, String path, long h) {
        this.allocator = allocator;
        this.schema = schema;
        this.path = path;
        this.handle = new NativeHandle(this, h, QuiverWriter::nativeClose, "Quiver writer of " + path);
    }

    /**
     * Creates the file at {@code path} (through a temporary file) for
     * batches of {@code schema}. The schema is exported to the native writer
     * once, here; a schema Quiver cannot store (dictionary, union, view
     * types) is refused now, before any batch.
     */
    public static QuiverWriter open(BufferAllocator allocator, Path path, Schema schema, WriterOptions options) {
        if (allocator == null) throw new QuiverInvalidArgumentException(EINVAL, "write: no allocator given (null)");
        if (path == null) throw new QuiverInvalidArgumentException(EINVAL, "write: no path given (null)");
        if (schema == null) throw new QuiverInvalidArgumentException(EINVAL, "write '" + path + "': no schema given (null)");
        if (options == null) options = WriterOptions.defaults();
        NativeLibrary.load();
        String p = path.toString();
        int n = options.metadata.size();
        byte[][] keys = new byte[n][], values = new byte[n][];
        int i = 0;
        for (Map.Entry<String, String> e : options.metadata.entrySet()) {
            keys[i] = Utf8.encode(e.getKey(), "write '" + path + "': metadata key");
            values[i++] = Utf8.encode(e.getValue(), "write '" + path + "': metadata value of '" + e.getKey() + "'");
        }
        long h;
        try (CData c = CData.create()) { // releases the exported schema: the native side only reads it
            Data.exportSchema(allocator, schema, null, c.schema());
            final WriterOptions o = options;
            java.util.function.LongUnaryOperator open = pool -> nativeOpen(p.getBytes(StandardCharsets.UTF_8),
                    c.schema().memoryAddress(), o.rowGroupRows, o.rowGroupBytes, o.compact, o.randomAccess, keys, values,
                    o.memoryLimit, pool, o.maxInFlight);
            h = o.pool == null ? open.applyAsLong(0) : o.pool.withAddress(open);
        }
        try {
            return new QuiverWriter(allocator, schema, p, h);
        } catch (RuntimeException | Error e) {
            nativeClose(h);
            throw e;
        }
    }

    /** The schema every written root must have. */
    public Schema schema() {
        return schema;
    }

    /**
     * Appends the rows of {@code root} (its row count), copying them. The
     * root stays the caller's and may be reused at once: the writer copies
     * what it keeps.
     * A root whose schema differs from the writer's (names, types,
     * nullability, nesting; metadata may differ) is a
     * {@link QuiverInvalidArgumentException} naming the field.
     */
    public synchronized void write(VectorSchemaRoot root) {
        push(root, false);
    }

    /**
     * Appends the rows of {@code root} without copying them: the root's
     * buffers are exported (the schema was exported once, at open) and moved
     * into the native writer, which holds them until their row group is
     * written and then releases them, on the thread of a later call of this
     * writer ({@code write}, {@code writeOwned}, {@code finish},
     * {@code abort}, {@code close}). On return the root is cleared (value
     * count 0, its buffers released from the root's side), also when the
     * write failed, and may be refilled at once ({@code allocateNew}): the
     * writer's references keep the old buffers alive. Memory held is
     * bounded by {@link WriterOptions.Builder#maxInFlight} row groups plus
     * the one being filled. Same failure rules as {@link #write}.
     */
    public synchronized void writeOwned(VectorSchemaRoot root) {
        push(root, true);
    }

    private void push(VectorSchemaRoot root, boolean owned) {
        if (root == null) throw new QuiverInvalidArgumentException(EINVAL, "write '" + path + "': no root given (null)");
        checkWritable("write");
        boolean exported = false;
        try {
            String diff = difference(schema.getFields(), root.getSchema().getFields(), "");
            if (diff != null)
                throw new QuiverInvalidArgumentException(EINVAL,
                        "write '" + path + "': the batch's schema differs from the writer's: " + diff);
            // The C Data interface carries no buffer sizes: the native writer
            // reads what offsets and lengths claim, so a root whose offsets
            // point past its data buffer (a bug or a hostile caller) would
            // make it read beyond the buffer and take the JVM down. Java
            // knows the capacities: Arrow's own check of them, O(1) per
            // vector, refuses such a root first. Only the buffer half of
            // ValueVector.validate(): its type half has no case for MapVector
            // in Arrow Java 19 (a map is checked as a list and refused), and
            // the types were compared with the writer's schema above.
            for (FieldVector v : root.getFieldVectors()) {
                try {
                    v.accept(new ValidateVectorBufferVisitor(), null);
                } catch (RuntimeException e) {
                    throw new QuiverInvalidArgumentException(EINVAL, "write '" + path + "': column '" + v.getName()
                            + "' does not hold what its lengths and offsets claim: " + e.getMessage(), e);
                }
            }
            long h = handle.acquire();
            try (CData c = CData.create()) { // releases a batch the export left half-made
                exported = owned;
                Data.exportVectorSchemaRoot(allocator, root, null, c.array());
                if (owned) nativeWriteOwned(h, c.array().memoryAddress()); // moves the batch in, also on failure
                else nativeWrite(h, c.array().memoryAddress()); // releases the batch, also on failure
            } finally {
                handle.release();
            }
        } catch (QuiverException e) {
            failure = e;
            throw e;
        } catch (RuntimeException | Error e) {
            // Arrow's export failed (a vector it cannot export, a root of
            // another root allocator): nothing reached the file, but the
            // writer is failed all the same. Thrown as the Quiver exception
            // naming the file, Arrow's as its cause (an Error stays itself).
            failure = QuiverException.create(
                    e instanceof org.apache.arrow.memory.OutOfMemoryException ? ErrorKind.OUT_OF_MEMORY
                            : ErrorKind.INVALID_ARGUMENT,
                    EINVAL, "write '" + path + "': exporting the batch failed: " + e, e);
            if (e instanceof Error) throw e;
            throw failure;
        } finally {
            // The export took its own references to the buffers: the root
            // lets go of its side, so the caller refills fresh buffers.
            if (exported) root.clear();
        }
    }

    /**
     * Bytes the writer holds for rows not yet written: its native buffering
     * and the Arrow buffers moved in by {@link #writeOwned}. 0 once closed.
     */
    public synchronized long bufferedBytes() {
        if (closed) return 0;
        long h = handle.acquire();
        try {
            return nativeBufferedBytes(h);
        } finally {
            handle.release();
        }
    }

    /**
     * Writes the remaining rows and the footer and publishes the file under
     * its name. Returns the rows and bytes written. A second call returns
     * the same result.
     */
    public synchronized WriteResult finish() {
        if (result != null) return result;
        checkWritable("finish");
        long h = handle.acquire();
        try {
            long[] r = nativeFinish(h);
            result = new WriteResult(r[0], r[1]);
            return result;
        } catch (QuiverException e) {
            failure = e;
            throw e;
        } finally {
            handle.release();
        }
    }

    /** Discards the file: nothing is left under its name or the temporary one. Idempotent. */
    public synchronized void abort() {
        if (closed || aborted || result != null) {
            if (result != null) throw new IllegalStateException("write '" + path + "': already finished");
            return;
        }
        aborted = true;
        long h = handle.acquire();
        try {
            nativeAbort(h);
        } finally {
            handle.release();
        }
    }

    /** Aborts unless finished, and frees the native writer. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        handle.close();
    }

    private void checkWritable(String op) {
        if (closed) throw new IllegalStateException(op + " '" + path + "': the writer is closed");
        if (aborted) throw new IllegalStateException(op + " '" + path + "': the writer was aborted");
        if (result != null) throw new IllegalStateException(op + " '" + path + "': the file is already finished");
        if (failure != null)
            throw QuiverException.create(failure.kind(), failure.errno(),
                    op + " '" + path + "': the writer failed earlier: " + failure.getMessage(), failure);
    }

    /** The first difference between the writer's fields and a batch's, or null. */
    static String difference(List<Field> want, List<Field> got, String prefix) {
        for (int i = 0; i < Math.max(want.size(), got.size()); i++) {
            if (i >= want.size())
                return "field '" + prefix + got.get(i).getName() + "' is not in the writer's schema";
            Field w = want.get(i);
            String name = prefix + w.getName();
            if (i >= got.size()) return "field '" + name + "' is missing";
            Field g = got.get(i);
            if (!w.getName().equals(g.getName()))
                return "field " + i + (prefix.isEmpty() ? "" : " of '" + prefix.substring(0, prefix.length() - 1) + "'")
                        + " is '" + prefix + g.getName() + "', the writer's is '" + name + "'";
            if (!w.getType().equals(g.getType()))
                return "field '" + name + "' is " + g.getType() + ", the writer's is " + w.getType();
            if (w.isNullable() != g.isNullable())
                return "field '" + name + "' is " + (g.isNullable() ? "" : "not ") + "nullable, the writer's is "
                        + (w.isNullable() ? "" : "not ") + "nullable";
            if (!Objects.equals(w.getDictionary(), g.getDictionary()))
                return "field '" + name + "' differs in dictionary encoding";
            String d = difference(w.getChildren(), g.getChildren(), name + ".");
            if (d != null) return d;
        }
        return null;
    }

    /** Writers opened and not yet freed, in this JVM (for tests of the Cleaner). */
    static long liveCount() {
        NativeLibrary.load();
        return nativeLiveCount();
    }

    private static native long nativeLiveCount();

    /* ---- jni_writer.c ---- */
    private static native long nativeOpen(byte[] path, long schemaAddress, long rowGroupRows, long rowGroupBytes,
            boolean compact, boolean randomAccess, byte[][] metaKeys, byte[][] metaValues, long memoryLimit, long pool, int maxInFlight);

    private static native void nativeWriteOwned(long h, long arrayAddress);

    private static native long nativeBufferedBytes(long h);

    private static native void nativeWrite(long h, long arrayAddress);

    private static native long[] nativeFinish(long h);

    private static native void nativeAbort(long h);

    private static native void nativeClose(long h);
}
