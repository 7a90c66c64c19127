package io.quiver.bench;

import io.quiver.memory.BlockAllocationListener;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.memory.UnifiedMemoryManager;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Arrow Java allocations charged to a Spark task, three ways, in one JVM: no
 * listener, a listener calling the task memory manager per buffer (the seed's
 * "before"), and Quiver's BlockAllocationListener. One invocation allocates
 * the case's N buffers and then frees them; JvmBench divides by N.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class AllocationBench {
    /** Cases, named as in the seed's table; "+rival" adds a thread of another consumer. */
    public static final String[] CASES = {"512x128B", "128x64KiB", "8x1MiB", "8x1MiB+rival"};
    public static final String[] VARIANTS = {"none", "per-call", "block"};

    @State(Scope.Thread)
    public static class Task {
        @Param({"512x128B", "128x64KiB", "8x1MiB", "8x1MiB+rival"})
        public String shape;

        @Param({"none", "per-call", "block"})
        public String variant;

        int count;
        long size;
        ArrowBuf[] bufs;
        RootAllocator root;
        BufferAllocator allocator;
        TaskMemoryManager tmm;
        CountingConsumer consumer;
        Thread rival;
        final AtomicBoolean stop = new AtomicBoolean();

        @Setup(Level.Trial)
        public void setUp() {
            String base = shape.replace("+rival", "");
            int x = base.indexOf('x');
            count = Integer.parseInt(base.substring(0, x));
            String unit = base.substring(x + 1);
            if (unit.endsWith("MiB")) {
                size = Long.parseLong(unit.substring(0, unit.length() - 3)) << 20;
            } else if (unit.endsWith("KiB")) {
                size = Long.parseLong(unit.substring(0, unit.length() - 3)) << 10;
            } else {
                size = Long.parseLong(unit.substring(0, unit.length() - 1));
            }
            bufs = new ArrowBuf[count];
            // Off-heap execution memory large enough that nothing spills: the
            // benchmark measures the cost of accounting, not of spilling.
            SparkConf conf = new SparkConf(false)
                    .set("spark.memory.offHeap.enabled", "true")
                    .set("spark.memory.offHeap.size", Long.toString(8L << 30));
            UnifiedMemoryManager mm = new UnifiedMemoryManager(conf, 1L << 30, 1L << 29, 2);
            tmm = new TaskMemoryManager(mm, 1L);
            consumer = new CountingConsumer(tmm, "task 1 arrow");
            root = new RootAllocator(Long.MAX_VALUE);
            switch (variant) {
                case "none":
                    allocator = root.newChildAllocator("none", 0, Long.MAX_VALUE);
                    break;
                case "per-call":
                    allocator = root.newChildAllocator("per-call", new PerCallListener(consumer), 0, Long.MAX_VALUE);
                    break;
                case "block": {
                    BlockAllocationListener l = new BlockAllocationListener(consumer,
                            BlockAllocationListener.DEFAULT_BLOCK_SIZE);
                    consumer.attach(l);
                    allocator = BlockAllocationListener.newChildAllocator(root, "block", l);
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown variant " + variant);
            }
            if (shape.endsWith("+rival")) {
                CountingConsumer other = new CountingConsumer(tmm, "rival");
                rival = new Thread(() -> {
                    // Another consumer of the same task taking and giving back
                    // memory as fast as it can: it holds the task memory
                    // manager's monitor as often as the benchmark thread may want it.
                    while (!stop.get()) {
                        long got = other.acquireMemory(1L << 20);
                        other.freeMemory(got);
                    }
                }, "rival consumer");
                rival.setDaemon(true);
                rival.start();
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() throws InterruptedException {
            stop.set(true);
            if (rival != null) {
                rival.join();
            }
            allocator.close();
            root.close();
            long leaked = tmm.cleanUpAllAllocatedMemory();
            if (leaked != 0) {
                throw new IllegalStateException(variant + " " + shape + ": " + leaked + " bytes of task memory left");
            }
        }
    }

    /**
     * Per iteration: the task memory manager calls made by the measured thread,
     * the invocations, and the thread's CPU time. On a shared machine the CPU
     * time is the steadier figure: wall time also counts the time the thread
     * waited for a core.
     */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Calls {
        private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

        public long acquires;
        public long releases;
        public long invocations;
        public long cpuNanos;
        private long cpuStart;

        @Setup(Level.Iteration)
        public void reset() {
            acquires = 0;
            releases = 0;
            invocations = 0;
            cpuNanos = 0;
            cpuStart = THREADS.getCurrentThreadCpuTime();
        }

        @TearDown(Level.Iteration)
        public void cpu() {
            cpuNanos = THREADS.getCurrentThreadCpuTime() - cpuStart;
        }
    }

    @Benchmark
    public void allocateThenFree(Task t, Calls calls) {
        CountingConsumer c = t.consumer;
        long a0 = c.acquires;
        long r0 = c.releases;
        ArrowBuf[] bufs = t.bufs;
        BufferAllocator allocator = t.allocator;
        long size = t.size;
        for (int i = 0; i < bufs.length; i++) {
            bufs[i] = allocator.buffer(size);
        }
        for (int i = 0; i < bufs.length; i++) {
            bufs[i].close();
            bufs[i] = null;
        }
        calls.acquires += c.acquires - a0;
        calls.releases += c.releases - r0;
        calls.invocations++;
    }
}
