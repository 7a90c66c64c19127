package io.quiver.memory;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** A budget with a limit that counts what it grants and records the threads that call it. */
class HostBudget implements MemoryBudget {
    final long limit;
    final AtomicLong outstanding = new AtomicLong();
    final AtomicLong acquires = new AtomicLong();
    final AtomicLong releases = new AtomicLong();
    final Set<String> threads = ConcurrentHashMap.newKeySet();
    /** Whether each native worker that called was a daemon thread (it must be). */
    final Set<Boolean> nativeDaemon = ConcurrentHashMap.newKeySet();
    volatile RuntimeException toThrow;

    HostBudget(long limit) {
        this.limit = limit;
    }

    @Override
    public long acquire(long bytes) {
        acquires.incrementAndGet();
        threads.add(Thread.currentThread().getName());
        if (Thread.currentThread().getName().equals("quiver-native")) {
            nativeDaemon.add(Thread.currentThread().isDaemon());
        }
        RuntimeException t = toThrow;
        if (t != null) {
            throw t;
        }
        for (;;) {
            long o = outstanding.get();
            long give = Math.max(0, Math.min(bytes, limit - o));
            if (outstanding.compareAndSet(o, o + give)) {
                return give;
            }
        }
    }

    @Override
    public void release(long bytes) {
        releases.incrementAndGet();
        if (outstanding.addAndGet(-bytes) < 0) {
            throw new AssertionError("released more than granted");
        }
    }

    @Override
    public String name() {
        return "counting budget";
    }
}
