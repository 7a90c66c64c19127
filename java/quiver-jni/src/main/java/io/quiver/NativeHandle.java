package io.quiver;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * The native half of a Java object (a file, a scan, a pool): an address, the
 * function that frees it, and the bookkeeping that makes close safe.
 * Internal to Quiver's Java API (public only so that io.quiver.memory and
 * the Spark connector can hold one); not an API for users.
 *
 * <ul>
 * <li>Every native call on the handle runs between {@link #acquire()} and
 * {@link #release()}; a close that arrives meanwhile marks the handle closed
 * and the free happens when the last call in flight releases it, so a close
 * racing a call never frees memory under it. Calls after close fail with
 * {@link IllegalStateException} naming the object.</li>
 * <li>{@link #close()} is idempotent and frees exactly once.</li>
 * <li>A {@link Cleaner} backstop frees the handle of an owner that became
 * unreachable without close. The cleaning action is this handle, which
 * never refers to its owner (else the owner could never become
 * unreachable); one Cleaner thread serves every handle.</li>
 * </ul>
 */
public final class NativeHandle implements Runnable {
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "quiver-cleaner");
        t.setDaemon(true);
        return t;
    });

    // state = 2 * calls in flight + (closed ? 1 : 0); freed once closed with
    // no call in flight.
    private final AtomicLong state = new AtomicLong();
    private final long address;
    private final LongConsumer free;
    private final String what;
    private final Cleaner.Cleanable cleanable;

    /**
     * Takes ownership of {@code address} (nonzero), freed by {@code free}
     * (a static function: it must not refer to {@code owner}). {@code what}
     * names the object in errors ("Quiver file /data/x.qvr").
     */
    public NativeHandle(Object owner, long address, LongConsumer free, String what) {
        if (address == 0) {
            throw new IllegalArgumentException("a native handle of 0 for " + what);
        }
        this.address = address;
        this.free = free;
        this.what = what;
        this.cleanable = CLEANER.register(owner, this);
    }

    /**
     * Starts a call: returns the address, which stays valid until the
     * matching {@link #release()}. Throws IllegalStateException when the
     * handle is closed.
     */
    public long acquire() {
        for (;;) {
            long s = state.get();
            if ((s & 1) != 0) {
                throw new IllegalStateException(what + " is closed");
            }
            if (state.compareAndSet(s, s + 2)) {
                return address;
            }
        }
    }

    /** Ends a call started by {@link #acquire()}; frees if it was the last after a close. */
    public void release() {
        long s = state.addAndGet(-2);
        if (s == 1) {
            free.accept(address);
        } else if (s < 0) {
            throw new IllegalStateException(what + ": release without acquire");
        }
    }

    /** Whether {@link #close()} was called (or the Cleaner ran). */
    public boolean isClosed() {
        return (state.get() & 1) != 0;
    }

    /** The name of the object, for messages. */
    public String what() {
        return what;
    }

    /** Closes: idempotent; frees now, or when the last call in flight ends. */
    public void close() {
        cleanable.clean(); // runs run() at most once, also for the Cleaner
    }

    /** The cleaning action (also the body of {@link #close()}); not for direct use. */
    @Override
    public void run() {
        for (;;) {
            long s = state.get();
            if ((s & 1) != 0) {
                return;
            }
            if (state.compareAndSet(s, s | 1)) {
                if (s == 0) {
                    free.accept(address);
                }
                return;
            }
        }
    }
}
