package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Errors raised inside a stream's get_next reach Java as the QuiverException
 * of their kind, from loadNextBatch; the JVM and other scans go on.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class QuiverScanFailureTest {
    @TempDir Path dir;

    static long countRows(QuiverFile f, BufferAllocator a, ScanOptions o) throws Exception {
        long n = 0;
        try (QuiverScanReader r = f.scan(a, o)) {
            while (r.loadNextBatch()) n += r.getVectorSchemaRoot().getRowCount();
        }
        return n;
    }

    @Test
    void corruptSegmentFailsTheBatchNamingColumnAndRowGroup() throws Exception {
        try (BufferAllocator a = new RootAllocator()) {
            Path good = dir.resolve("good.qvr"), bad = dir.resolve("bad.qvr");
            TestTables.writeRandomLongs(a, good, 100_000, 131_072, 1);
            byte[] bytes = Files.readAllBytes(good);
            for (int i = bytes.length / 3; i < bytes.length / 3 + 16; i++) bytes[i] ^= 0x5A;
            Files.write(bad, bytes);
            for (int threads : new int[] {ScanOptions.SYNC, 2}) {
                try (QuiverFile f = QuiverFile.open(bad)) { // the footer is intact
                    QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(threads).build());
                    try (r) {
                        QuiverCorruptException e = assertThrows(QuiverCorruptException.class, r::loadNextBatch);
                        String m = e.getMessage();
                        assertTrue(m.contains("'v'") && m.contains("row group 0") && m.contains("bad.qvr"), m);
                        // The stream stays failed: the same error again, not an end.
                        assertThrows(QuiverCorruptException.class, r::loadNextBatch);
                    }
                }
            }
            // Other scans, and the JVM, go on.
            try (QuiverFile f = QuiverFile.open(good)) {
                assertEquals(100_000, countRows(f, a, ScanOptions.builder().threads(2).build()));
            }
        }
    }

    @Test
    void fileTruncatedWhileReadFailsWithAQuiverException() throws Exception {
        try (BufferAllocator a = new RootAllocator()) {
            Path p = dir.resolve("shrinks.qvr"), other = dir.resolve("other.qvr");
            TestTables.writeRandomLongs(a, p, 64 * 1024, 1024, 2);
            TestTables.writeRandomLongs(a, other, 10_000, 1024, 3);
            try (QuiverFile f = QuiverFile.open(p);
                    QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(ScanOptions.SYNC).batchRows(1024).build())) {
                assertTrue(r.loadNextBatch());
                try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
                    raf.setLength(raf.length() / 4);
                }
                QuiverException e = assertThrows(QuiverException.class, () -> {
                    while (r.loadNextBatch()) {}
                });
                assertTrue(e.getMessage().contains("shrinks.qvr"), e.getMessage());
                try (QuiverFile g = QuiverFile.open(other)) {
                    assertEquals(10_000, countRows(g, a, ScanOptions.defaults()));
                }
            }
        }
    }
    /**
     * One byte flipped at every 97th offset of a file of every type (header,
     * segments of each column, footer), read with and without workers: each
     * read either fails with a QuiverException or returns exactly what was
     * written; never another exception, a crash or other values. (When this
     * was added, every such flip was caught, most as a checksum mismatch
     * naming the column and row group.)
     */
    @Test
    void aByteFlippedAnywhereIsAQuiverExceptionOrTheSameData() throws Exception {
        try (BufferAllocator a = new RootAllocator()) {
            Path good = dir.resolve("mixed.qvr"), bad = dir.resolve("flipped.qvr");
            java.util.List<java.util.List<String>> want = TestTables.writeMixed(a, good, 3000, 500,
                    WriterOptions.builder().rowGroupRows(1000).build());
            byte[] bytes = Files.readAllBytes(good);
            int failed = 0, same = 0;
            for (int off = 0; off < bytes.length; off += 97) {
                byte[] b = bytes.clone();
                b[off] ^= 0x5A;
                Files.write(bad, b);
                for (int threads : new int[] {ScanOptions.SYNC, 2}) {
                    java.util.List<java.util.List<String>> got = new java.util.ArrayList<>();
                    try (QuiverFile f = QuiverFile.open(bad);
                            QuiverScanReader r = f.scan(a, ScanOptions.builder().threads(threads).build())) {
                        while (r.loadNextBatch()) TestTables.collect(r.getVectorSchemaRoot(), got);
                    } catch (QuiverException e) {
                        assertTrue(e.getMessage().contains("flipped.qvr"), "offset " + off + ": " + e.getMessage());
                        failed++;
                        continue;
                    }
                    assertEquals(want, got, "byte " + off + " flipped, read with threads " + threads);
                    same++;
                }
            }
            assertTrue(failed > 0 && failed + same == 2 * ((bytes.length + 96) / 97), failed + " + " + same);
            assertEquals(0, a.getAllocatedMemory());
        }
    }
}
