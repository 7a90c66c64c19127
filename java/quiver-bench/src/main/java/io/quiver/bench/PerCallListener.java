package io.quiver.bench;

import org.apache.arrow.memory.AllocationListener;
import org.apache.arrow.memory.OutOfMemoryException;

/**
 * The seed's "before": a listener that asks the task memory manager for every
 * Arrow buffer and gives it back on every release. Kept only as the
 * benchmark's baseline; Quiver charges through BlockAllocationListener.
 */
final class PerCallListener implements AllocationListener {
    private final CountingConsumer consumer;

    PerCallListener(CountingConsumer consumer) {
        this.consumer = consumer;
    }

    @Override
    public void onPreAllocation(long size) {
        long got = consumer.acquireMemory(size);
        if (got < size) {
            if (got > 0) {
                consumer.freeMemory(got);
            }
            throw new OutOfMemoryException("task memory refused " + size + " bytes");
        }
    }

    @Override
    public void onRelease(long size) {
        consumer.freeMemory(size);
    }
}
