package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * QuiverWriter.writeOwned: the root's buffers move into the native writer
 * (no copy), are held until their row group is written, and are released
 * then; the root is cleared and refilled by the caller.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class QuiverWriterOwnedTest {
    @TempDir Path dir;
    BufferAllocator a;
    // The roots' buffers. Once moved in, a root's buffers are accounted to
    // the allocator the writer exports with (`a`, given to open): Arrow's
    // export takes its references there, and root.clear() drops the
    // root's, so `data` goes back to 0 while `a` holds what the writer holds.
    BufferAllocator data;

    static final Schema SCHEMA = new Schema(List.of(
            TestTables.field("id", new ArrowType.Int(64, true), true),
            TestTables.field("s", new ArrowType.Utf8(), true)));

    @BeforeEach
    void open() {
        a = new RootAllocator();
        data = a.newChildAllocator("data", 0, Long.MAX_VALUE);
    }

    @AfterEach
    void noLeak() {
        data.close(); // throws when a buffer is still held
        a.close();
    }

    /** Fills the root with rows first..first+n-1 (fresh buffers). */
    static void fill(VectorSchemaRoot r, long first, int n) {
        BigIntVector id = (BigIntVector) r.getVector(0);
        VarCharVector s = (VarCharVector) r.getVector(1);
        id.allocateNew(n);
        s.allocateNew(n);
        for (int i = 0; i < n; i++) {
            long v = first + i;
            if (v % 7 == 3) id.setNull(i);
            else id.set(i, v * 31);
            if (v % 5 == 1) s.setNull(i);
            else s.setSafe(i, ("row " + v).getBytes(StandardCharsets.UTF_8));
        }
        r.setRowCount(n);
    }

    static List<String> readBack(BufferAllocator a, Path p) throws Exception {
        List<String> out = new ArrayList<>();
        try (QuiverFile f = QuiverFile.open(p); QuiverScanReader s = f.scan(a, ScanOptions.defaults())) {
            while (s.loadNextBatch()) {
                VectorSchemaRoot r = s.getVectorSchemaRoot();
                for (int i = 0; i < r.getRowCount(); i++)
                    out.add(r.getVector(0).getObject(i) + "|" + r.getVector(1).getObject(i));
            }
        }
        return out;
    }

    static List<String> expected(long rows) {
        List<String> out = new ArrayList<>();
        try (BufferAllocator x = new RootAllocator(); VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, x)) {
            fill(r, 0, (int) rows);
            for (int i = 0; i < rows; i++) out.add(r.getVector(0).getObject(i) + "|" + r.getVector(1).getObject(i));
        }
        return out;
    }

    @Test
    void roundTripWithRootReuse() throws Exception {
        for (int inFlight : new int[] {WriterOptions.INLINE, 0, 1, 3}) {
            Path p = dir.resolve("owned" + inFlight + ".qvr");
            long rows = 0;
            try (VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, data);
                    QuiverWriter w = QuiverWriter.open(a, p, SCHEMA,
                            WriterOptions.builder().rowGroupRows(1000).maxInFlight(inFlight).build())) {
                // Batches of 700 rows straddle the 1000-row row groups; the
                // root is refilled with different rows after each move.
                for (int b = 0; b < 9; b++) {
                    fill(r, rows, 700);
                    w.writeOwned(r);
                    assertEquals(0, r.getRowCount());
                    assertEquals(0, r.getVector(0).getValueCount());
                    rows += 700;
                }
                assertEquals(rows, w.finish().rows());
            }
            assertEquals(0, a.getAllocatedMemory());
            assertEquals(expected(rows), readBack(a, p));
        }
    }

    @Test
    void buffersAreHeldUntilTheirRowGroupIsWrittenThenReleased() throws Exception {
        Path p = dir.resolve("held.qvr");
        try (VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, data);
                QuiverWriter w = QuiverWriter.open(a, p, SCHEMA,
                        WriterOptions.builder().rowGroupRows(1000).maxInFlight(WriterOptions.INLINE).build())) {
            fill(r, 0, 600);
            long size = data.getAllocatedMemory();
            w.writeOwned(r);
            // The root let go, the writer holds the buffers: not copied, not
            // freed (accounted to the export's allocator now).
            assertEquals(0, data.getAllocatedMemory());
            assertTrue(a.getAllocatedMemory() >= size, a.getAllocatedMemory() + " < " + size);
            assertTrue(w.bufferedBytes() >= 600 * 8, "buffered " + w.bufferedBytes());
            fill(r, 600, 400);
            w.writeOwned(r); // completes row group 0: encoded on this thread, both released
            assertEquals(0, a.getAllocatedMemory());
            fill(r, 1000, 10);
            w.writeOwned(r);
            assertTrue(a.getAllocatedMemory() > 0);
            assertEquals(1010, w.finish().rows());
            assertEquals(0, a.getAllocatedMemory());
        }
        assertEquals(expected(1010), readBack(a, p));
        // With the background encoder: released at the latest by finish.
        Path q = dir.resolve("held2.qvr");
        try (VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, data);
                QuiverWriter w = QuiverWriter.open(a, q, SCHEMA, WriterOptions.builder().rowGroupRows(1000).build())) {
            long batch = 0;
            for (int b = 0; b < 10; b++) {
                fill(r, 500L * b, 500);
                batch = Math.max(batch, data.getAllocatedMemory());
                w.writeOwned(r);
                // At most 2 sealed row groups in flight (2 batches each) plus
                // the open one's batch: 5 batches, and the exports' structs.
                assertTrue(a.getAllocatedMemory() <= 5 * batch + 5 * 4096,
                        "held " + a.getAllocatedMemory() + " with batches of " + batch);
            }
            assertEquals(5000, w.finish().rows());
            assertEquals(0, a.getAllocatedMemory());
        }
        assertEquals(expected(5000), readBack(a, q));
    }

    @Test
    void aWorkerFailureSurfacesAndReleasesEverything() throws Exception {
        Path p = dir.resolve("fail.qvr");
        Random rnd = new Random(1);
        try (VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, data);
                QuiverWriter w = QuiverWriter.open(a, p, SCHEMA,
                        WriterOptions.builder().memoryLimit(96 * 1024).rowGroupRows(50_000).build())) {
            // Random values do not compress: encoding a 50,000-row row group
            // needs more than the 96 KiB the native pool may hold, on the
            // worker; the failure surfaces at a later call or at finish.
            QuiverOutOfMemoryException e = assertThrows(QuiverOutOfMemoryException.class, () -> {
                for (int b = 0; b < 6; b++) {
                    fill(r, 0, 50_000);
                    BigIntVector id = (BigIntVector) r.getVector(0);
                    for (int i = 0; i < 50_000; i++) id.set(i, rnd.nextLong());
                    w.writeOwned(r);
                }
                w.finish();
            });
            assertTrue(e.getMessage().contains("fail.qvr") && e.getMessage().contains("row group"), e.getMessage());
            assertThrows(QuiverOutOfMemoryException.class, w::finish);
        }
        assertEquals(0, a.getAllocatedMemory());
        try (var s = Files.list(dir)) {
            assertEquals(0, s.count());
        }
    }

    @Test
    void abortAndCloseWithoutFinishReleaseEverything() throws Exception {
        long live = QuiverWriter.liveCount();
        for (boolean abort : new boolean[] {true, false}) {
            Path p = dir.resolve("gone.qvr");
            try (VectorSchemaRoot r = VectorSchemaRoot.create(SCHEMA, data);
                    QuiverWriter w = QuiverWriter.open(a, p, SCHEMA,
                            WriterOptions.builder().rowGroupRows(1000).maxInFlight(1).build())) {
                for (int b = 0; b < 7; b++) {
                    fill(r, 700L * b, 700);
                    w.writeOwned(r);
                }
                assertTrue(a.getAllocatedMemory() > 0);
                if (abort) {
                    w.abort();
                    assertEquals(0, a.getAllocatedMemory());
                    fill(r, 0, 3);
                    assertThrows(IllegalStateException.class, () -> w.writeOwned(r));
                    r.clear();
                }
            }
            assertEquals(0, a.getAllocatedMemory());
            assertEquals(live, QuiverWriter.liveCount());
            try (var s = Files.list(dir)) {
                assertEquals(0, s.count());
            }
        }
    }

    @Test
    void maxInFlightIsChecked() {
        assertThrows(QuiverInvalidArgumentException.class, () -> WriterOptions.builder().maxInFlight(-2));
        assertEquals(WriterOptions.INLINE, -1);
    }
}
