package io.quiver;

/**
 * The native side of a {@link QuiverScanReader}: a scan (or take) stream of
 * the C file layer that stays in C, behind a handle (jni_scan.c). The stream
 * holds its own reference to the file, so it stays valid after the
 * {@link QuiverFile} that opened it is closed.
 *
 * <p>Threads. One thread reads at a time ({@link #enter} refuses a second).
 * {@link #close} may come from any thread, also while another is blocked
 * in {@code getNext}: it cancels the stream, waits for that call to return
 * and only then releases the stream (which joins the decode workers), since
 * a release must never race with a running call. It is also the
 * {@link java.lang.ref.Cleaner} action of the reader, so it refers to no
 * reader.
 */
final class ScanStream implements Runnable {
    private long handle;
    private boolean busy;
    private boolean closed;
    private Thread reader;         // the thread between enter and exit
    private boolean releaseAtExit; // closed by that thread from inside its own call
    private boolean released;      // the native stream is gone

    ScanStream(long handle) {
        this.handle = handle;
    }

    /** Marks the stream busy for the calling thread and returns its handle. */
    synchronized long enter() {
        if (closed) throw new IllegalStateException("the scan is closed");
        if (busy)
            throw new IllegalStateException(
                    "the scan is being read by another thread (read a scan from one thread at a time)");
        busy = true;
        reader = Thread.currentThread();
        return handle;
    }

    /**
     * Ends the call started by {@link #enter}. Returns true when the stream
     * was closed from inside the call by its own thread (a MemoryBudget that
     * the scan called on this thread closed the reader); the stream is
     * released here then, and the caller finishes that close.
     */
    boolean exit() {
        long h = 0;
        synchronized (this) {
            busy = false;
            reader = null;
            if (releaseAtExit) {
                releaseAtExit = false;
                h = handle;
                handle = 0;
            }
            notifyAll();
        }
        if (h == 0) return false;
        release(h);
        markReleased();
        return true;
    }

    private synchronized void markReleased() {
        released = true;
        notifyAll();
    }

    /** Waits (lock held) until {@code done}; an interrupt meanwhile is kept for later. */
    private void awaitLocked(java.util.function.BooleanSupplier done) {
        boolean interrupted = false;
        while (!done.getAsBoolean()) {
            try {
                wait();
            } catch (InterruptedException e) {
                interrupted = true; // the release must still happen
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** Whether the calling thread is inside a call on this stream (between enter and exit). */
    synchronized boolean isReadingThread() {
        return busy && reader == Thread.currentThread();
    }

    /** Cancels a read in flight and every later one (QuiverCancelledException); thread-safe. */
    synchronized void cancel() {
        if (!closed) cancel(handle);
    }

    @Override
    public void run() {
        close();
    }

    /**
     * Cancels a read in flight, waits for it, releases the stream.
     * Idempotent; a close while another thread is closing waits until the
     * stream is released, so every close returns with the native stream
     * (and the memory it charges) gone, except one called from inside the
     * call in flight on its own thread, which leaves the release to it.
     */
    void close() {
        long h;
        synchronized (this) {
            if (closed) {
                if (!(busy && reader == Thread.currentThread())) awaitLocked(() -> released);
                return;
            }
            closed = true;
            if (busy) {
                cancel(handle);
                if (reader == Thread.currentThread()) {
                    // Closed from inside the call in flight, on its own
                    // thread (a budget the scan called closing the reader):
                    // waiting would wait for this very thread. The call
                    // releases the stream when it returns (exit).
                    releaseAtExit = true;
                    return;
                }
                awaitLocked(() -> !busy);
            }
            h = handle;
            handle = 0;
        }
        release(h);
        markReleased();
    }

    /* ---- jni_scan.c ---- */

    /** Opens a scan; columns null = every column. Returns the handle. */
    static native long openScan(long file, byte[][] columns, byte[] filter, long rowGroupBegin,
            long rowGroupEnd, long rowBegin, long rowEnd, long batchRows, long limit, int threads,
            int prefetch, int cast, int validate, int nanOrder);

    /** Opens a take of {@code rows} (any order, duplicates). */
    static native long openTake(long file, long[] rows, byte[][] columns, long batchRows, int threads,
            int prefetch, int cast, int validate);

    /** Writes the stream's schema into the ArrowSchema at {@code address}. */
    static native void getSchema(long handle, long address);

    /**
     * Writes the next batch into the (released) ArrowArray at {@code address};
     * false at the end. A failure throws by its kind; a Java interrupt of the
     * reading thread cancels a scan that is waiting for its workers.
     */
    static native boolean getNext(long handle, long address);

    static native void cancel(long handle);

    /**
     * Whether the calling thread is a native worker the library attached to
     * the JVM (one calling a pool's MemoryBudget). Such a thread must not
     * release a stream: the release joins the scan's workers, maybe itself.
     */
    static native boolean onNativeWorker();

    static native void release(long handle);

    /** qv_scan_get_stats: total and pruned row groups, rows decoded and output, batches, max queued, threads, rows filtered, bytes read. */
    static native long[] stats(long handle);

    /** Streams opened and not yet released, in this JVM (for tests of the Cleaner). */
    static long liveCount() {
        NativeLibrary.load();
        return nativeLiveCount();
    }

    private static native long nativeLiveCount();
}
