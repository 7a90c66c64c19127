package io.quiver.memory;

/**
 * A budget that Quiver's memory is charged to: the host of a native pool
 * ({@link NativePool}) and of the Arrow allocation listener
 * ({@link BlockAllocationListener}). In Spark it is the task's
 * {@code MemoryConsumer}; elsewhere a plain limit.
 *
 * <p>Both methods are called in whole blocks, never per allocation, from
 * whichever thread needs the memory: the caller's thread, or a native scan
 * worker that the JNI library attached to the JVM as a daemon thread. They
 * are never called with a Quiver lock or monitor held, so an implementation
 * may block, spill other consumers, or call back into Quiver (for example
 * {@link NativePool#releaseUnused(long)} from a spill).
 */
public interface MemoryBudget {
    /**
     * Asks for {@code bytes}; returns how many are granted, from 0 to
     * {@code bytes}. A short grant is not an error here: the caller fails the
     * allocation that needed it with an out-of-memory error naming the budget.
     * An exception thrown here is treated as a grant of 0 and its message is
     * kept in that error. A return above {@code bytes} grants {@code bytes}
     * and the excess is released back at once; a negative return grants 0.
     */
    long acquire(long bytes);

    /** Gives back {@code bytes} that an earlier {@link #acquire} granted. */
    void release(long bytes);

    /** A name for error messages (a task's attempt id, a pool's purpose). */
    default String name() {
        return getClass().getSimpleName();
    }
}
