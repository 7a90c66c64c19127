package io.quiver.memory;

/**
 * A snapshot of a {@link NativePool}'s accounting (Quiver's
 * {@code struct qv_pool_stats}; each field is read atomically, the set is
 * not a transaction).
 *
 * @param reserved          bytes held by the pool's reservations (their use plus a small slack each)
 * @param peakReserved      the peak of {@code reserved}
 * @param hostHeld          bytes currently acquired from the host budget (the task's charge)
 * @param hostAcquireCalls  calls of {@link MemoryBudget#acquire}
 * @param hostReleaseCalls  calls of {@link MemoryBudget#release}
 * @param hostBytesAcquired bytes granted by the host in all
 * @param hostBytesReleased bytes given back to the host in all
 * @param spillCalls        spill callbacks run
 * @param oomCount          out-of-memory errors raised
 * @param limit             the pool's own limit; 0 = unlimited or host-backed
 * @param blockSize         the unit in which the pool acquires from its host
 * @param reservations      live reservations
 * @param cacheBytes        freed large blocks kept for reuse (counted in the budget)
 * @param cacheHits         allocations served from that cache
 * @param cacheMisses       large allocations the cache could not serve
 * @param used              bytes actually charged now (exact when the pool is quiescent)
 */
public record PoolStats(long reserved, long peakReserved, long hostHeld, long hostAcquireCalls,
        long hostReleaseCalls, long hostBytesAcquired, long hostBytesReleased, long spillCalls,
        long oomCount, long limit, long blockSize, long reservations, long cacheBytes,
        long cacheHits, long cacheMisses, long used) {

    static final int FIELDS = 16;

    static PoolStats of(long[] v) {
        return new PoolStats(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                v[11], v[12], v[13], v[14], v[15]);
    }

    /** Host calls in all (acquire and release): what accounting cost the host. */
    public long hostCalls() {
        return hostAcquireCalls + hostReleaseCalls;
    }
}
