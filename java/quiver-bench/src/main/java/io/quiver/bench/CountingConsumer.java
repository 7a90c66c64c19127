package io.quiver.bench;

import io.quiver.memory.BlockAllocationListener;
import io.quiver.memory.MemoryBudget;
import java.io.IOException;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;

/**
 * An off-heap Spark MemoryConsumer that counts the calls it makes to the task
 * memory manager, and the budget the benchmark's listeners charge. One thread
 * uses each instance, so the counts are plain fields: an atomic here would add
 * its own cost to the per-allocation variant being measured.
 */
public final class CountingConsumer extends MemoryConsumer implements MemoryBudget {
    private final String name;
    private BlockAllocationListener listener;
    long acquires;
    long releases;

    public CountingConsumer(TaskMemoryManager tmm, String name) {
        super(tmm, MemoryMode.OFF_HEAP);
        this.name = name;
    }

    void attach(BlockAllocationListener l) {
        listener = l;
    }

    @Override
    public long acquireMemory(long size) {
        acquires++;
        return super.acquireMemory(size);
    }

    @Override
    public void freeMemory(long size) {
        releases++;
        super.freeMemory(size);
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
        BlockAllocationListener l = listener;
        return l == null ? 0 : l.releaseUnused();
    }
}
