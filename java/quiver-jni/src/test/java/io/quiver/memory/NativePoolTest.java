package io.quiver.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.FileOptions;
import io.quiver.QuiverFile;
import io.quiver.QuiverOutOfMemoryException;
import io.quiver.QuiverScanReader;
import io.quiver.ScanOptions;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** NativePool: own limits, Java-hosted pools under scans, releaseUnused, a throwing budget, lifetimes. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NativePoolTest {
    static final int COLUMNS = 4;
    static final int ROWS = 50_000;
    @TempDir static Path dir;
    static Path file;
    static BufferAllocator root;

    @BeforeAll
    static void write() {
        root = new RootAllocator();
        file = dir.resolve("longs.qvr");
        try (BufferAllocator w = root.newChildAllocator("write", 0, Long.MAX_VALUE)) {
            PoolFixtures.writeLongs(w, file, COLUMNS, ROWS, 8192);
        }
    }

    @AfterAll
    static void close() {
        root.close();
    }

    /** Scans every column and checks the values; returns the batches read. */
    static int scanAll(NativePool pool, int threads) throws Exception {
        int batches = 0;
        long row = 0;
        try (BufferAllocator a = root.newChildAllocator("scan", 0, Long.MAX_VALUE);
                QuiverFile f = QuiverFile.open(file, FileOptions.defaults().pool(pool));
                QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(4096).threads(threads).build())) {
            while (r.loadNextBatch()) {
                batches++;
                BigIntVector c1 = (BigIntVector) r.getVectorSchemaRoot().getVector("c1");
                for (int i = 0; i < c1.getValueCount(); i++) {
                    assertEquals((row + i) * 2, c1.get(i));
                }
                row += c1.getValueCount();
            }
        }
        assertEquals(ROWS, row);
        return batches;
    }

    @Test
    void ownLimitPool() {
        NativePool p = NativePool.create("own", 64L << 20);
        PoolStats s = p.stats();
        assertEquals(64L << 20, s.limit());
        assertEquals(0, s.hostHeld());
        assertEquals(0, s.reservations());
        assertEquals(0, p.releaseUnused(0)); // no host: nothing goes back anywhere
        assertTrue(p.nativeHandle() != 0);
        assertEquals("own", p.name());
        p.close();
        p.close(); // idempotent
        assertTrue(p.isClosed());
        assertThrows(IllegalStateException.class, p::stats);
        assertThrows(IllegalStateException.class, p::nativeHandle);
        assertEquals(0, p.releaseUnused(1 << 20));
    }

    @Test
    void badArguments() {
        assertThrows(IllegalArgumentException.class, () -> NativePool.create("x", -1));
        assertThrows(IllegalArgumentException.class, () -> NativePool.create("x", new HostBudget(1), -1));
        assertThrows(NullPointerException.class, () -> NativePool.create("x", null, 0));
    }

    @Test
    void hostedScanIsChargedAndBalanced() throws Exception {
        HostBudget b = new HostBudget(Long.MAX_VALUE);
        try (NativePool p = NativePool.create("hosted", b, 64 << 10)) {
            assertTrue(scanAll(p, 2) > 0);
            PoolStats s = p.stats();
            assertTrue(s.hostAcquireCalls() > 0);
            assertEquals(65536, s.blockSize());
            assertEquals(0, s.reservations()); // file, scan and batches closed
            assertEquals(b.outstanding.get(), s.hostHeld());
            assertEquals(s.hostBytesAcquired() - s.hostBytesReleased(), s.hostHeld());
            assertTrue(s.peakReserved() > 0);
        }
        assertEquals(0, b.outstanding.get()); // everything given back at close
    }

    @Test
    void releaseUnusedGivesBackRealBytes() throws Exception {
        HostBudget b = new HostBudget(Long.MAX_VALUE);
        try (NativePool p = NativePool.create("release", b, 64 << 10)) {
            scanAll(p, 0);
            PoolStats before = p.stats();
            assertTrue(before.hostHeld() > 0, "the scan leaves cached blocks or surplus: " + before);
            long got = p.releaseUnused(0);
            PoolStats after = p.stats();
            assertEquals(before.hostHeld() - got, after.hostHeld());
            assertTrue(got > 0);
            assertEquals(0, after.hostHeld()); // nothing is in use after the scan
            assertEquals(0, after.cacheBytes());
            assertEquals(0, b.outstanding.get());
            assertEquals(0, p.releaseUnused(0));
        }
    }

    @Test
    void throwingBudgetIsACleanOutOfMemory() throws Exception {
        HostBudget b = new HostBudget(Long.MAX_VALUE);
        b.toThrow = new IllegalStateException("task budget revoked: spill of consumer X failed");
        try (NativePool p = NativePool.create("throwing", b, 64 << 10)) {
            QuiverOutOfMemoryException e = assertThrows(QuiverOutOfMemoryException.class, () -> scanAll(p, 0));
            assertTrue(e.getMessage().contains("task budget revoked: spill of consumer X failed"), e.getMessage());
            assertTrue(e.getMessage().contains("throwing"), e.getMessage()); // the pool's name
            // The pool still works once the budget does.
            b.toThrow = null;
            assertTrue(scanAll(p, 0) > 0);
        }
        assertEquals(0, b.outstanding.get());
    }

    /**
     * A budget returning more than asked (or a negative value) is not an
     * error, but the pool takes only what it asked for and releases only
     * that: the excess must go back to the budget at once, or the budget
     * stays charged after the pool is gone.
     */
    @Test
    void aBudgetGrantingMoreThanAskedGetsTheExcessBack() throws Exception {
        HostBudget counting = new HostBudget(Long.MAX_VALUE);
        MemoryBudget greedy = new MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                return counting.acquire(2 * bytes + 7);
            }

            @Override
            public void release(long bytes) {
                counting.release(bytes);
            }
        };
        try (NativePool p = NativePool.create("greedy", greedy, 64 << 10)) {
            assertTrue(scanAll(p, 0) > 0);
            assertTrue(scanAll(p, 2) > 0);
            assertEquals(p.stats().hostHeld(), counting.outstanding.get(), "the budget holds what the pool holds");
        }
        assertEquals(0, counting.outstanding.get());
        MemoryBudget negative = new MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                return -bytes;
            }

            @Override
            public void release(long bytes) {
                throw new AssertionError("nothing was granted, nothing may be released");
            }
        };
        try (NativePool p = NativePool.create("negative", negative, 64 << 10)) {
            QuiverOutOfMemoryException e = assertThrows(QuiverOutOfMemoryException.class, () -> scanAll(p, 0));
            assertTrue(e.getMessage().contains("MemoryBudget.acquire returned -"), e.getMessage());
        }
    }

    @Test
    void shortBudgetIsACleanOutOfMemory() {
        HostBudget b = new HostBudget(64 << 10);
        try (NativePool p = NativePool.create("short", b, 64 << 10)) {
            QuiverOutOfMemoryException e = assertThrows(QuiverOutOfMemoryException.class, () -> scanAll(p, 2));
            assertTrue(e.getMessage().contains("pool 'short'"), e.getMessage());
        }
        assertEquals(0, b.outstanding.get());
    }

    /**
     * A budget that, on every acquire, first asks the very pool that is
     * asking it to give back all it can, as Spark does when it spills the
     * requesting consumer: releaseUnused runs inside the pool's own host
     * call, on native workers as well as on this thread, and must neither
     * deadlock (the class timeout) nor leave the books wrong.
     */
    @Test
    void releaseUnusedFromInsideTheHostsAcquire() throws Exception {
        NativePool[] self = new NativePool[1];
        java.util.concurrent.atomic.AtomicLong inside = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicLong freed = new java.util.concurrent.atomic.AtomicLong();
        HostBudget b = new HostBudget(Long.MAX_VALUE) {
            @Override
            public long acquire(long bytes) {
                inside.incrementAndGet();
                freed.addAndGet(self[0].releaseUnused(0));
                return super.acquire(bytes);
            }
        };
        try (NativePool p = NativePool.create("self-spilling", b, 64 << 10)) {
            self[0] = p;
            for (int i = 0; i < 3; i++) {
                assertTrue(scanAll(p, i == 0 ? 0 : 2) > 0);
            }
            PoolStats s = p.stats();
            assertEquals(b.outstanding.get(), s.hostHeld());
            assertEquals(s.hostBytesAcquired() - s.hostBytesReleased(), s.hostHeld());
        }
        assertTrue(inside.get() > 0);
        assertTrue(freed.get() > 0, "releaseUnused from inside acquire gave cached or surplus memory back");
        assertEquals(0, b.outstanding.get());
    }

    @Test
    void poolClosedWhileAScanStillReads() throws Exception {
        HostBudget b = new HostBudget(Long.MAX_VALUE);
        NativePool p = NativePool.create("early", b, 64 << 10);
        long row = 0;
        try (BufferAllocator a = root.newChildAllocator("scan", 0, Long.MAX_VALUE);
                QuiverFile f = QuiverFile.open(file, FileOptions.defaults().pool(p));
                QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(4096).threads(2).build())) {
            assertTrue(r.loadNextBatch());
            row += r.getVectorSchemaRoot().getRowCount();
            // Java lets go of the pool; the file and the scan still charge it.
            p.close();
            assertTrue(b.outstanding.get() > 0);
            while (r.loadNextBatch()) {
                BigIntVector c3 = (BigIntVector) r.getVectorSchemaRoot().getVector("c3");
                assertEquals(row * 4, c3.get(0));
                row += c3.getValueCount();
            }
        }
        assertEquals(ROWS, row);
        // The last user gone, the pool gave everything back to its host.
        assertEquals(0, b.outstanding.get());
        assertFalse(b.acquires.get() == 0);
    }
}
