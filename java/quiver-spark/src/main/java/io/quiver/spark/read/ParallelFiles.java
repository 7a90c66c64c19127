package io.quiver.spark.read;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * Runs one action per file on a bounded number of driver threads (footers
 * are small reads, so a listing of thousands of files should not open them
 * one after the other, nor all at once). Results keep the input order, so
 * what is planned from them is deterministic; the first failure, in input
 * order, is rethrown as it was.
 */
final class ParallelFiles {
    /** At most this many files are opened at a time. */
    static final int MAX_THREADS = 8;

    private ParallelFiles() {}

    static <T, R> List<R> map(List<T> items, Function<T, R> action) {
        if (items.size() <= 1) {
            List<R> out = new ArrayList<>(items.size());
            for (T t : items) {
                out.add(action.apply(t));
            }
            return out;
        }
        AtomicInteger ids = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(MAX_THREADS, items.size()), r -> {
            Thread t = new Thread(r, "quiver-footers-" + ids.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<R>> futures = new ArrayList<>(items.size());
            for (T t : items) {
                futures.add(pool.submit(() -> action.apply(t)));
            }
            List<R> out = new ArrayList<>(items.size());
            for (Future<R> f : futures) {
                try {
                    out.add(f.get());
                } catch (ExecutionException e) {
                    Throwable c = e.getCause();
                    if (c instanceof RuntimeException r) {
                        throw r;
                    }
                    if (c instanceof Error err) {
                        throw err;
                    }
                    throw new IllegalStateException(c);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("quiver: interrupted while reading footers", e);
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }
}
