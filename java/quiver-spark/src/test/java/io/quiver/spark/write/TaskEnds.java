package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.quiver.spark.memory.TaskMemory;

import java.io.PrintWriter;
import java.io.StringWriter;
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
            failures.add("stage " + end.stageId() + " task " + end.taskInfo().index()
                    + " attempt " + end.taskInfo().attemptNumber() + ": " + r);
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

    /** Forgets what the jobs so far reported, once their events were delivered (before each test). */
    void reset(SparkSession spark) {
        drain(spark);
        clear();
    }

    /**
     * After a job that must succeed: no task failed (a leak found at task
     * completion fails the task), every TaskMemory was closed; then
     * forgets the job.
     */
    void assertNoneFailed(SparkSession spark) {
        drain(spark);
        assertEquals(List.of(), failures(), "no task may fail (a leak at completion fails it)");
        assertEquals(0, TaskMemory.liveCount(), "every task's TaskMemory was closed");
        clear();
    }

    /**
     * After a job that failed: once every task has ended, none reported a
     * leak at completion and every TaskMemory was closed.
     */
    void assertNoneLeaked(SparkSession spark) throws InterruptedException {
        awaitAllEnded(spark);
        for (String f : failures()) {
            assertNoLeakReported(f, "a task leaked: ");
        }
        assertEquals(0, TaskMemory.liveCount(), "every TaskMemory closed");
    }

    /** Asserts {@code text} (a failure's text) reports no leak: TaskMemory's nor Spark's. */
    static void assertNoLeakReported(String text, String what) {
        assertFalse(text.contains("leaked") || text.contains("memory leak"), what + text);
    }

    /** {@code t}'s whole stack trace, causes and suppressed ones included, to search what a job reported. */
    static String text(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    synchronized List<String> failures() {
        return List.copyOf(failures);
    }

    /** The failures, each cut to its first line: which stage, task and attempt, and why. */
    synchronized String failureSummary() {
        StringBuilder b = new StringBuilder();
        for (String f : failures) {
            int eol = f.indexOf('\n');
            String line = eol < 0 ? f : f.substring(0, eol);
            b.append("\n  ").append(line.length() > 400 ? line.substring(0, 400) + "..." : line);
        }
        return b.toString();
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
