package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Scans and takes through QuiverFile.scan / take: values, projection, filters, lifetimes. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class QuiverScanTest {
    static final long ROWS = 3510;
    @TempDir static Path dir;
    static Path mixed;
    static List<List<String>> written;
    static BufferAllocator root;
    BufferAllocator a;

    @BeforeAll
    static void writeFile() {
        root = new RootAllocator();
        mixed = dir.resolve("mixed.qvr");
        try (BufferAllocator w = root.newChildAllocator("write", 0, Long.MAX_VALUE)) {
            // Several roots, of uneven sizes, across row groups of 1,024 rows.
            written = TestTables.writeMixed(w, mixed, ROWS, 1000, WriterOptions.builder().rowGroupRows(1024).build());
        }
    }

    @AfterAll
    static void closeRoot() {
        root.close();
    }

    @org.junit.jupiter.api.BeforeEach
    void child() {
        a = root.newChildAllocator("test", 0, Long.MAX_VALUE);
    }

    @AfterEach
    void noLeak() {
        a.close(); // throws if a batch or a C struct was left behind
    }

    static List<List<String>> readAll(QuiverScanReader r) throws Exception {
        List<List<String>> cols = new ArrayList<>();
        while (r.loadNextBatch()) TestTables.collect(r.getVectorSchemaRoot(), cols);
        return cols;
    }

    static List<Long> ids(QuiverScanReader r) throws Exception {
        List<Long> out = new ArrayList<>();
        while (r.loadNextBatch()) {
            BigIntVector v = (BigIntVector) r.getVectorSchemaRoot().getVector("id");
            for (int i = 0; i < v.getValueCount(); i++) out.add(v.get(i));
        }
        return out;
    }

    @Test
    void roundTripEveryTypeAndNull() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(700).build())) {
            assertEquals(TestTables.mixedSchema().getFields(), r.getVectorSchemaRoot().getSchema().getFields());
            assertEquals(written, readAll(r));
            assertEquals(4, f.numRowGroups()); // rowGroupRows 1024 over 3510 rows
            assertEquals(ROWS, f.numRows());
        }
    }

    @Test
    void unsignedColumnsWidenUnderTheCast() throws Exception {
        Path p = dir.resolve("u32.qvr");
        Schema s = new Schema(List.of(TestTables.field("u", new org.apache.arrow.vector.types.pojo.ArrowType.Int(32, false), false)));
        try (VectorSchemaRoot rt = VectorSchemaRoot.create(s, a);
                QuiverWriter w = QuiverWriter.open(a, p, s, WriterOptions.defaults())) {
            org.apache.arrow.vector.UInt4Vector u = (org.apache.arrow.vector.UInt4Vector) rt.getVector(0);
            u.allocateNew(3);
            u.set(0, 0);
            u.set(1, 7);
            u.set(2, (int) 4_000_000_000L); // above int32's range: stored as its bits
            rt.setRowCount(3);
            w.write(rt);
            w.finish();
        }
        try (QuiverFile f = QuiverFile.open(p)) {
            try (QuiverScanReader r = f.scan(a, ScanOptions.defaults())) {
                assertTrue(r.loadNextBatch());
                assertEquals(4_000_000_000L,
                        ((org.apache.arrow.vector.UInt4Vector) r.getVectorSchemaRoot().getVector(0)).getValueAsLong(2));
            }
            try (QuiverScanReader r = f.scan(a, ScanOptions.builder().cast(Cast.UNSIGNED_WIDEN).build())) {
                assertTrue(r.loadNextBatch());
                BigIntVector v = (BigIntVector) r.getVectorSchemaRoot().getVector(0);
                assertEquals(List.of(0L, 7L, 4_000_000_000L), List.of(v.get(0), v.get(1), v.get(2)));
            }
        }
    }

    @Test
    void roundTripWithWorkersAndSmallPrefetch() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(2).prefetch(1).batchRows(512).build())) {
            assertEquals(written, readAll(r));
            assertEquals(ROWS, r.stats().rowsOutput());
        }
    }

    @Test
    void projectionByNameAndNestedPath() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder().columns("ST.y", "id").build())) {
            List<Field> fields = r.getVectorSchemaRoot().getSchema().getFields();
            assertEquals(List.of("st", "id"), fields.stream().map(Field::getName).toList());
            assertEquals(List.of("y"), fields.get(0).getChildren().stream().map(Field::getName).toList());
            List<List<String>> got = readAll(r);
            assertEquals(written.get(0), got.get(1));
            assertEquals(ROWS, got.get(0).size());
        }
    }

    @Test
    void noColumnsCountsRows() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder().columns(List.of()).build())) {
            long rows = 0;
            while (r.loadNextBatch()) rows += r.getVectorSchemaRoot().getRowCount();
            assertEquals(ROWS, rows);
            assertEquals(0, r.getVectorSchemaRoot().getSchema().getFields().size());
        }
    }

    @Test
    void unknownColumnIsNotFoundNamingIt() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed)) {
            QuiverNotFoundException e = assertThrows(QuiverNotFoundException.class,
                    () -> f.scan(a, ScanOptions.builder().columns("id", "nope").build()));
            assertTrue(e.getMessage().contains("nope"), e.getMessage());
            e = assertThrows(QuiverNotFoundException.class,
                    () -> f.scan(a, ScanOptions.builder().columns("st.zz").build()));
            assertTrue(e.getMessage().contains("zz"), e.getMessage());
        }
    }

    @Test
    void filterText() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder()
                        .filter("id >= 100 AND id < 200 AND s IS NOT NULL").columns("id").build())) {
            List<Long> want = new ArrayList<>();
            for (long x = 100; x < 200; x++) if (x % 5 != 0) want.add(x);
            assertEquals(want, ids(r));
            ScanStats st = r.stats();
            assertTrue(st.rowGroupsPruned() >= 3, st.toString()); // 4 row groups, rows 100..199 in the first
        }
        // A string literal with non-ASCII text crosses as UTF-8.
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder().filter("s = 's3-ünï'").columns("id").build())) {
            assertEquals(List.of(3L), ids(r));
        }
    }

    @Test
    void badFilterIsInvalidArgumentWithQuiversMessage() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed)) {
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.scan(a, ScanOptions.builder().filter("id > AND").build()));
            assertTrue(e.getMessage().contains("filter: expected") && e.getMessage().contains("position"), e.getMessage());
            e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.scan(a, ScanOptions.builder().filter("s > 5").build()));
            assertTrue(e.getMessage().contains("'s'"), e.getMessage());
        }
    }

    @Test
    void rowGroupRangeRowsAndLimit() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed)) {
            try (QuiverScanReader r = f.scan(a, ScanOptions.builder().rowGroups(1, 3).columns("id").build())) {
                List<Long> got = ids(r);
                assertEquals(2048, got.size());
                assertEquals(1024L, got.get(0));
            }
            try (QuiverScanReader r = f.scan(a, ScanOptions.builder().rows(10, 20).columns("id").build())) {
                assertEquals(List.of(10L, 11L, 12L, 13L, 14L, 15L, 16L, 17L, 18L, 19L), ids(r));
            }
            try (QuiverScanReader r = f.scan(a, ScanOptions.builder().limit(5).columns("id").build())) {
                assertEquals(List.of(0L, 1L, 2L, 3L, 4L), ids(r));
            }
        }
    }

    @Test
    void takeInAnyOrderWithDuplicates() throws Exception {
        long[] rows = {5, 3, 3, 3500, 0, 1024, 5};
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.take(a, rows, TakeOptions.builder().batchRows(3).build())) {
            List<List<String>> got = readAll(r);
            for (int c = 0; c < written.size(); c++) {
                List<String> want = new ArrayList<>();
                for (long x : rows) want.add(written.get(c).get((int) x));
                assertEquals(want, got.get(c), "column " + c);
            }
        }
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.take(a, new long[] {7, 2}, List.of("s", "id"))) {
            assertEquals(List.of(7L, 2L), ids(r));
        }
    }

    @Test
    void takeOutOfRangeNamesTheIndex() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed)) {
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.take(a, new long[] {1, 987654321}, TakeOptions.defaults()));
            assertTrue(e.getMessage().contains("987654321"), e.getMessage());
            e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.take(a, new long[] {-4}, TakeOptions.defaults()));
            assertTrue(e.getMessage().contains("-4"), e.getMessage());
        }
    }

    @Test
    void streamOutlivesItsFile() throws Exception {
        QuiverScanReader r;
        try (QuiverFile f = QuiverFile.open(mixed)) {
            r = f.scan(a, ScanOptions.builder().threads(2).build());
        }
        try (r) {
            assertEquals(written, readAll(r));
        }
    }

    @Test
    void closedEarlyWithWorkersReleasesPromptly() throws Exception {
        long before = ScanStream.liveCount();
        try (QuiverFile f = QuiverFile.open(mixed)) {
            QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(2).prefetch(4).batchRows(128).build());
            assertTrue(r.loadNextBatch());
            assertEquals(before + 1, ScanStream.liveCount());
            r.close();
            r.close(); // idempotent
            assertEquals(before, ScanStream.liveCount());
            assertThrows(IllegalStateException.class, r::loadNextBatch);
        }
    }

    @Test
    void closeFromAnotherThreadCancelsARead() throws Exception {
        long before = ScanStream.liveCount();
        try (QuiverFile f = QuiverFile.open(mixed)) {
            QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(2).batchRows(64).build());
            Thread t = new Thread(() -> {
                try {
                    r.close();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            // Reads until the closer's cancel lands: every call either
            // returns a batch or throws QuiverCancelledException / the
            // closed state, never anything else.
            assertTrue(r.loadNextBatch());
            t.start();
            Exception end = null;
            try {
                while (r.loadNextBatch()) {}
            } catch (QuiverCancelledException | IllegalStateException e) {
                end = e;
            }
            t.join();
            r.close();
            if (end != null) assertTrue(end instanceof QuiverCancelledException || end instanceof IllegalStateException);
        }
        assertEquals(before, ScanStream.liveCount());
    }

    @Test
    void anInterruptedThreadCancelsTheScan() throws Exception {
        for (int threads : new int[] {ScanOptions.SYNC, 2}) {
            try (QuiverFile f = QuiverFile.open(mixed);
                    QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(threads).batchRows(256).build())) {
                assertTrue(r.loadNextBatch());
                Thread.currentThread().interrupt();
                try {
                    QuiverCancelledException e = assertThrows(QuiverCancelledException.class, r::loadNextBatch);
                    assertTrue(Thread.currentThread().isInterrupted(), "the flag stays set");
                    assertTrue(e.getMessage().contains("cancel"), e.getMessage());
                } finally {
                    Thread.interrupted();
                }
                assertThrows(QuiverCancelledException.class, r::loadNextBatch); // the scan stays cancelled
            }
        }
    }

    @Test
    void cleanerReleasesAnUnclosedReader() throws Exception {
        long before = ScanStream.liveCount();
        try (QuiverFile f = QuiverFile.open(mixed)) {
            openAndDrop(f);
            assertEquals(before + 1, ScanStream.liveCount());
        }
        while (ScanStream.liveCount() != before) { // the class deadline bounds this
            System.gc();
            Thread.sleep(20);
        }
    }

    private void openAndDrop(QuiverFile f) {
        // Schema only, no batch: no Arrow buffer is left in the allocator.
        f.scan(a, ScanOptions.builder().threads(2).build());
    }

    @Test
    void castsReachTheNativeScan() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed);
                QuiverScanReader r = f.scan(a, ScanOptions.builder().cast(Cast.SPARK).columns("ts", "l").build())) {
            Schema s = r.getVectorSchemaRoot().getSchema();
            assertEquals(TestTables.mixedSchema().findField("ts"), s.findField("ts"));
            assertTrue(r.loadNextBatch());
            assertFalse(r.getVectorSchemaRoot().getRowCount() == 0);
        }
    }

    /**
     * Arrow Java 19 accounts imported (foreign) buffers like allocations:
     * BaseAllocator.wrapForeignAllocation calls the allocator's listener
     * (onPreAllocation / onAllocation, onRelease when freed) and counts the
     * bytes against its limit; a child allocator made without a listener
     * inherits its parent's. So the import allocator of a charged task must
     * be a child with AllocationListener.NOOP, or every batch is charged twice.
     */
    @Test
    void importedBuffersReachTheAllocatorsListener() throws Exception {
        java.util.concurrent.atomic.AtomicLong charged = new java.util.concurrent.atomic.AtomicLong();
        org.apache.arrow.memory.AllocationListener counting = new org.apache.arrow.memory.AllocationListener() {
            @Override
            public void onAllocation(long size) {
                charged.addAndGet(size);
            }

            @Override
            public void onRelease(long size) {
                charged.addAndGet(-size);
            }
        };
        try (BufferAllocator listened = a.newChildAllocator("listened", counting, 0, Long.MAX_VALUE);
                BufferAllocator inherits = listened.newChildAllocator("inherits", 0, Long.MAX_VALUE);
                BufferAllocator quiet = listened.newChildAllocator("quiet",
                        org.apache.arrow.memory.AllocationListener.NOOP, 0, Long.MAX_VALUE);
                QuiverFile f = QuiverFile.open(mixed)) {
            long[] seen = new long[3];
            BufferAllocator[] all = {listened, inherits, quiet};
            for (int i = 0; i < 3; i++) {
                try (QuiverScanReader r = f.scan(all[i], ScanOptions.builder().columns("id").build())) {
                    assertTrue(r.loadNextBatch());
                    seen[i] = charged.get();
                    assertTrue(all[i].getAllocatedMemory() >= 8 * r.getVectorSchemaRoot().getRowCount());
                }
                assertEquals(0, charged.get());
            }
            assertTrue(seen[0] >= 8 * 1024, "listener saw " + seen[0]);
            assertTrue(seen[1] >= 8 * 1024, "inherited listener saw " + seen[1]);
            assertEquals(0, seen[2]);
        }
    }

    @Test
    void aBatchOutlivesTheReaderWhenTransferred() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed)) {
            VectorSchemaRoot kept;
            try (QuiverScanReader r = f.scan(a, ScanOptions.builder().columns("id", "s").build())) {
                assertTrue(r.loadNextBatch());
                VectorSchemaRoot src = r.getVectorSchemaRoot();
                kept = VectorSchemaRoot.create(src.getSchema(), a);
                for (int i = 0; i < src.getFieldVectors().size(); i++)
                    src.getVector(i).makeTransferPair(kept.getVector(i)).transfer();
                kept.setRowCount(src.getRowCount());
            }
            try (kept) {
                List<List<String>> got = new ArrayList<>();
                TestTables.collect(kept, got);
                assertEquals(written.get(0).subList(0, kept.getRowCount()), got.get(0));
                assertEquals(written.get(3).subList(0, kept.getRowCount()), got.get(1));
            }
        }
    }
    /**
     * A MemoryBudget that closes the reader from inside its acquire, which a
     * synchronous scan calls on the thread inside loadNextBatch: close must
     * not wait for the call in flight (that is this thread: it hung), and
     * the stream and the root are released when that call returns.
     */
    @Test
    void aBudgetClosingTheReaderFromInsideLoadNextBatchDoesNotHang() {
        long before = ScanStream.liveCount();
        java.util.concurrent.atomic.AtomicReference<QuiverScanReader> reader = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicLong outstanding = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicInteger closes = new java.util.concurrent.atomic.AtomicInteger();
        io.quiver.memory.MemoryBudget closing = new io.quiver.memory.MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                QuiverScanReader r = reader.get();
                if (r != null) {
                    closes.incrementAndGet();
                    try {
                        r.close();
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
                outstanding.addAndGet(bytes);
                return bytes;
            }

            @Override
            public void release(long bytes) {
                outstanding.addAndGet(-bytes);
            }
        };
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> {
            try (io.quiver.memory.NativePool pool = io.quiver.memory.NativePool.create("closing", closing, 64 << 10);
                    QuiverFile f = QuiverFile.open(mixed, FileOptions.defaults().pool(pool));
                    QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(700).threads(ScanOptions.SYNC).build())) {
                reader.set(r);
                // The first batch asks the budget, which closes the reader.
                QuiverException e = assertThrows(QuiverException.class, r::loadNextBatch);
                assertTrue(closes.get() > 0, "the budget was called");
                assertTrue(e instanceof QuiverCancelledException || e instanceof QuiverOutOfMemoryException, e.toString());
                assertEquals(before, ScanStream.liveCount(), "the stream was released when the call returned");
                assertThrows(IllegalStateException.class, r::loadNextBatch);
                reader.set(null);
            }
        });
        assertEquals(0, outstanding.get());
    }
    /**
     * The same from a native scan worker, which calls the budget with two
     * workers: releasing the stream there would join the scan's workers, the
     * calling one among them (a self-join, then the scan freed under the
     * running worker). The close is handed to a thread of its own; the
     * reader ends cancelled and everything is released.
     */
    @Test
    void aBudgetClosingTheReaderFromANativeWorkerIsHandedOff() throws Exception {
        long before = ScanStream.liveCount();
        java.util.concurrent.atomic.AtomicReference<QuiverScanReader> reader = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicLong outstanding = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicInteger closes = new java.util.concurrent.atomic.AtomicInteger();
        io.quiver.memory.MemoryBudget closing = new io.quiver.memory.MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                QuiverScanReader r = reader.get();
                if (r != null && Thread.currentThread().getName().equals("quiver-native")) {
                    closes.incrementAndGet();
                    try {
                        r.close();
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
                outstanding.addAndGet(bytes);
                return bytes;
            }

            @Override
            public void release(long bytes) {
                outstanding.addAndGet(-bytes);
            }
        };
        // More rows than a small read, which runs on the caller's thread
        // whatever `threads` says: this scan must have native workers.
        Path big = dir.resolve("mixed-workers.qvr");
        try (BufferAllocator w = root.newChildAllocator("write-workers", 0, Long.MAX_VALUE)) {
            TestTables.writeMixed(w, big, 20_000, 1000, WriterOptions.builder().rowGroupRows(1024).build());
        }
        try (io.quiver.memory.NativePool pool = io.quiver.memory.NativePool.create("closing", closing, 64 << 10);
                QuiverFile f = QuiverFile.open(big, FileOptions.defaults().pool(pool));
                QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(100).threads(2).build())) {
            reader.set(r);
            RuntimeException e = assertThrows(RuntimeException.class, () -> {
                while (r.loadNextBatch()) { /* until the close lands */ }
            });
            assertTrue(e instanceof QuiverCancelledException || e instanceof IllegalStateException, e.toString());
            assertTrue(closes.get() > 0, "a worker called the budget");
        }
        while (ScanStream.liveCount() != before || a.getAllocatedMemory() != 0 || outstanding.get() != 0) {
            Thread.sleep(10); // the class deadline bounds this
        }
    }
    /**
     * Filters and column names with an unpaired surrogate are refused: the
     * '?' that String.getBytes puts in its place would compare against
     * another value (silently other rows) or find another column.
     */
    @Test
    void unpairedSurrogatesInFiltersAndNamesAreRefused() throws Exception {
        try (QuiverFile f = QuiverFile.open(mixed)) {
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.scan(a, ScanOptions.builder().filter("s = 'a\uDC00'").build()).close());
            assertTrue(e.getMessage().contains("scan: filter"), e.getMessage());
            assertTrue(e.getMessage().contains("U+DC00"), e.getMessage());
            e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.scan(a, ScanOptions.builder().columns("id", "s\uD800").build()).close());
            assertTrue(e.getMessage().contains("column name"), e.getMessage());
            e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> f.take(a, new long[] {1}, List.of("\uDFFFid")).close());
            assertTrue(e.getMessage().contains("at index 0"), e.getMessage());
        }
        try (VectorSchemaRoot r = VectorSchemaRoot.create(TestTables.mixedSchema(), a)) {
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class,
                    () -> QuiverWriter.open(a, dir.resolve("meta.qvr"), r.getSchema(),
                            WriterOptions.builder().metadata("origin", "a\uD800b").build()).close());
            assertTrue(e.getMessage().contains("metadata value of 'origin'"), e.getMessage());
        }
        assertFalse(java.nio.file.Files.exists(dir.resolve("meta.qvr")));
    }
    /**
     * Two threads closing one reader while a third is inside loadNextBatch:
     * the first close waits for that call; the second returned at once,
     * with the stream and its memory still there, so a caller that then
     * checked or closed its allocator saw a leak. Every close now returns
     * with the stream released.
     */
    @Test
    void aSecondConcurrentCloseReturnsOnlyOnceTheStreamIsReleased() throws Exception {
        long before = ScanStream.liveCount();
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
        io.quiver.memory.MemoryBudget blocking = new io.quiver.memory.MemoryBudget() {
            @Override
            public long acquire(long bytes) {
                if (armed.getAndSet(false)) {
                    entered.countDown();
                    try {
                        proceed.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return bytes;
            }

            @Override
            public void release(long bytes) {}
        };
        try (io.quiver.memory.NativePool pool = io.quiver.memory.NativePool.create("blocking", blocking, 64);
                QuiverFile f = QuiverFile.open(mixed, FileOptions.defaults().pool(pool))) {
            QuiverScanReader r = f.scan(a, ScanOptions.builder().batchRows(700).threads(ScanOptions.SYNC).build());
            assertTrue(r.loadNextBatch());
            armed.set(true);
            Thread loader = new Thread(() -> {
                try {
                    while (r.loadNextBatch()) { /* until cancelled */ }
                } catch (Exception expected) {
                    // cancelled by the close
                }
            });
            loader.start();
            assertTrue(entered.await(60, TimeUnit.SECONDS), "the loader reached the budget");
            Thread first = new Thread(() -> {
                try {
                    r.close();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            first.start();
            while (first.getState() != Thread.State.WAITING) Thread.sleep(1); // it waits for the loader
            Thread main = Thread.currentThread();
            Thread unblock = new Thread(() -> {
                // Lets the loader go once this thread waits in its own close.
                while (main.getState() != Thread.State.WAITING && main.getState() != Thread.State.BLOCKED) Thread.onSpinWait();
                proceed.countDown();
            });
            unblock.start();
            r.close(); // the second close
            assertEquals(before, ScanStream.liveCount(), "the stream is released when close returns");
            assertEquals(0, a.getAllocatedMemory(), "the root's buffers are released when close returns");
            proceed.countDown();
            first.join();
            loader.join();
            unblock.join();
        }
    }
}
