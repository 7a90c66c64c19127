package io.quiver.spark.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.memory.BlockAllocationListener;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import io.quiver.spark.read.SparkTestSession;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * BlockAllocationListener inside real local[2] tasks, with Spark's leak check
 * on: each task charges Arrow buffers to a consumer of its own task memory
 * manager, frees some on another thread, is spilled by a rival consumer of the
 * same task, and closes its allocator; a byte left charged would fail the task
 * ("Managed memory leak detected").
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class BlockAllocationListenerInTaskTest {
    private static JavaSparkContext sc;

    @BeforeAll
    static void start() {
        sc = new JavaSparkContext(SparkTestSession.conf("quiver-listener-in-task", "64m"));
    }

    @AfterAll
    static void stop() {
        if (sc != null) {
            sc.stop();
        }
    }

    @Test
    void tasksChargeSpillAndReleaseEverything() {
        List<String> reports = sc.parallelize(Arrays.asList(1, 2, 3, 4), 2).mapPartitions(rows -> {
            TaskContext tc = TaskContext.get();
            ConsumerBudget budget = new ConsumerBudget(tc.taskMemoryManager(), "task " + tc.taskAttemptId());
            BlockAllocationListener l = new BlockAllocationListener(budget, 1L << 20);
            budget.attach(l);
            StringBuilder report = new StringBuilder();
            try (RootAllocator root = new RootAllocator(Long.MAX_VALUE)) {
                BufferAllocator a = BlockAllocationListener.newChildAllocator(root, "arrow", l);
                List<ArrowBuf> bufs = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    bufs.add(a.buffer(1L << 20));
                }
                long chargedAtPeak = budget.getUsed();
                // Half freed by another thread: charged to this task's allocator all the same.
                List<ArrowBuf> other = new ArrayList<>(bufs.subList(0, 4));
                Thread freer = new Thread(() -> other.forEach(ArrowBuf::close), "freer");
                freer.start();
                freer.join(60_000);
                bufs.subList(0, 4).clear();
                bufs.forEach(ArrowBuf::close);
                bufs.clear();
                long chargedIdle = budget.getUsed();
                // A rival consumer of the same task wanting memory spills ours.
                RivalConsumer rival = new RivalConsumer(tc.taskMemoryManager());
                long got = rival.acquireMemory(60L << 20); // more than a task may hold
                long chargedAfterSpill = budget.getUsed();
                rival.freeMemory(got);
                a.close();
                report.append(chargedAtPeak).append(' ').append(chargedIdle).append(' ')
                        .append(budget.spills).append(' ').append(chargedAfterSpill).append(' ')
                        .append(budget.getUsed()).append(' ').append(l.used());
            }
            return Collections.singletonList(report.toString()).iterator();
        }).collect();
        assertEquals(2, reports.size());
        for (String r : reports) {
            String[] f = r.split(" ");
            assertEquals(8L << 20, Long.parseLong(f[0]), "eight blocks at the peak: " + r);
            assertEquals(8L << 20, Long.parseLong(f[1]), "kept while idle (retention): " + r);
            assertTrue(Integer.parseInt(f[2]) >= 1, "spilled by the rival: " + r);
            assertEquals(0, Long.parseLong(f[3]), "the spill gave every block back: " + r);
            assertEquals(0, Long.parseLong(f[4]), "nothing charged after close: " + r);
            assertEquals(0, Long.parseLong(f[5]), r);
        }
    }
}
