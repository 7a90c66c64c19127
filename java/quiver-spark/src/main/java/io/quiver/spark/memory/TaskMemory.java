package io.quiver.spark.memory;

import io.quiver.QuiverOutOfMemoryException;
import io.quiver.memory.BlockAllocationListener;
import io.quiver.memory.MemoryBudget;
import io.quiver.memory.NativePool;
import io.quiver.memory.PoolStats;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;

/**
 * All the memory Quiver uses for one Spark task attempt, charged to that
 * task: one off-heap {@link MemoryConsumer} that is the {@link MemoryBudget}
 * of
 * <ul>
 * <li>the task's native pool ({@link #pool()}), charged in blocks of
 * {@value #BLOCK_SIZE_CONF} (default {@link #DEFAULT_NATIVE_BLOCK_SIZE}),
 * for the files, scans and batches Quiver's C library holds;</li>
 * <li>a child Arrow allocator ({@link #writeAllocator()}) whose
 * {@link BlockAllocationListener} charges the same budget in blocks of
 * {@value #ARROW_BLOCK_SIZE_CONF} (default 1 MiB), for the Arrow Java
 * buffers of the write path;</li>
 * </ul>
 * and an allocator that charges nothing ({@link #importAllocator()}), for
 * importing batches of native scans, which the pool has charged already.
 *
 * <p>The consumer's {@code acquireMemory} and {@code freeMemory} are called,
 * not the task memory manager directly, so Spark's per-consumer
 * diagnostics see Quiver. {@link #spill} gives back what the pool and the
 * listener hold without needing it (the pool's block cache and surplus
 * blocks, spillable native consumers, the listener's spare blocks) and
 * returns the bytes actually released.
 *
 * <p>Off-heap memory must be enabled ({@code spark.memory.offHeap.enabled=true}
 * and {@code spark.memory.offHeap.size} &gt; 0): native memory is off-heap,
 * and without those settings Spark grants an off-heap consumer nothing.
 * {@link #get} fails with a message naming them instead.
 *
 * <p>At task completion everything is closed, and the consumer must have
 * released all it acquired; what is not (a batch or a buffer still held) is
 * a leak: it is freed so Spark's books stay right, and reported by failing
 * the completion with {@link IllegalStateException} naming what was held.
 */
public final class TaskMemory extends MemoryConsumer implements MemoryBudget, AutoCloseable {
    /** Spark setting: the native pool's block, in bytes. */
    public static final String BLOCK_SIZE_CONF = "spark.quiver.memory.blockSize";
    /** Spark setting: the Arrow listener's block, in bytes. */
    public static final String ARROW_BLOCK_SIZE_CONF = "spark.quiver.memory.arrowBlockSize";
    /**
     * The native pool's default block: 1 MiB. Measured (docs/memory.md,
     * io.quiver.bench.NativeMemoryBench): since reservations share the
     * pool's blocks, the block only sets the pool's hysteresis band (up to
     * about three blocks beyond what is reserved): a 16-column scan held
     * 3.8 MiB of task memory with 64 KiB blocks and 4.0 MiB with 1 MiB (7.2
     * and 8.0 MiB with 65,536-row row groups), while it called the task's
     * memory manager about 14,400 times per 1,000 batches with 64 KiB
     * blocks and 10 to 20 times with 1 MiB. The band is not lost to Spark:
     * {@link #spill} gives it back on demand.
     */
    public static final long DEFAULT_NATIVE_BLOCK_SIZE = 1L << 20;

    private static final ConcurrentHashMap<Long, TaskMemory> BY_ATTEMPT = new ConcurrentHashMap<>();
    private static final Object ROOT_LOCK = new Object();
    private static RootAllocator root; // guarded by ROOT_LOCK

    private final long attempt;
    private final String name;
    private final NativePool pool;
    private final BlockAllocationListener listener;
    private final BufferAllocator writeAllocator;
    private final BufferAllocator importAllocator;
    private final AtomicLong acquired = new AtomicLong();
    private final AtomicLong released = new AtomicLong();
    private final AtomicLong spilled = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    /**
     * Bytes Spark counts for this consumer by Quiver's books (acquired minus
     * released), or SETTLED once close freed what was left: later releases (a
     * batch that outlived the task) are not Spark's any more. One atomic
     * instead of a lock, because a lock held across freeMemory would take
     * Spark's TaskMemoryManager monitor inside it, while a spill holding that
     * monitor calls release: a release and close racing each free their own
     * share exactly once.
     */
    private final AtomicLong outstanding = new AtomicLong();
    private static final long SETTLED = Long.MIN_VALUE;
    private final AtomicLong lateReleased = new AtomicLong();

    /**
     * The task attempt's TaskMemory, made on first use and closed when the
     * task completes. Throws {@link QuiverOutOfMemoryException} naming
     * {@code spark.memory.offHeap.enabled} and {@code spark.memory.offHeap.size}
     * when off-heap memory is not enabled.
     */
    public static TaskMemory get(TaskContext context) {
        if (context == null) {
            throw new IllegalStateException("TaskMemory.get: not inside a Spark task (no TaskContext)");
        }
        TaskMemory m = BY_ATTEMPT.get(context.taskAttemptId());
        if (m != null) {
            return m;
        }
        checkOffHeap(context.taskMemoryManager());
        m = BY_ATTEMPT.computeIfAbsent(context.taskAttemptId(), id -> new TaskMemory(context));
        return m;
    }

    /** Live TaskMemory objects in this JVM (tests). */
    public static int liveCount() {
        return BY_ATTEMPT.size();
    }

    private static void checkOffHeap(TaskMemoryManager tmm) {
        if (tmm.getTungstenMemoryMode() == MemoryMode.OFF_HEAP) {
            return;
        }
        SparkEnv env = SparkEnv.get();
        SparkConf conf = env == null ? null : env.conf();
        String enabled = conf == null ? "unset" : conf.get("spark.memory.offHeap.enabled", "unset");
        String size = conf == null ? "unset" : conf.get("spark.memory.offHeap.size", "unset");
        throw new QuiverOutOfMemoryException(12,
                "Quiver charges its native memory to the Spark task as off-heap memory, which needs "
                        + "spark.memory.offHeap.enabled=true and spark.memory.offHeap.size > 0 (for example "
                        + "--conf spark.memory.offHeap.enabled=true --conf spark.memory.offHeap.size=2g); found "
                        + "spark.memory.offHeap.enabled=" + enabled + ", spark.memory.offHeap.size=" + size);
    }

    private static BufferAllocator rootAllocator() {
        synchronized (ROOT_LOCK) {
            if (root == null) {
                root = new RootAllocator(Long.MAX_VALUE);
            }
            return root;
        }
    }

    private static long conf(String key, long dflt) {
        SparkEnv env = SparkEnv.get();
        if (env == null) {
            return dflt;
        }
        long v = env.conf().getSizeAsBytes(key, Long.toString(dflt));
        if (v <= 0) {
            throw new IllegalArgumentException(key + " must be > 0 bytes, is " + v);
        }
        return v;
    }

    private TaskMemory(TaskContext context) {
        super(context.taskMemoryManager(), MemoryMode.OFF_HEAP);
        this.attempt = context.taskAttemptId();
        this.name = "task " + context.stageId() + "." + context.partitionId() + " (attempt " + attempt + ")";
        NativePool p = null;
        BufferAllocator w = null;
        BufferAllocator i = null;
        BlockAllocationListener l;
        try {
            p = NativePool.create("quiver " + name, this, conf(BLOCK_SIZE_CONF, DEFAULT_NATIVE_BLOCK_SIZE));
            l = new BlockAllocationListener(this, conf(ARROW_BLOCK_SIZE_CONF, BlockAllocationListener.DEFAULT_BLOCK_SIZE));
            w = BlockAllocationListener.newChildAllocator(rootAllocator(), "quiver write " + name, l);
            i = rootAllocator().newChildAllocator("quiver import " + name, 0, Long.MAX_VALUE);
        } catch (RuntimeException | Error e) {
            if (w != null) {
                w.close();
            }
            if (p != null) {
                p.close();
            }
            throw e;
        }
        this.pool = p;
        this.listener = l;
        this.writeAllocator = w;
        this.importAllocator = i;
        context.addTaskCompletionListener(ctx -> {
            BY_ATTEMPT.remove(attempt, this);
            close();
        });
    }

    /** The task's native pool: pass it as the pool of every file the task opens. */
    public NativePool pool() {
        return pool;
    }

    /** The allocator for Arrow Java buffers the task builds (the write path); charged to the task. */
    public BufferAllocator writeAllocator() {
        return writeAllocator;
    }

    /** The allocator native batches are imported through: not charged (the pool charged them). */
    public BufferAllocator importAllocator() {
        return importAllocator;
    }

    /** The Arrow listener charging the write allocator. */
    public BlockAllocationListener listener() {
        return listener;
    }

    /** Bytes acquired from Spark in all (for balance checks and tests). */
    public long acquiredBytes() {
        return acquired.get();
    }

    /** Bytes given back to Spark in all. */
    public long releasedBytes() {
        return released.get();
    }

    /** Bytes {@link #spill} released in all. */
    public long spilledBytes() {
        return spilled.get();
    }

    // ---- MemoryBudget: the host of the pool and of the listener ----

    @Override
    public long acquire(long bytes) {
        if (bytes <= 0) {
            return 0;
        }
        if (closed.get()) {
            throw new IllegalStateException(name + ": TaskMemory is closed (the task completed)");
        }
        long got = acquireMemory(bytes);
        acquired.addAndGet(got);
        for (long cur = outstanding.get(); ; cur = outstanding.get()) {
            if (cur == SETTLED) { // closed while Spark was granting: give it straight back
                released.addAndGet(got);
                freeMemory(got);
                throw new IllegalStateException(name + ": TaskMemory is closed (the task completed)");
            }
            if (outstanding.compareAndSet(cur, cur + got)) {
                return got;
            }
        }
    }

    @Override
    public void release(long bytes) {
        if (bytes <= 0) {
            return;
        }
        for (long cur = outstanding.get(); ; cur = outstanding.get()) {
            if (cur == SETTLED) {
                // What close found still held was freed to Spark then.
                lateReleased.addAndGet(bytes);
                return;
            }
            if (outstanding.compareAndSet(cur, cur - bytes)) {
                break;
            }
        }
        released.addAndGet(bytes);
        freeMemory(bytes);
    }

    @Override
    public String name() {
        return name;
    }

    // ---- MemoryConsumer ----

    /**
     * Gives back what Quiver holds without needing it: the native pool first
     * (block cache, surplus blocks, spillable native consumers, until
     * {@code size} bytes went back), then the Arrow listener's spare blocks.
     * Returns the bytes released to Spark by this call. Runs on the thread
     * that asked Spark for memory, possibly inside this very consumer's
     * {@code acquireMemory}; neither call waits for anything that thread holds.
     */
    @Override
    public long spill(long size, MemoryConsumer trigger) {
        if (closed.get()) {
            return 0;
        }
        long got = pool.releaseUnused(Math.max(1, size));
        if (got < size) {
            got += listener.releaseUnused();
        }
        spilled.addAndGet(got);
        return got;
    }

    // ---- Completion ----

    /**
     * Closes the allocators and the pool and checks the balance (idempotent;
     * run at task completion). Throws IllegalStateException naming what was
     * still held when the task left memory behind.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<String> leaks = new ArrayList<>();
        close(importAllocator, leaks);
        close(writeAllocator, leaks);
        PoolStats st = pool.stats();
        pool.close();
        long held = outstanding.getAndSet(SETTLED);
        if (held != 0) {
            leaks.add("the native pool still holds " + st.hostHeld() + " bytes of the task's memory (" + st.used()
                    + " in use by " + st.reservations() + " reservations: files, scans or batches not closed)");
            leaks.add("the consumer acquired " + acquired.get() + " bytes and released " + released.get()
                    + " (" + held + " still counted by Spark; freed now)");
            if (held > 0) {
                freeMemory(held);
            }
        }
        if (!leaks.isEmpty()) {
            throw new IllegalStateException("Quiver memory of " + name + " leaked at task completion: "
                    + String.join("; ", leaks));
        }
    }

    private static void close(BufferAllocator a, List<String> leaks) {
        try {
            a.close();
        } catch (IllegalStateException e) {
            leaks.add("Arrow allocator '" + a.getName() + "': " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "TaskMemory[" + name + ", used " + getUsed() + "]";
    }
}
