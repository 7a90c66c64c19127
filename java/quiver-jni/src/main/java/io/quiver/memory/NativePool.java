package io.quiver.memory;

import io.quiver.NativeHandle;
import io.quiver.NativeLibrary;

import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A Quiver memory pool: the budget that files, scans and their batches are
 * charged to ({@code FileOptions.pool}). Either a byte limit of its own, or
 * a host {@link MemoryBudget} that the pool asks for memory in whole blocks
 * (in Spark, the task's memory consumer; see docs/memory.md).
 *
 * <p>The host is called from whichever thread needs memory: the caller's,
 * or a native scan worker that the library attached to the JVM as a daemon
 * thread (and detaches when the worker exits). No Quiver lock is held
 * during those calls. An exception thrown by the host's {@code acquire}
 * counts as a grant of 0; its text appears in the
 * {@link io.quiver.QuiverOutOfMemoryException} that the failed allocation
 * raises.
 *
 * <p>Lifetime: {@link #close()} drops this object's hold on the pool. Files,
 * streams and batches opened with the pool hold it too, so batches imported
 * into Arrow Java may outlive the pool's close; the pool, and the host's
 * reference, go with the last of them. The pool's host memory is given back
 * to the host then, so a Spark task closes its files and batches before it
 * checks its balance. Closing is idempotent; a {@link java.lang.ref.Cleaner}
 * closes a pool that became unreachable.
 */
public final class NativePool implements AutoCloseable {
    static {
        NativeLibrary.load();
    }

    private final String name;
    private final NativeHandle handle;

    private NativePool(String name, long address) {
        this.name = name;
        this.handle = new NativeHandle(this, address, NativePool::nativeDestroy, "NativePool '" + name + "'");
    }

    /**
     * A pool with a byte limit of its own ({@code limit} 0 = unlimited),
     * charged to nobody else.
     */
    public static NativePool create(String name, long limit) {
        Objects.requireNonNull(name, "name");
        if (limit < 0) {
            throw new IllegalArgumentException("NativePool '" + name + "': negative limit " + limit);
        }
        return new NativePool(name, nativeCreate(name.getBytes(StandardCharsets.UTF_8), limit, null, 0));
    }

    /**
     * A pool charged to {@code host} in blocks of {@code blockSize} bytes
     * (0 = Quiver's default, 1 MiB; rounded up to 64). The block is the unit
     * of every host call and the most a pool holds from its host beyond what
     * it uses plus a couple of blocks of hysteresis, so smaller blocks
     * charge the host closer to real use at the cost of more calls.
     */
    public static NativePool create(String name, MemoryBudget host, long blockSize) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(host, "host");
        if (blockSize < 0) {
            throw new IllegalArgumentException("NativePool '" + name + "': negative block size " + blockSize);
        }
        return new NativePool(name, nativeCreate(name.getBytes(StandardCharsets.UTF_8), 0, host, blockSize));
    }

    /** The pool's name, as in its error messages. */
    public String name() {
        return name;
    }

    /**
     * The address of the native pool, for the JNI library
     * ({@code qvj_pool_get}); IllegalStateException once closed. The pool
     * must not be closed while a call that received this address is
     * running (files opened with it retain the pool themselves).
     */
    public long nativeHandle() {
        long a = handle.acquire();
        handle.release();
        return a;
    }

    /**
     * Calls {@code f} with the native pool's address, valid until {@code f}
     * returns even if another thread closes the pool meanwhile (the close
     * takes effect afterwards); IllegalStateException once closed. How the
     * Java API hands the pool to a native call that retains it (opening a
     * file).
     */
    public long withAddress(java.util.function.LongUnaryOperator f) {
        long a = handle.acquire();
        try {
            return f.applyAsLong(a);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Gives memory back to the host now: evicts the pool's block cache,
     * returns host blocks it keeps beyond what its reservations hold, then
     * asks spillable consumers to spill, largest first, until {@code wanted}
     * bytes went back ({@code wanted} 0 = all that can go). Returns the
     * bytes actually released to the host (0 for a pool without a host, or
     * once closed). Callable from any thread, including from inside the
     * host's own {@code acquire} (a Spark {@code MemoryConsumer.spill}).
     */
    public long releaseUnused(long wanted) {
        long a;
        try {
            a = handle.acquire();
        } catch (IllegalStateException closed) {
            return 0;
        }
        try {
            return nativeReleaseUnused(a, Math.max(0, wanted));
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
    }

    /** A snapshot of the pool's accounting; IllegalStateException once closed. */
    public PoolStats stats() {
        long a = handle.acquire();
        try {
            long[] v = new long[PoolStats.FIELDS];
            nativeStats(a, v);
            return PoolStats.of(v);
        } finally {
            handle.release();
            Reference.reachabilityFence(this);
        }
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return handle.isClosed();
    }

    /** Drops this object's hold on the pool (idempotent); see the class comment. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "NativePool '" + name + "'" + (isClosed() ? " (closed)" : "");
    }

    private static native long nativeCreate(byte[] name, long limit, MemoryBudget host, long blockSize);

    private static native long nativeReleaseUnused(long address, long wanted);

    private static native void nativeStats(long address, long[] out);

    private static native void nativeDestroy(long address);
}
