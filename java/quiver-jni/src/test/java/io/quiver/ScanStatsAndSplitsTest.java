package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** ScanStats.rowsFiltered / bytesRead, and QuiverFile.planSplits over projected columns. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ScanStatsAndSplitsTest {
    static final long ROWS = 20_000;
    static final int RG = 1000;
    static final List<String> ALL = List.of("id", "i32", "f64", "s", "b", "d", "ts", "st", "l");
    @TempDir static Path dir;
    static Path file;
    static BufferAllocator root;

    @BeforeAll
    static void write() {
        root = new RootAllocator();
        file = dir.resolve("mixed.qvr");
        try (BufferAllocator w = root.newChildAllocator("write", 0, Long.MAX_VALUE)) {
            TestTables.writeMixed(w, file, ROWS, 1000, WriterOptions.builder().rowGroupRows(RG).build());
        }
    }

    @AfterAll
    static void close() {
        root.close();
    }

    static ScanStats scan(ScanOptions o) throws Exception {
        try (BufferAllocator a = root.newChildAllocator("scan", 0, Long.MAX_VALUE);
                QuiverFile f = QuiverFile.open(file);
                QuiverScanReader r = f.scan(a, o)) {
            long rows = 0;
            while (r.loadNextBatch()) rows += r.getVectorSchemaRoot().getRowCount();
            ScanStats s = r.stats();
            assertEquals(rows, s.rowsOutput());
            return s;
        }
    }

    static long bytes(List<Split> splits) {
        return splits.stream().mapToLong(Split::bytes).sum();
    }

    static void assertCovers(List<Split> splits, long rowGroups) {
        long next = 0;
        for (Split s : splits) {
            assertEquals(next, s.rowGroupBegin());
            assertTrue(s.rowGroupEnd() > s.rowGroupBegin());
            next = s.rowGroupEnd();
        }
        assertEquals(rowGroups, next);
    }

    @Test
    void rowsFilteredAddUp() throws Exception {
        for (int threads : new int[] {ScanOptions.SYNC, 2}) {
            ScanStats s = scan(ScanOptions.builder().filter("id >= 5500 AND id < 12000 AND b")
                    .threads(threads).build());
            assertTrue(s.rowGroupsPruned() > 0);
            assertTrue(s.rowsOutput() > 0 && s.rowsFiltered() > 0);
            assertEquals(s.rowsDecoded(), s.rowsFiltered() + s.rowsOutput());
            assertEquals(0, scan(ScanOptions.builder().threads(threads).build()).rowsFiltered());
        }
    }

    @Test
    void bytesReadAreTheProjectedChunks() throws Exception {
        List<Split> all, id;
        try (QuiverFile f = QuiverFile.open(file)) {
            all = f.planSplits(1, ALL);
            id = f.planSplits(1, List.of("id"));
        }
        assertEquals(ROWS / RG, all.size());
        ScanStats full = scan(ScanOptions.builder().build());
        assertEquals(bytes(all), full.bytesRead());
        ScanStats one = scan(ScanOptions.builder().columns("id").build());
        assertEquals(bytes(id), one.bytesRead());
        assertTrue(one.bytesRead() < full.bytesRead());
        // Row groups 5..11 only (the rest pruned): less again.
        ScanStats pruned = scan(ScanOptions.builder().columns("id").filter("id >= 5500 AND id < 12000").build());
        assertEquals(ROWS / RG - 7, pruned.rowGroupsPruned());
        assertTrue(pruned.bytesRead() < one.bytesRead());
        assertTrue(pruned.bytesRead() > 0);
    }

    @Test
    void smallColumnsMakeFewerLargerSplits() throws Exception {
        try (QuiverFile f = QuiverFile.open(file)) {
            long total = bytes(f.planSplits(1, ALL));
            long target = total / 10;
            List<Split> every = f.planSplits(target);
            List<Split> small = f.planSplits(target, List.of("b"));
            List<Split> nested = f.planSplits(target, List.of("st.x"));
            assertCovers(every, ROWS / RG);
            assertCovers(small, ROWS / RG);
            assertCovers(nested, ROWS / RG);
            assertTrue(small.size() < every.size(), small.size() + " vs " + every.size());
            assertTrue(bytes(small) / small.size() > 0);
            assertTrue(bytes(f.planSplits(1, List.of("st.x"))) < bytes(f.planSplits(1, List.of("st"))));
            assertEquals(every, f.planSplits(target, null));
            // No column: rows weigh, bytes are 0.
            List<Split> none = f.planSplits(2 * RG, List.of());
            assertCovers(none, ROWS / RG);
            assertEquals(ROWS / RG / 2, none.size());
            assertEquals(0, bytes(none));
            assertThrows(QuiverNotFoundException.class, () -> f.planSplits(target, List.of("nope")));
        }
    }
}
