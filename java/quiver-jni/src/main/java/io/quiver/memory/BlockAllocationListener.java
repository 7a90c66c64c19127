package io.quiver.memory;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.LongSupplier;
import org.apache.arrow.memory.AllocationListener;
import org.apache.arrow.memory.AllocationOutcome;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;

/**
 * Charges the Arrow Java memory of one allocator to a {@link MemoryBudget} in
 * whole blocks (1 MiB by default), so that an allocation costs a budget call
 * only when it crosses a block, and Spark's task memory manager sees every
 * byte Arrow holds for the task.
 *
 * <p><b>What is charged.</b> The listener is bound to one allocator (see
 * {@link #newChildAllocator}) and reads what that allocator holds from Arrow's
 * own accounting ({@link BufferAllocator#getAllocatedMemory()}), which Arrow
 * keeps exact with atomics: it includes buffers whose last reference was
 * dropped on another thread, buffers transferred in or out, and child
 * allocators. The listener therefore keeps no per-buffer counter of its own:
 * the common allocation and release read two volatile fields and write none,
 * and the sizes Arrow passes to the callbacks are used only for admission.
 *
 * <p><b>Admission.</b> {@link #onPreAllocation} runs before Arrow accounts
 * for a buffer. When what the allocator holds plus the new buffer exceeds
 * what is charged, it asks the budget for the missing whole blocks. A grant
 * short of that is kept if it still covers the buffer (near the budget's
 * limit), and otherwise given back, and the allocation fails with Arrow's
 * {@link OutOfMemoryException}, naming the budget, the sizes and the block; a
 * budget that throws (in Spark: another consumer's spill failed) becomes the
 * same exception with the budget's exception as its cause. Both happen before
 * Arrow has accounted for anything, so the allocator is unchanged and later
 * allocations work. Threads that allocate at the same instant may each be
 * admitted against the same spare bytes; {@link #onAllocation}, which runs
 * after Arrow accounted for the buffer, then charges what is missing at once,
 * so the charge trails the allocator by at most the allocations in flight.
 * An allocation waiting in the budget is counted while it waits, so that a
 * spill giving blocks back meanwhile (Spark spills the requesting consumer
 * too) leaves it the blocks it is being admitted against.
 *
 * <p><b>Giving back, with hysteresis.</b> Up to two whole blocks beyond what
 * the allocator holds are kept, so usage going back and forth across a block
 * boundary makes no budget calls. A larger surplus (what a burst left
 * behind) is kept while it keeps being reused, and goes back in one call,
 * down to one spare block, once it has stayed unused for the retention time
 * (one second by default; 0 gives it back at once). A task that allocates
 * and frees the same batch sizes over and over therefore makes no budget
 * calls once warm. {@link #releaseUnused()} (Spark's spill) and closing the
 * allocator give back without waiting.
 *
 * <p><b>No lock across the budget.</b> The state is two atomically updated
 * longs; no monitor or lock is held while the budget is called. Spark's
 * {@code TaskMemoryManager.acquireExecutionMemory} is synchronized and may
 * spill another consumer that frees Arrow buffers of this very allocator on
 * another thread; that thread's {@link #onRelease} only reads and
 * compare-and-sets, so it can never wait for the thread inside the budget.
 */
public final class BlockAllocationListener implements AllocationListener {
    /** The default block: 1 MiB, the granularity of budget calls. */
    public static final long DEFAULT_BLOCK_SIZE = 1L << 20;
    /** The largest block: 1 TiB, so that sums of a few blocks cannot overflow. */
    public static final long MAX_BLOCK_SIZE = 1L << 40;
    /** The default time a surplus above two blocks is kept unused: 1 s. */
    public static final long DEFAULT_RETENTION_NANOS = 1_000_000_000L;

    private static final VarHandle CHARGED;
    private static final VarHandle SURPLUS_SINCE;
    private static final VarHandle BUDGET_CALLS;
    private static final VarHandle ADMITTING;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            CHARGED = lookup.findVarHandle(BlockAllocationListener.class, "charged", long.class);
            SURPLUS_SINCE = lookup.findVarHandle(BlockAllocationListener.class, "surplusSince", long.class);
            BUDGET_CALLS = lookup.findVarHandle(BlockAllocationListener.class, "budgetCalls", long.class);
            ADMITTING = lookup.findVarHandle(BlockAllocationListener.class, "admitting", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final MemoryBudget budget;
    private final long blockSize;
    private final long retentionNanos;
    private final LongSupplier clock;

    /** Bytes the budget granted and this listener holds. */
    private volatile long charged;
    /**
     * When the surplus above two blocks was first seen unused ({@link System#nanoTime()}),
     * or 0 when there is none; any nonzero mark is replaced by 1 if nanoTime is 0.
     */
    private volatile long surplusSince;
    private volatile long budgetCalls;
    /**
     * Bytes of allocations inside the slow path of admission (asking the
     * budget), which Arrow has not accounted yet: giving back never takes
     * the blocks they are being admitted against.
     */
    private volatile long admitting;
    /** The allocator whose accounting is charged; set once by {@link #bind}. */
    private volatile BufferAllocator accountant;
    /** The allocator whose closing gives everything back (see {@link #onChildRemoved}). */
    private volatile BufferAllocator bound;
    private volatile boolean closed;

    /** A listener charging {@code budget} in blocks of {@code blockSize} bytes. */
    public BlockAllocationListener(MemoryBudget budget, long blockSize) {
        this(budget, blockSize, DEFAULT_RETENTION_NANOS);
    }

    /**
     * A listener charging {@code budget} in blocks of {@code blockSize} bytes
     * that keeps a surplus above two blocks for {@code retentionNanos} (0: gives
     * it back as soon as it appears; {@link Long#MAX_VALUE}: only on
     * {@link #releaseUnused()} and close).
     */
    public BlockAllocationListener(MemoryBudget budget, long blockSize, long retentionNanos) {
        this(budget, blockSize, retentionNanos, System::nanoTime);
    }

    /** As above, with the clock the retention is measured by (tests pass their own). */
    BlockAllocationListener(MemoryBudget budget, long blockSize, long retentionNanos, LongSupplier clock) {
        if (budget == null) {
            throw new IllegalArgumentException("BlockAllocationListener: the budget is null");
        }
        if (blockSize <= 0 || blockSize > MAX_BLOCK_SIZE) {
            throw new IllegalArgumentException("BlockAllocationListener: block size " + blockSize
                    + " is not between 1 and " + MAX_BLOCK_SIZE + " bytes");
        }
        if (retentionNanos < 0) {
            throw new IllegalArgumentException("BlockAllocationListener: retention " + retentionNanos
                    + " ns is negative");
        }
        this.budget = budget;
        this.blockSize = blockSize;
        this.retentionNanos = retentionNanos;
        this.clock = clock;
    }

    /**
     * A child of {@code parent} whose allocations are charged to {@code budget}
     * in blocks of {@code blockSize} bytes; closing it gives back everything
     * charged. Its own child allocators inherit the listener, so what they hold
     * is charged too.
     *
     * <p>Arrow tells a listener that an allocator closed only through the
     * listener of that allocator's parent, so the allocator returned is the
     * child of a private intermediate allocator that carries this listener as
     * well; that one closes itself when the returned allocator does.
     */
    public static BufferAllocator newChildAllocator(BufferAllocator parent, String name,
                                                    MemoryBudget budget, long blockSize) {
        return newChildAllocator(parent, name,
                new BlockAllocationListener(budget, blockSize, DEFAULT_RETENTION_NANOS));
    }

    /** As {@link #newChildAllocator(BufferAllocator, String, MemoryBudget, long)}, with a listener made by the caller. */
    public static BufferAllocator newChildAllocator(BufferAllocator parent, String name,
                                                    BlockAllocationListener listener) {
        if (parent == null || name == null || listener == null) {
            throw new IllegalArgumentException("BlockAllocationListener.newChildAllocator: null argument");
        }
        BufferAllocator owner = parent.newChildAllocator(name + " (charged to " + listener.budget.name() + ")",
                listener, 0, Long.MAX_VALUE);
        BufferAllocator child;
        try {
            if (listener.accountant != null) {
                throw new IllegalStateException("BlockAllocationListener: already bound to allocator '"
                        + listener.accountant.getName() + "'");
            }
            child = owner.newChildAllocator(name, listener, 0, Long.MAX_VALUE);
        } catch (RuntimeException | Error e) {
            owner.close();
            throw e;
        }
        // Bound before the allocator is handed out: nothing can allocate
        // through it earlier. (A listener is bound once; reusing one for a
        // second allocator is refused above.)
        listener.bound = child;
        listener.accountant = owner;
        return child;
    }

    /** Bytes the bound allocator holds now (Arrow's accounting; 0 before it is bound). */
    public long used() {
        BufferAllocator a = accountant;
        return a == null ? 0 : a.getAllocatedMemory();
    }

    /** Bytes charged to the budget now. */
    public long charged() {
        return charged;
    }

    /** Calls made to the budget so far (acquire and release). */
    public long budgetCalls() {
        return budgetCalls;
    }

    /** The block size in bytes. */
    public long blockSize() {
        return blockSize;
    }

    /** The budget charged. */
    public MemoryBudget budget() {
        return budget;
    }

    // ---------------------------------------------------------------- Arrow's callbacks

    @Override
    public void onPreAllocation(long size) {
        BufferAllocator a = accountant;
        if (a == null) {
            throw new OutOfMemoryException("BlockAllocationListener charging budget '" + budget.name()
                    + "' is not bound to an allocator: create the allocator with"
                    + " BlockAllocationListener.newChildAllocator");
        }
        long held = a.getAllocatedMemory();
        // The fast path: the buffer fits in what is charged already.
        if (size <= charged - held) {
            return;
        }
        admit(a, held, size);
    }

    @Override
    public void onAllocation(long size) {
        BufferAllocator a = accountant;
        if (a == null) {
            return;
        }
        long held = a.getAllocatedMemory();
        long c = charged;
        if (held > c) {
            // Admitted against spare bytes another thread took at the same
            // instant, or allocated without onPreAllocation (Arrow's
            // AllocationReservation): charge it now. This may not throw.
            cover(held);
        } else if (c - held <= 2 * blockSize && surplusSince != 0) {
            // The surplus is in use again: its retention starts over.
            surplusSince = 0;
        }
    }

    @Override
    public boolean onFailedAllocation(long size, AllocationOutcome outcome) {
        // Arrow's own limit refused the buffer after admission; Arrow accounts
        // for nothing and throws. A block charged for it becomes surplus,
        // handled by the usual hysteresis.
        return false;
    }

    @Override
    public void onRelease(long size) {
        BufferAllocator a = accountant;
        if (a == null) {
            return;
        }
        // Arrow has already taken the buffer out of its accounting.
        long held = a.getAllocatedMemory();
        long surplus = charged - held;
        if (surplus <= 2 * blockSize) {
            return;
        }
        long now = clock.getAsLong() | 1L;
        long since = surplusSince;
        if (since == 0) {
            SURPLUS_SINCE.compareAndSet(this, 0L, now);
            if (retentionNanos != 0) {
                return;
            }
        } else if (now - since < retentionNanos) {
            return;
        }
        shrink(a, blockSize);
    }

    @Override
    public void onChildRemoved(BufferAllocator parentAllocator, BufferAllocator childAllocator) {
        BufferAllocator b = bound;
        if (b != null && childAllocator == b && parentAllocator == accountant) {
            close(parentAllocator);
        }
    }

    // ---------------------------------------------------------------- giving back

    /**
     * Gives back every whole block the allocator does not need now, in one
     * budget call, without waiting for the retention time: what Spark's spill
     * of the task's consumer calls. Returns the bytes given back.
     */
    public long releaseUnused() {
        BufferAllocator a = accountant;
        if (a == null) {
            return 0;
        }
        return shrink(a, 0);
    }

    /**
     * Takes {@code charged} down to what the allocator holds rounded up to a
     * block plus {@code spare}, then gives the difference to the budget.
     */
    private long shrink(BufferAllocator a, long spare) {
        long give;
        long target;
        while (true) {
            long c = charged;
            target = satAdd(roundUp(satAdd(a.getAllocatedMemory(), admitting)), spare);
            if (c <= target) {
                return 0;
            }
            if (CHARGED.compareAndSet(this, c, target)) {
                give = c - target;
                break;
            }
        }
        surplusSince = 0;
        // An allocation admitted before the compare-and-set may have been
        // accounted since: keep what it needs rather than give it back and ask
        // again. (One accounted after this read sees the lower charge in its
        // own onAllocation and covers itself.)
        long needed = satAdd(roundUp(satAdd(a.getAllocatedMemory(), admitting)), spare);
        if (needed > target) {
            long keep = Math.min(give, needed - target);
            CHARGED.getAndAdd(this, keep);
            give -= keep;
        }
        if (give > 0) {
            release(give);
        }
        return give;
    }

    /**
     * Gives back everything charged and refuses later allocations: called when
     * the bound allocator closes (Arrow closes it only when it holds nothing),
     * then closes the intermediate allocator.
     */
    private void close(BufferAllocator owner) {
        if (closed) {
            return;
        }
        closed = true;
        long c = (long) CHARGED.getAndSet(this, 0L);
        if (c > 0) {
            release(c);
        }
        owner.close();
    }

    // ---------------------------------------------------------------- charging

    private void admit(BufferAllocator a, long held, long size) {
        if (closed) {
            throw new OutOfMemoryException(describe("allocator closed", size, held, 0, 0, null));
        }
        ADMITTING.getAndAdd(this, size);
        try {
            admitSlow(a, held, size);
        } finally {
            ADMITTING.getAndAdd(this, -size);
        }
    }

    private void admitSlow(BufferAllocator a, long held, long size) {
        long granted = 0;
        // A full grant that still does not cover the buffer means blocks went
        // back meanwhile (another thread's releaseUnused): ask again, a few
        // rounds at most. A short grant is final.
        for (int round = 0; ; round++) {
            long need;
            try {
                need = Math.addExact(held, size);
            } catch (ArithmeticException e) {
                giveBack(a, granted, size);
                throw new OutOfMemoryException(describe("size out of range", size, held, 0, 0, null));
            }
            long want = roundUp(need) - charged;
            if (want <= 0) {
                return; // charged enough, here or by another thread meanwhile
            }
            long got;
            try {
                got = acquire(want);
            } catch (RuntimeException | OutOfMemoryError e) {
                // Spark reports a failed spill elsewhere as SparkOutOfMemoryError:
                // a clean Arrow error, nothing accounted, the allocator unchanged.
                giveBack(a, granted, size);
                throw new OutOfMemoryException(describe("the budget failed", size, held, want, 0, e), e);
            }
            CHARGED.getAndAdd(this, got);
            granted += got;
            if (closed) {
                giveBack(a, granted, size);
                throw new OutOfMemoryException(describe("allocator closed", size, held, want, got, null));
            }
            held = a.getAllocatedMemory();
            if (size <= charged - held) {
                return; // a grant short of whole blocks is kept when it covers the buffer
            }
            if (got < want || round == 2) {
                giveBack(a, granted, size);
                throw new OutOfMemoryException(describe("short grant", size, held, want, got, null));
            }
        }
    }

    /**
     * Undoes the grants of a refused admission of {@code size} bytes: gives
     * back up to {@code granted} bytes, but never blocks that what the
     * allocator holds or other admissions in progress need (some of the grant
     * may have gone back already through releaseUnused).
     */
    private void giveBack(BufferAllocator a, long granted, long size) {
        while (granted > 0) {
            long c = charged;
            long keep = roundUp(satAdd(a.getAllocatedMemory(), Math.max(0, admitting - size)));
            long g = Math.min(granted, c - keep);
            if (g <= 0) {
                return;
            }
            if (CHARGED.compareAndSet(this, c, c - g)) {
                release(g);
                return;
            }
        }
    }

    /** Charges what the allocator holds beyond what is charged; never throws. */
    private void cover(long held) {
        if (closed) {
            return;
        }
        long want = roundUp(held) - charged;
        if (want <= 0) {
            return;
        }
        try {
            CHARGED.getAndAdd(this, acquire(want));
        } catch (Throwable t) {
            // Arrow forbids an exception here: the buffer exists already. The
            // shortfall stays visible (used() > charged()) and the next
            // onPreAllocation asks for it before admitting anything more.
        }
    }

    private long acquire(long bytes) {
        BUDGET_CALLS.getAndAdd(this, 1L);
        long got = budget.acquire(bytes);
        if (got < 0) {
            return 0;
        }
        if (got > bytes) {
            // The budget counts all it returned as granted, but only what was
            // asked is charged here and ever released: the excess goes back
            // now, or the budget would keep it charged forever.
            release(got - bytes);
            return bytes;
        }
        return got;
    }

    private void release(long bytes) {
        BUDGET_CALLS.getAndAdd(this, 1L);
        budget.release(bytes);
    }

    private long roundUp(long bytes) {
        long rem = bytes % blockSize;
        if (rem == 0) {
            return bytes;
        }
        return satAdd(bytes - rem, blockSize);
    }

    private static long satAdd(long x, long y) {
        long r = x + y;
        return ((x ^ r) & (y ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private String describe(String what, long size, long held, long wanted, long granted, Throwable cause) {
        StringBuilder sb = new StringBuilder();
        sb.append("Arrow allocation of ").append(size).append(" bytes refused by budget '")
                .append(budget.name()).append("': ").append(what)
                .append(" (allocator holds ").append(held)
                .append(" bytes, charged ").append(charged)
                .append(" bytes, block ").append(blockSize).append(" bytes");
        if (wanted > 0) {
            sb.append(", asked ").append(wanted).append(" bytes, granted ").append(granted);
        }
        sb.append(')');
        if (cause != null) {
            sb.append(": ").append(cause);
        }
        return sb.toString();
    }

    @Override
    public String toString() {
        return "BlockAllocationListener{budget=" + budget.name() + ", block=" + blockSize
                + ", used=" + used() + ", charged=" + charged + ", calls=" + budgetCalls + "}";
    }
}
