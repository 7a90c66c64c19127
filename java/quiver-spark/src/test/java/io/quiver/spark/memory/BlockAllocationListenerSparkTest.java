package io.quiver.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.memory.BlockAllocationListener;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.SparkOutOfMemoryError;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.memory.UnifiedMemoryManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * BlockAllocationListener charging a real Spark TaskMemoryManager (off-heap,
 * 8 MiB) through a MemoryConsumer: the deadlock scenario of issue 11, a
 * failing spill elsewhere, and the consumer's bookkeeping matching the charge.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BlockAllocationListenerSparkTest {
    private static final long MIB = 1L << 20;

    private UnifiedMemoryManager memoryManager;
    private TaskMemoryManager tmm;
    private BufferAllocator root;

    @BeforeEach
    void setUp() {
        SparkConf conf = new SparkConf(false)
                .set("spark.memory.offHeap.enabled", "true")
                .set("spark.memory.offHeap.size", Long.toString(8 * MIB))
                .set("spark.unsafe.exceptionOnMemoryLeak", "true");
        memoryManager = new UnifiedMemoryManager(conf, 64 * MIB, 32 * MIB, 1);
        tmm = new TaskMemoryManager(memoryManager, 1L);
        root = new RootAllocator(Long.MAX_VALUE);
    }

    @AfterEach
    void tearDown() {
        root.close();
        assertEquals(0, tmm.cleanUpAllAllocatedMemory(), "every byte given back to the task");
        assertEquals(0, memoryManager.executionMemoryUsed());
    }

    private BufferAllocator allocatorFor(ConsumerBudget budget) {
        BlockAllocationListener l = new BlockAllocationListener(budget, MIB, Long.MAX_VALUE);
        budget.attach(l);
        return BlockAllocationListener.newChildAllocator(root, "task 1 arrow", l);
    }

    private static BlockAllocationListener listenerOf(BufferAllocator a) {
        return (BlockAllocationListener) a.getListener();
    }

    @Test
    void aSpillFreeingOurBuffersWhileAnotherThreadAllocatesDoesNotDeadlock() {
        ConsumerBudget budget = new ConsumerBudget(tmm, "task 1 arrow");
        BufferAllocator a = allocatorFor(budget);
        BlockAllocationListener l = listenerOf(a);
        List<ArrowBuf> cached = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            cached.add(a.buffer(MIB));
        }
        assertEquals(6 * MIB, budget.getUsed());
        AtomicReference<ArrowBuf> allocated = new AtomicReference<>();
        AtomicReference<Throwable> allocFailure = new AtomicReference<>();
        Thread allocating = new Thread(() -> {
            try {
                allocated.set(a.buffer(MIB)); // needs a seventh block from the task
            } catch (Throwable t) {
                allocFailure.set(t);
            }
        }, "allocating");
        // The spill runs on the rival's thread, inside TaskMemoryManager's
        // monitor. It lets the allocating thread reach that monitor first, then
        // frees Arrow buffers of the allocator the other thread is allocating from.
        budget.onSpill(() -> {
            allocating.start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (allocating.getState() != Thread.State.BLOCKED) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("the allocating thread never waited for the task memory manager: "
                            + allocating.getState());
                }
                Thread.onSpinWait();
            }
            for (ArrowBuf b : cached) {
                b.close();
            }
            cached.clear();
        });
        RivalConsumer rival = new RivalConsumer(tmm);
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            long got = rival.acquireMemory(4 * MIB); // 2 MiB free: spills the budget
            assertEquals(4 * MIB, got);
            allocating.join();
        }, "deadlock between the spill and the allocating thread");
        assertEquals(null, allocFailure.get());
        assertEquals(1, budget.spills);
        assertEquals(MIB, l.used());
        assertEquals(l.charged(), budget.getUsed(), "the consumer's bookkeeping is the listener's charge");
        // The spill kept one block for the allocation in flight, which was then granted one more.
        assertEquals(2 * MIB, budget.getUsed());
        allocated.get().close();
        rival.freeMemory(4 * MIB);
        a.close();
        assertEquals(0, budget.getUsed());
    }

    @Test
    void aFailingSpillElsewhereIsACleanOutOfMemoryException() {
        ConsumerBudget budget = new ConsumerBudget(tmm, "task 1 arrow");
        BufferAllocator a = allocatorFor(budget);
        BlockAllocationListener l = listenerOf(a);
        ArrowBuf first = a.buffer(MIB / 2);
        RivalConsumer rival = new RivalConsumer(tmm);
        assertEquals(7 * MIB, rival.acquireMemory(7 * MIB)); // the task is full
        rival.spillFailure = new IOException("disk full while spilling the rival");
        long allocatedBefore = a.getAllocatedMemory();
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> a.buffer(MIB));
        assertInstanceOf(SparkOutOfMemoryError.class, e.getCause());
        assertTrue(e.getMessage().contains("disk full while spilling the rival"), e.getMessage());
        assertTrue(e.getMessage().contains("'task 1 arrow'"), e.getMessage());
        // Nothing escaped into Arrow: the allocator and the charge are as before.
        assertEquals(allocatedBefore, a.getAllocatedMemory());
        assertEquals(MIB, l.charged());
        assertEquals(MIB, budget.getUsed());
        // What fits in the charged block still works, and once the rival can
        // spill (here: frees), allocations needing more blocks work too.
        ArrowBuf small = a.buffer(MIB / 4);
        rival.spillFailure = null;
        rival.freeMemory(7 * MIB);
        ArrowBuf big = a.buffer(2 * MIB);
        assertEquals(3 * MIB, budget.getUsed());
        big.close();
        small.close();
        first.close();
        a.close();
        assertEquals(0, budget.getUsed());
    }

    @Test
    void aShortGrantFromTheTaskIsGivenBack() {
        ConsumerBudget budget = new ConsumerBudget(tmm, "task 1 arrow");
        BufferAllocator a = allocatorFor(budget);
        RivalConsumer rival = new RivalConsumer(tmm); // its spill releases nothing
        assertEquals(6 * MIB, rival.acquireMemory(6 * MIB));
        ArrowBuf ok = a.buffer(MIB);
        OutOfMemoryException e = assertThrows(OutOfMemoryException.class, () -> a.buffer(4 * MIB));
        assertTrue(e.getMessage().contains("short grant"), e.getMessage());
        assertTrue(e.getMessage().contains("block 1048576"), e.getMessage());
        assertEquals(MIB, budget.getUsed(), "the partial grant went back to the task");
        assertEquals(7 * MIB, tmm.getMemoryConsumptionForThisTask());
        ok.close();
        rival.freeMemory(6 * MIB);
        a.close();
        assertEquals(0, budget.getUsed());
    }

    @Test
    void steadyAllocationMakesNoTaskMemoryCalls() {
        ConsumerBudget budget = new ConsumerBudget(tmm, "task 1 arrow");
        BufferAllocator a = allocatorFor(budget);
        BlockAllocationListener l = listenerOf(a);
        List<ArrowBuf> bufs = new ArrayList<>();
        for (int round = 0; round < 100; round++) {
            for (int i = 0; i < 4; i++) {
                bufs.add(a.buffer(MIB));
            }
            for (ArrowBuf b : bufs) {
                b.close();
            }
            bufs.clear();
        }
        assertEquals(4, l.budgetCalls(), "four blocks charged once");
        assertEquals(4 * MIB, budget.getUsed());
        // The task taking the memory back: a rival asking for it spills the budget.
        RivalConsumer rival = new RivalConsumer(tmm);
        assertEquals(8 * MIB, rival.acquireMemory(8 * MIB));
        assertEquals(0, budget.getUsed());
        assertEquals(0, l.charged());
        rival.freeMemory(8 * MIB);
        a.close();
    }
}
