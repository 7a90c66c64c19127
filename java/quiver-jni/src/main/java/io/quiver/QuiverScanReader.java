package io.quiver;

import java.io.IOException;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The batches of a scan or a take of a {@link QuiverFile}, as an Arrow Java
 * {@link ArrowReader}: each {@link #loadNextBatch()} imports the next batch
 * of the native stream into {@link #getVectorSchemaRoot()} through the C
 * Data interface, without copying.
 *
 * <p><b>Errors.</b> A failure inside the stream (corrupt bytes, a failed
 * read, a memory limit, a cancelled scan) is thrown by {@code loadNextBatch}
 * as the {@link QuiverException} subclass of its kind, with Quiver's message
 * naming the file, column and row group; later calls throw it again. A
 * {@code loadNextBatch} on an interrupted thread (interrupted before the
 * call, or while it waits for the decode workers) cancels the scan: it and
 * every later call throw {@link QuiverCancelledException}; the thread's
 * interrupt flag stays set.
 *
 * <p><b>Memory and allocators.</b> The buffers of an imported batch are
 * native memory that Quiver has already charged to the file's pool (the
 * {@code NativePool} the file was opened with, or its own). Arrow Java
 * accounts an imported buffer like an allocation: {@code wrapForeignAllocation}
 * counts its size against the allocator's limit and calls the allocator's
 * {@code AllocationListener} ({@code onPreAllocation}, {@code onAllocation},
 * later {@code onRelease}). So pass an allocator <em>without</em> a charging
 * listener (in Spark, the task's import allocator, not the allocator whose
 * listener charges the task), or every batch is charged twice; a child
 * allocator made without a listener inherits its parent's, so make it with
 * {@code AllocationListener.NOOP}. Give it no limit of its own (the native
 * pool is the budget) and no listener that can refuse: when Arrow Java 19's
 * {@code wrapForeignAllocation} refuses an imported buffer (limit or
 * listener), it never drops the reference it took on the imported array, so
 * the batch's native memory and 128 bytes of the allocator are never
 * released (a defect in Arrow, beyond this reader's reach). Arrow's importer
 * also allocates one C struct per batch (80 bytes, rounded to 128) from it.
 *
 * <p><b>Lifetime.</b> {@link #close()} releases the root's buffers and the
 * native stream, cancelling and joining its workers; it is idempotent, may
 * be called from another thread while a batch is loading (that call then
 * throws {@link QuiverCancelledException}), and a {@link Cleaner} releases
 * the stream of a reader that was never closed. The stream holds its own
 * reference to the file: it stays valid after its {@link QuiverFile} is
 * closed. Batches the caller moved out of the root (by transfer) stay valid
 * after the reader is closed.
 */
public final class QuiverScanReader extends ArrowReader {
    private static final int EINVAL = 22;

    private final ScanStream stream;
    private final Cleaner.Cleanable cleanable;
    private final Schema schema;
    private boolean finished;
    private boolean rootClosed;
    private boolean rootCloseDeferred; // close() ran inside loadNextBatch, on its thread

    private QuiverScanReader(BufferAllocator allocator, long handle) {
        super(allocator);
        this.stream = new ScanStream(handle);
        this.cleanable = QuiverCleaner.CLEANER.register(this, stream);
        try {
            this.schema = importSchema();
        } catch (RuntimeException | Error e) {
            cleanable.clean();
            throw e;
        }
    }

    /** Opens a scan of the file behind {@code fileHandle} (a {@code struct qv_file *}). */
    static QuiverScanReader openScan(long fileHandle, BufferAllocator allocator, ScanOptions options) {
        if (allocator == null) throw new QuiverInvalidArgumentException(EINVAL, "scan: no allocator given (null)");
        if (options == null) throw new QuiverInvalidArgumentException(EINVAL, "scan: no options given (null)");
        byte[] filter = options.filter == null ? null : Utf8.encode(options.filter, "scan: filter");
        long h = ScanStream.openScan(fileHandle, names(options.columns), filter, options.rowGroupBegin,
                options.rowGroupEnd, options.rowBegin, options.rowEnd, options.batchRows, options.limit,
                options.threads, options.prefetch, options.cast, options.validation.level(),
                options.nanOrder.code());
        return new QuiverScanReader(allocator, h);
    }

    /** Opens a take of {@code rows} from the file behind {@code fileHandle}. */
    static QuiverScanReader openTake(long fileHandle, BufferAllocator allocator, long[] rows, TakeOptions options) {
        if (allocator == null) throw new QuiverInvalidArgumentException(EINVAL, "take: no allocator given (null)");
        if (rows == null) throw new QuiverInvalidArgumentException(EINVAL, "take: no rows given (null)");
        if (options == null) throw new QuiverInvalidArgumentException(EINVAL, "take: no options given (null)");
        ScanOptions o = options.read;
        long h = ScanStream.openTake(fileHandle, rows, names(o.columns), o.batchRows,
                o.threads, o.prefetch, o.cast, o.validation.level());
        return new QuiverScanReader(allocator, h);
    }

    private static byte[][] names(List<String> columns) {
        if (columns == null) return null;
        byte[][] out = new byte[columns.size()][];
        for (int i = 0; i < out.length; i++) out[i] = Utf8.encode(columns.get(i), "column name");
        return out;
    }

    private Schema importSchema() {
        try (CData c = CData.create()) {
            long h = stream.enter();
            try {
                ScanStream.getSchema(h, c.schema().memoryAddress());
            } finally {
                stream.exit();
            }
            return Data.importSchema(allocator, c.schema(), null, false);
        }
    }

    @Override
    public boolean loadNextBatch() throws IOException {
        // Busy from here to the end, root included: a close from another
        // thread cancels, waits for this call, and only then closes the
        // root (resetting a closed root's vectors would allocate their
        // offset buffers anew). A closed reader refuses here.
        long h = stream.enter();
        try {
            prepareLoadNextBatch();
            if (finished) return false;
            VectorSchemaRoot root = getVectorSchemaRoot();
            // The C struct lives in native memory (CData), not in the
            // allocator; closing it releases a batch the import did not take
            // (one that failed before Arrow moved it), a no-op for a moved one.
            try (CData c = CData.create()) {
                ArrowArray array = c.array();
                if (!ScanStream.getNext(h, array.memoryAddress())) {
                    finished = true;
                    return false;
                }
                try {
                    Data.importIntoVectorSchemaRoot(allocator, array, root, null, false);
                } catch (RuntimeException | Error e) {
                    root.setRowCount(0);
                    throw e;
                }
                return true;
            }
        } finally {
            // A close from inside this call, on this thread (a MemoryBudget
            // the scan called), left the stream and the root to be released
            // here, now that nothing uses them.
            if (stream.exit() || rootCloseDeferred) closeRoot();
            Reference.reachabilityFence(this);
        }
    }

    /** The schema of the batches (also before the first batch). */
    @Override
    protected Schema readSchema() {
        return schema;
    }

    /** Not tracked: Quiver's reads are charged to its pool, not counted here. Always 0. */
    @Override
    public long bytesRead() {
        return 0;
    }

    /**
     * Cancels the scan from any thread: a {@code loadNextBatch} in flight and
     * every later one throw {@link QuiverCancelledException}. The reader must
     * still be closed.
     */
    public void cancel() {
        stream.cancel();
    }

    /** What the scan has done so far. Not while another thread is loading a batch. */
    public ScanStats stats() {
        long h = stream.enter();
        try {
            long[] s = ScanStream.stats(h);
            return new ScanStats(s[0], s[1], s[2], s[3], s[4], (int) s[5], (int) s[6], s[7], s[8]);
        } finally {
            stream.exit();
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public void close(boolean closeReadSource) throws IOException {
        // The stream first: a batch loading on another thread is cancelled
        // and waited for before the root it imports into is closed.
        if (ScanStream.onNativeWorker()) {
            // A scan's native worker (a MemoryBudget it called closing this
            // reader): releasing the stream joins the scan's workers, maybe
            // this very thread. Cancel now; a thread of its own does the rest.
            stream.cancel();
            Thread t = new Thread(() -> {
                try {
                    close(closeReadSource);
                } catch (IOException e) {
                    // Nobody waits for this thread: its uncaught handler reports.
                    throw new java.io.UncheckedIOException(e);
                }
            }, "quiver-scan-close");
            t.setDaemon(true);
            t.start();
            return;
        }
        boolean inside = stream.isReadingThread();
        if (closeReadSource) closeReadSource();
        if (inside) {
            rootCloseDeferred = true; // the loadNextBatch in flight on this thread closes it at its end
            return;
        }
        closeRoot();
    }

    // Synchronized throughout: a second close waits until the root's
    // buffers are released, rather than returning while the first is still
    // closing it (its caller would then find the allocator still holding them).
    private synchronized void closeRoot() throws IOException {
        if (rootClosed) return;
        rootClosed = true;
        super.close(false);
    }

    @Override
    protected void closeReadSource() {
        cleanable.clean();
        // Cleanable.clean runs the close once and returns at once on later
        // calls, also while the first is still waiting for a call in flight:
        // the stream's own close waits until the stream is released.
        stream.close();
    }
}
