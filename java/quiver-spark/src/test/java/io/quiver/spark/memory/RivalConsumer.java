package io.quiver.spark.memory;

import java.io.IOException;
import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.memory.TaskMemoryManager;

/** Another consumer of the same task: it acquires and frees, and its spill can be made to fail. */
final class RivalConsumer extends MemoryConsumer {
    volatile IOException spillFailure;

    RivalConsumer(TaskMemoryManager tmm) {
        super(tmm, MemoryMode.OFF_HEAP);
    }

    @Override
    public long spill(long size, MemoryConsumer trigger) throws IOException {
        IOException e = spillFailure;
        if (e != null) {
            throw e;
        }
        return 0;
    }

    @Override
    public String toString() {
        return "RivalConsumer";
    }
}
