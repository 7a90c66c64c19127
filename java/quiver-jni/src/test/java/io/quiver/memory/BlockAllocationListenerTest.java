package io.quiver.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.AllocationReservation;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.OwnershipTransferResult;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * BlockAllocationListener over plain budgets: block charging, admission,
 * hysteresis (counted in budget calls), releaseUnused, close, and allocation
 * and release from several threads.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BlockAllocationListenerTest {
    private static final long KIB = 1L << 10;
    private static final long MIB = 1L << 20;

    private BufferAllocator root;

    @BeforeEach
    void openRoot() {
        root = new RootAllocator(Long.MAX_VALUE);
    }

    @AfterEach
    void closeRoot() {
        // Fails the test if any allocator or buffer was left open.
        root.close();
    }

    private static BlockAllocationListener listenerOf(BufferAllocator a) {
        return (BlockAllocationListener) a.getListener();
    }

    private static void closeAll(List<ArrowBuf> bufs) {
        for (ArrowBuf b : bufs) {
            b.close();
        }
        bufs.clear();
    }

    @Test
    void smallBuffersChargeOneBlockAndRepeatFree() {
        CountingBudget budget = new CountingBudget("task 7", Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "scan", budget, MIB);
        BlockAllocationListener l = listenerOf(a);
        List<ArrowBuf> bufs = new ArrayList<>();
        for (int round = 0; round < 20; round++) {
            for (int i = 0; i < 512; i++) {
                bufs.add(a.buffer(128));
            }
            assertEquals(512 * 128, l.used());
            assertEquals(MIB, l.charged());
            closeAll(bufs);
            assertEquals(0, l.used());
        }
        // One acquire for the first buffer; the block is kept as the spare.
        assertEquals(1, budget.acquires.get());
        assertEquals(0, budget.releases.get());
        assertEquals(1, l.budgetCalls());
        assertEquals(MIB, budget.outstanding.get());
        a.close();
        assertEquals(0, budget.outstanding.get());
        assertEquals(0, l.charged());
        assertEquals(2, budget.calls());
        assertEquals(0, root.getAllocatedMemory(), "the intermediate allocator closed too");
    }

    @Test
    void blockSizeIsConfigurable() {
        CountingBudget budget = new CountingBudget("b", Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "x", budget, 64 * KIB);
        BlockAllocationListener l = listenerOf(a);
        assertEquals(64 * KIB, l.blockSize());
        ArrowBuf b1 = a.buffer(100 * KIB); // rounded by Arrow to 128 KiB
        assertEquals(128 * KIB, l.used());
        assertEquals(128 * KIB, l.charged());
        ArrowBuf b2 = a.buffer(1);
        assertEquals(192 * KIB, l.charged());
        b1.close();
        b2.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocationListener(budget, 0));
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocationListener(budget, Long.MAX_VALUE));
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocationListener(budget, MIB, -1));
        assertThrows(IllegalArgumentException.class, () -> new BlockAllocationListener(null, MIB));
    }

    @Test
    void shortGrantRefusesTheAllocationAndGivesBackWhatItGot() {
        // 2.25 MiB: two blocks fit, a third is granted a quarter.
        CountingBudget budget = new CountingBudget("task 12 consumer", 9 * MIB / 4);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "writer", budget, MIB);
        BlockAllocationListener l = listenerOf(a);
        ArrowBuf big = a.buffer(MIB);
        ArrowBuf half = a.buffer(MIB / 2);
        assertEquals(2 * MIB, l.charged());
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> a.buffer(MIB));
        String m = e.getMessage();
        assertTrue(m.contains("'task 12 consumer'"), m);
        assertTrue(m.contains("1048576 bytes refused"), m);
        assertTrue(m.contains("block 1048576"), m);
        assertTrue(m.contains("short grant"), m);
        assertTrue(m.contains("asked 1048576 bytes, granted 262144"), m);
        assertNull(e.getCause());
        // Nothing kept: the half block went back, the allocator is unchanged.
        assertEquals(2 * MIB, budget.outstanding.get());
        assertEquals(2 * MIB, l.charged());
        assertEquals(MIB + MIB / 2, a.getAllocatedMemory());
        // What fits in the charged blocks is still admitted, and a short
        // grant that covers the buffer is kept (2 MiB charged + 256 KiB).
        ArrowBuf quarter = a.buffer(MIB / 4);
        ArrowBuf eighth = a.buffer(MIB / 2); // needs 2.25 MiB: granted exactly that
        assertEquals(2 * MIB + MIB / 4, l.charged());
        assertEquals(2 * MIB + MIB / 4, budget.outstanding.get());
        eighth.close();
        big.close();
        // With a block free again, the refused size fits.
        ArrowBuf again = a.buffer(MIB);
        again.close();
        half.close();
        quarter.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
        assertEquals(budget.acquiredBytes.get(), budget.releasedBytes.get());
    }

    @Test
    void throwingBudgetBecomesOutOfMemoryWithItsCause() {
        CountingBudget budget = new CountingBudget("task 3", Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "reader", budget, MIB);
        BlockAllocationListener l = listenerOf(a);
        ArrowBuf first = a.buffer(512 * KIB);
        RuntimeException spillFailure = new IllegalStateException("error while calling spill() on sorter");
        budget.failWith.set(spillFailure);
        long before = a.getAllocatedMemory();
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> a.buffer(2 * MIB));
        assertSame(spillFailure, e.getCause());
        assertTrue(e.getMessage().contains("the budget failed"), e.getMessage());
        assertTrue(e.getMessage().contains("error while calling spill() on sorter"), e.getMessage());
        assertTrue(e.getMessage().contains("'task 3'"), e.getMessage());
        // Arrow accounted nothing; the charge is what it was.
        assertEquals(before, a.getAllocatedMemory());
        assertEquals(MIB, l.charged());
        assertEquals(MIB, budget.outstanding.get());
        // Within the charged block, allocations go on while the budget is failing.
        ArrowBuf small = a.buffer(256 * KIB);
        budget.failWith.set(null);
        ArrowBuf big = a.buffer(2 * MIB);
        assertEquals(3 * MIB, l.charged(), "768 KiB + 2 MiB held");
        big.close();
        small.close();
        first.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
    }

    /**
     * A budget that returns more than it was asked for counts all of it as
     * granted; the listener charges only what it asked, so the excess must
     * go back at once, or the budget stays charged after the allocator
     * closed (a leak in a Spark task's books).
     */
    @Test
    void aBudgetGrantingMoreThanAskedGetsTheExcessBackAtOnce() {
        CountingBudget counting = new CountingBudget("greedy", Long.MAX_VALUE);
        MemoryBudget greedy = new MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                return counting.acquire(3 * bytes);
            }

            @Override
            public void release(long bytes) {
                counting.release(bytes);
            }
        };
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "reader", greedy, MIB);
        BlockAllocationListener l = listenerOf(a);
        ArrowBuf b = a.buffer(1500 * KIB);
        assertEquals(2 * MIB, l.charged());
        assertEquals(2 * MIB, counting.outstanding.get(), "the budget holds what the listener charged, no more");
        b.close();
        a.close();
        assertEquals(0, counting.outstanding.get());
    }

    @Test
    void aBudgetSpillingThisListenerWhileGrantingStillAdmits() {
        // Spark spills the requesting consumer itself when nobody else can
        // give memory: its spill takes back the blocks this listener kept,
        // which the request had counted on.
        AtomicReference<BlockAllocationListener> self = new AtomicReference<>();
        CountingBudget inner = new CountingBudget("self-spilling", 8 * MIB);
        MemoryBudget budget = new MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                self.get().releaseUnused();
                return inner.acquire(bytes);
            }

            @Override
            public void release(long bytes) {
                inner.release(bytes);
            }
        };
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, Long.MAX_VALUE);
        self.set(l);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "self", l);
        List<ArrowBuf> bufs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            bufs.add(a.buffer(MIB));
        }
        closeAll(bufs);
        assertEquals(3 * MIB, l.charged(), "kept after the burst");
        ArrowBuf big = a.buffer(4 * MIB); // asks for one block; the spill takes three
        assertEquals(4 * MIB, l.charged());
        assertEquals(4 * MIB, inner.outstanding.get());
        big.close();
        a.close();
        assertEquals(0, inner.outstanding.get());
    }

    @Test
    void oscillatingAcrossABlockBoundaryMakesNoBudgetCalls() {
        CountingBudget budget = new CountingBudget("osc", Long.MAX_VALUE);
        // Retention 0: a surplus above two blocks goes back at once, so the
        // only thing keeping calls away here is the two-block hysteresis.
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, 0);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "osc", l);
        List<ArrowBuf> base = new ArrayList<>();
        for (long s : new long[] {512 * KIB, 256 * KIB, 128 * KIB, 64 * KIB}) {
            base.add(a.buffer(s)); // 960 KiB: just under the first boundary
        }
        assertEquals(1, budget.calls());
        for (int i = 0; i < 1000; i++) {
            ArrowBuf b = a.buffer(128 * KIB); // crosses into the second block
            b.close();
        }
        assertEquals(2, budget.calls(), "one acquire for the second block, nothing after");
        assertEquals(2 * MIB, l.charged());

        // A burst of 6 MiB freed with retention 0: each time the surplus
        // passes two blocks it goes back down to one spare block.
        List<ArrowBuf> burst = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            burst.add(a.buffer(MIB));
        }
        long callsAfterBurst = budget.calls();
        assertEquals(7 * MIB, l.charged());
        closeAll(burst);
        assertEquals(callsAfterBurst + 5, budget.calls(), "the first free leaves 1.06 MiB spare");
        assertEquals(2 * MIB, l.charged(), "960 KiB held: one block plus one spare");
        closeAll(base);
        a.close();
        assertEquals(0, budget.outstanding.get());
    }

    @Test
    void aSurplusUnusedForTheRetentionTimeGoesBackInOneCall() {
        CountingBudget budget = new CountingBudget("retention", Long.MAX_VALUE);
        AtomicLong now = new AtomicLong(1_000);
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, 500, now::get);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "retention", l);
        ArrowBuf base = a.buffer(MIB / 2);
        List<ArrowBuf> burst = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            burst.add(a.buffer(MIB));
        }
        assertEquals(7 * MIB, l.charged());
        long calls = budget.calls();
        for (int i = 0; i < 5; i++) {
            burst.get(i).close(); // the surplus passes two blocks at t=1000
        }
        now.set(1_400);
        assertEquals(calls, budget.calls(), "kept within the retention time");
        // Reused before the time is up: the retention starts over.
        for (int i = 0; i < 4; i++) {
            burst.set(i, a.buffer(MIB)); // 5.5 MiB held: within two blocks of 7
        }
        for (int i = 0; i < 4; i++) {
            burst.get(i).close(); // the surplus passes two blocks again at t=1400
        }
        now.set(1_800);
        burst.get(5).close();
        assertEquals(calls, budget.calls(), "400 ns since it was last needed");
        now.set(1_900);
        ArrowBuf b = a.buffer(KIB);
        b.close(); // the first release after 500 ns gives the surplus back at once
        assertEquals(calls + 1, budget.calls());
        assertEquals(1, budget.releases.get());
        assertEquals(5 * MIB, budget.releasedBytes.get());
        assertEquals(2 * MIB, l.charged(), "512 KiB held: one block plus one spare");
        base.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
    }

    @Test
    void repeatedBurstsAreKeptWhileReused() {
        CountingBudget budget = new CountingBudget("bursts", Long.MAX_VALUE);
        // Unbounded retention: the burst's blocks stay until releaseUnused or
        // close, so the calls below do not depend on how fast the test runs.
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "bursts", l);
        List<ArrowBuf> bufs = new ArrayList<>();
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < 8; i++) {
                bufs.add(a.buffer(MIB));
            }
            closeAll(bufs);
            if (round == 0) {
                assertEquals(8, budget.calls(), "the first round charges eight blocks");
            }
        }
        assertEquals(8, budget.calls(), "warm rounds make no budget calls");
        assertEquals(8 * MIB, l.charged());
        assertEquals(8 * MIB, l.releaseUnused());
        assertEquals(9, budget.calls());
        assertEquals(0, budget.outstanding.get());
        a.close();
        assertEquals(9, budget.calls(), "nothing left to give back at close");
    }

    @Test
    void releaseUnusedGivesBackEveryWholeBlockNotNeeded() {
        CountingBudget budget = new CountingBudget("spill", Long.MAX_VALUE);
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "spill", l);
        assertEquals(0, l.releaseUnused());
        ArrowBuf keep = a.buffer(MIB + MIB / 2 - 0); // rounded to 2 MiB by Arrow
        List<ArrowBuf> more = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            more.add(a.buffer(MIB));
        }
        ArrowBuf small = a.buffer(4 * KIB);
        long held = a.getAllocatedMemory();
        assertEquals(7 * MIB + 4 * KIB, held);
        assertEquals(8 * MIB, l.charged());
        closeAll(more);
        assertEquals(8 * MIB, l.charged(), "kept: unbounded retention");
        long before = budget.releasedBytes.get();
        long released = l.releaseUnused();
        assertEquals(5 * MIB, released);
        assertEquals(released, budget.releasedBytes.get() - before);
        assertEquals(3 * MIB, l.charged(), "2 MiB + 4 KiB held needs three blocks, no spare");
        assertEquals(0, l.releaseUnused());
        keep.close();
        small.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
        assertEquals(budget.acquiredBytes.get(), budget.releasedBytes.get());
    }

    @Test
    void childAllocatorsAreChargedThroughTheListener() {
        CountingBudget budget = new CountingBudget("children", Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "task", budget, MIB);
        BlockAllocationListener l = listenerOf(a);
        BufferAllocator c1 = a.newChildAllocator("c1", 0, Long.MAX_VALUE);
        BufferAllocator c2 = c1.newChildAllocator("c2", 0, Long.MAX_VALUE);
        assertSame(l, c1.getListener());
        ArrowBuf b1 = c1.buffer(2 * MIB);
        ArrowBuf b2 = c2.buffer(MIB);
        ArrowBuf b3 = a.buffer(MIB);
        assertEquals(4 * MIB, l.used());
        assertEquals(4 * MIB, l.charged());
        b2.close();
        c2.close(); // a grandchild closing is not the allocator closing
        assertEquals(4 * MIB, budget.outstanding.get());
        b1.close();
        c1.close();
        b3.close();
        assertEquals(0, l.used());
        a.close();
        assertEquals(0, budget.outstanding.get());
        assertEquals(0, l.charged());
    }

    @Test
    void ownershipTransfersMoveTheCharge() {
        CountingBudget budget = new CountingBudget("transfer", Long.MAX_VALUE);
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "src", l);
        BufferAllocator other = root.newChildAllocator("other", 0, Long.MAX_VALUE);
        ArrowBuf b = a.buffer(4 * MIB);
        OwnershipTransferResult r = b.getReferenceManager().transferOwnership(b, other);
        b.close();
        ArrowBuf moved = r.getTransferredBuffer();
        assertEquals(0, l.used(), "Arrow's accounting moved to the other allocator");
        assertEquals(4 * MIB, l.releaseUnused());
        // ... and back in: the release in this allocator is covered.
        OwnershipTransferResult back = moved.getReferenceManager().transferOwnership(moved, a);
        moved.close();
        ArrowBuf home = back.getTransferredBuffer();
        assertEquals(4 * MIB, l.used());
        ArrowBuf next = a.buffer(KIB); // admission sees what was transferred in
        assertEquals(5 * MIB, l.charged());
        next.close();
        home.close();
        assertEquals(0, l.used());
        other.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
    }

    @Test
    void reservationsAllocatedWithoutPreAllocationAreCovered() {
        CountingBudget budget = new CountingBudget("reservation", Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "r", budget, MIB);
        BlockAllocationListener l = listenerOf(a);
        ArrowBuf b;
        try (AllocationReservation r = a.newReservation()) {
            assertTrue(r.add(3 * MIB)); // Arrow rounds reservations to 4 MiB
            b = r.allocateBuffer();
        }
        assertEquals(4 * MIB, l.used());
        assertEquals(4 * MIB, l.charged(), "charged in onAllocation");
        b.close();
        a.close();
        assertEquals(0, budget.outstanding.get());
    }

    @Test
    void anUnboundListenerRefusesWithAClearMessage() {
        CountingBudget budget = new CountingBudget("unbound", Long.MAX_VALUE);
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB);
        try (BufferAllocator a = root.newChildAllocator("direct", l, 0, Long.MAX_VALUE)) {
            OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> a.buffer(64));
            assertTrue(e.getMessage().contains("newChildAllocator"), e.getMessage());
            assertEquals(0, a.getAllocatedMemory());
        }
        assertEquals(0, budget.calls());
        BufferAllocator ok = BlockAllocationListener.newChildAllocator(root, "ok", l);
        assertThrows(IllegalStateException.class,
                () -> BlockAllocationListener.newChildAllocator(root, "twice", l));
        ok.close();
    }

    @Test
    void buffersFreedOnOtherThreadsAreChargedToTheirAllocator() throws Exception {
        CountingBudget budget = new CountingBudget("threads", 64 * MIB);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "mt", budget, 256 * KIB);
        BlockAllocationListener l = listenerOf(a);
        int producers = 3;
        int perThread = 4000;
        BlockingQueue<ArrowBuf> toFree = new ArrayBlockingQueue<>(256);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong refused = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        CountDownLatch start = new CountDownLatch(1);
        for (int t = 0; t < producers; t++) {
            final int seed = t;
            threads.add(new Thread(() -> {
                try {
                    start.await();
                    long x = seed * 7919L + 1;
                    List<ArrowBuf> local = new ArrayList<>();
                    for (int i = 0; i < perThread; i++) {
                        x = x * 6364136223846793005L + 1442695040888963407L;
                        long size = 64L << ((x >>> 33) % 12); // 64 B .. 128 KiB
                        ArrowBuf b;
                        try {
                            b = a.buffer(size);
                        } catch (OutOfMemoryException e) {
                            refused.incrementAndGet();
                            continue;
                        }
                        if ((x & 1) == 0) {
                            toFree.put(b); // freed by the other thread
                        } else {
                            local.add(b);
                            if (local.size() > 16) {
                                closeAll(local);
                            }
                        }
                    }
                    closeAll(local);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "alloc-" + t));
        }
        Thread freer = new Thread(() -> {
            try {
                start.await();
                while (true) {
                    ArrowBuf b = toFree.poll(50, TimeUnit.MILLISECONDS);
                    if (b == null) {
                        boolean alive = false;
                        for (Thread p : threads) {
                            alive |= p.isAlive();
                        }
                        if (!alive && toFree.isEmpty()) {
                            return;
                        }
                        continue;
                    }
                    b.close();
                    l.releaseUnused(); // a concurrent spill now and then
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, "freer");
        for (Thread t : threads) {
            t.start();
        }
        freer.start();
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        freer.join();
        if (failure.get() != null) {
            throw new AssertionError("a worker failed", failure.get());
        }
        assertEquals(0, l.used());
        assertEquals(budget.outstanding.get(), l.charged());
        assertTrue(l.charged() <= 2 * 256 * KIB, "at most two spare blocks once idle: " + l.charged());
        a.close();
        assertEquals(0, budget.outstanding.get());
        assertEquals(budget.acquiredBytes.get(), budget.releasedBytes.get());
        assertEquals(0, refused.get(), "64 MiB is far more than three threads hold");
    }

    @Test
    void aSpillUnderTheManagersLockFreesBuffersWhileAnotherThreadWaitsInTheBudget() {
        // Spark's shape with plain Java: the budget takes a monitor (the task
        // memory manager's); a rival consumer holds it while it spills, and
        // the spill, on the rival's thread, frees buffers of this allocator,
        // while a second thread allocating from the allocator is inside the
        // budget waiting for that monitor. A listener holding any lock of its
        // own across the budget call would deadlock here.
        Object managerLock = new Object();
        MemoryBudget budget = new MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                synchronized (managerLock) {
                    return bytes;
                }
            }

            @Override
            public void release(long bytes) {
                synchronized (managerLock) {
                    // Spark's release takes the memory manager's monitor too.
                }
            }
        };
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, Long.MAX_VALUE);
        BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "dl", l);
        List<ArrowBuf> victims = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            victims.add(a.buffer(MIB));
        }
        AtomicReference<ArrowBuf> allocated = new AtomicReference<>();
        Thread allocator = new Thread(() -> allocated.set(a.buffer(MIB)), "allocating");
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            synchronized (managerLock) { // the rival's acquire, about to spill
                allocator.start();
                // Wait until the allocating thread is inside the budget.
                while (allocator.getState() != Thread.State.BLOCKED) {
                    Thread.sleep(1);
                }
                closeAll(victims); // the spill, on this thread
                // One block stays for the allocation being admitted.
                assertEquals(3 * MIB, l.releaseUnused());
            }
            allocator.join();
        });
        assertEquals(MIB, l.used());
        assertEquals(2 * MIB, l.charged(), "the kept block and the one granted");
        allocated.get().close();
        a.close();
        assertEquals(0, l.charged());
    }
}
