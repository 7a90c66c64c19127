package io.quiver.spark.write;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.TaskEndReason;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.SparkSession;

/**
 * Records every task end of a session: how many attempts failed, the
 * failure reasons' text (where a leak reported at task completion shows,
 * since Spark joins completion-listener errors to the task's own), and the
 * largest off-heap execution memory a task held (the peak Spark's task
 * memory manager saw, which is where TaskMemory charges Quiver's Arrow
 * buffers and native pool). Add it with {@link #attach}; {@link #clear}
 * between jobs.
 */
final class TaskEnds extends SparkListener {
    private final List<String> failures = new ArrayList<>();
    private long started;
    private long ended;
    private long succeeded;
    private long peakOffHeap;

    static TaskEnds attach(SparkSession spark) {
        TaskEnds t = new TaskEnds();
        spark.sparkContext().addSparkListener(t);
        return t;
    }

    @Override
    public synchronized void onTaskStart(SparkListenerTaskStart start) {
        started++;
    }

    @Override
    public synchronized void onTaskEnd(SparkListenerTaskEnd end) {
        ended++;
        TaskEndReason r = end.reason();
        if (r instanceof org.apache.spark.Success$) {
            succeeded++;
        } else {
            failures.add(r.toString());
        }
        if (end.taskMetrics() != null) {
            peakOffHeap = Math.max(peakOffHeap, end.taskMetrics().peakOffHeapExecutionMemory());
        }
        notifyAll();
    }

    /**
     * Waits (at most 60 s) until every task that started has ended: when a
     * job fails, Spark kills its other running tasks asynchronously, after
     * the action already threw, and what they leave can only be judged
     * once they are gone.
     */
    void awaitAllEnded(SparkSession spark) throws InterruptedException {
        drain(spark);
        long deadline = System.nanoTime() + 60_000_000_000L;
        synchronized (this) {
            while (ended < started) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError(started + " tasks started, only " + ended + " ended in 60 s");
                }
                wait(Math.max(1, left / 1_000_000));
            }
        }
    }

    /**
     * Waits until Spark's listener bus delivered every event posted so far
     * (events arrive asynchronously after a job ends).
     */
    void drain(SparkSession spark) {
        try {
            spark.sparkContext().listenerBus().waitUntilEmpty(60_000);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("Spark's listener bus did not drain in 60 s", e);
        }
    }

    synchronized List<String> failures() {
        return List.copyOf(failures);
    }

    synchronized long succeeded() {
        return succeeded;
    }

    synchronized long peakOffHeapBytes() {
        return peakOffHeap;
    }

    synchronized void clear() {
        failures.clear();
        started -= ended;
        ended = 0;
        succeeded = 0;
        peakOffHeap = 0;
    }
}
