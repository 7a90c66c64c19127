package io.quiver.memory;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A plain budget for tests: a byte limit, counts of calls and bytes, and a
 * switch that makes acquire throw (a failing spill elsewhere, in Spark terms).
 */
final class CountingBudget implements MemoryBudget {
    private final String name;
    private final long limit;
    final AtomicLong outstanding = new AtomicLong();
    final AtomicLong acquires = new AtomicLong();
    final AtomicLong releases = new AtomicLong();
    final AtomicLong acquiredBytes = new AtomicLong();
    final AtomicLong releasedBytes = new AtomicLong();
    final AtomicReference<RuntimeException> failWith = new AtomicReference<>();

    CountingBudget(String name, long limit) {
        this.name = name;
        this.limit = limit;
    }

    @Override
    public long acquire(long bytes) {
        acquires.incrementAndGet();
        RuntimeException e = failWith.get();
        if (e != null) {
            throw e;
        }
        while (true) {
            long o = outstanding.get();
            long grant = Math.max(0, Math.min(bytes, limit - o));
            if (outstanding.compareAndSet(o, o + grant)) {
                acquiredBytes.addAndGet(grant);
                return grant;
            }
        }
    }

    @Override
    public void release(long bytes) {
        releases.incrementAndGet();
        releasedBytes.addAndGet(bytes);
        long o = outstanding.addAndGet(-bytes);
        if (o < 0) {
            throw new IllegalStateException("budget '" + name + "' released more than it granted: " + o);
        }
    }

    long calls() {
        return acquires.get() + releases.get();
    }

    @Override
    public String name() {
        return name;
    }
}
