package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The Cleaner backstop, and close racing calls from other threads. */
@Timeout(300)
class QuiverFileLifecycleTest {
    @TempDir
    static Path dir;
    static Path lineitem;

    @BeforeAll
    static void setUp() throws Exception {
        lineitem = Fixtures.lineitem(dir.resolve("lineitem.qvr"), 0.001, 500);
    }

    /** Opens files and drops them unclosed; returns how many. */
    private static int openAndForget(int n) {
        for (int i = 0; i < n; i++) {
            QuiverFile f = QuiverFile.open(lineitem);
            assertTrue(f.numRows() > 0);
        }
        return n;
    }

    @Test
    void theCleanerFreesUnclosedFiles() throws Exception {
        long before = QuiverFile.liveHandles();
        openAndForget(20);
        assertEquals(before + 20, QuiverFile.liveHandles());
        // The files are unreachable now; a collection enqueues them and the
        // Cleaner's thread frees them. Bounded by attempts, not by time.
        for (int attempt = 0; attempt < 200 && QuiverFile.liveHandles() > before; attempt++) {
            System.gc();
            Thread.sleep(50);
        }
        assertEquals(before, QuiverFile.liveHandles(), "unclosed files were not freed by the Cleaner");
    }

    @Test
    void closeRacingCallsNeverFreesUnderThem() throws Exception {
        long before = QuiverFile.liveHandles();
        long rows;
        try (QuiverFile f = QuiverFile.open(lineitem)) {
            rows = f.numRows();
        }
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int round = 0; round < 50; round++) {
                QuiverFile f = QuiverFile.open(lineitem);
                CountDownLatch start = new CountDownLatch(1);
                AtomicLong succeeded = new AtomicLong();
                List<Future<?>> calls = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    final int which = t;
                    calls.add(pool.submit(() -> {
                        start.await();
                        for (;;) {
                            try {
                                switch (which) {
                                    case 0:
                                        assertEquals(rows, f.numRows());
                                        break;
                                    case 1:
                                        Schema s = f.schema();
                                        assertEquals(16, s.getFields().size());
                                        break;
                                    case 2:
                                        long r = 0;
                                        for (Split sp : f.planSplits(1 << 16)) {
                                            r += sp.rows();
                                        }
                                        assertEquals(rows, r);
                                        break;
                                    default:
                                        assertEquals(f.identity().size(), java.nio.file.Files.size(lineitem));
                                        break;
                                }
                                succeeded.incrementAndGet();
                            } catch (IllegalStateException e) {
                                assertTrue(e.getMessage().contains("is closed"), e.getMessage());
                                return null; // closed under us: the only failure allowed
                            }
                        }
                    }));
                }
                start.countDown();
                // Let some calls through before closing (not a timing assertion:
                // any interleaving is correct, including none succeeding).
                while (succeeded.get() < threads && !calls.stream().allMatch(Future::isDone)) {
                    Thread.onSpinWait();
                }
                f.close();
                for (Future<?> c : calls) {
                    c.get(120, TimeUnit.SECONDS);
                }
            }
        } finally {
            pool.shutdownNow();
            if (!pool.awaitTermination(60, TimeUnit.SECONDS)) {
                fail("the calling threads did not stop");
            }
        }
        assertEquals(before, QuiverFile.liveHandles(), "every raced file was freed exactly once");
    }
}
