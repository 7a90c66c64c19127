package io.quiver.spark.memory;

import io.quiver.memory.BlockAllocationListener;
import io.quiver.memory.MemoryBudget;
import java.io.IOException;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;

/**
 * A MemoryBudget backed by a Spark MemoryConsumer, for tests only (the
 * production one is TaskMemory). Its spill first runs a test's action (which
 * may free Arrow buffers, as a cache of batches would) and then gives back
 * every whole block the listener no longer needs.
 */
final class ConsumerBudget extends MemoryConsumer implements MemoryBudget {
    interface SpillAction {
        void run() throws IOException;
    }

    private final String name;
    private volatile BlockAllocationListener listener;
    private volatile SpillAction onSpill;
    volatile int spills;

    ConsumerBudget(TaskMemoryManager tmm, String name) {
        super(tmm, MemoryMode.OFF_HEAP);
        this.name = name;
    }

    void attach(BlockAllocationListener l) {
        listener = l;
    }

    void onSpill(SpillAction action) {
        onSpill = action;
    }

    @Override
    public long acquire(long bytes) {
        return acquireMemory(bytes);
    }

    @Override
    public void release(long bytes) {
        freeMemory(bytes);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long spill(long size, MemoryConsumer trigger) throws IOException {
        spills++;
        SpillAction a = onSpill;
        if (a != null) {
            a.run();
        }
        BlockAllocationListener l = listener;
        return l == null ? 0 : l.releaseUnused();
    }

    @Override
    public String toString() {
        return "ConsumerBudget(" + name + ")";
    }
}
