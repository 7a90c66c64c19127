package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The README's Java example, as written there, so the README cannot drift from the API. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ReadmeExampleTest {
    @TempDir Path dir;

    @Test
    void readmeExampleRunsAndCopiesTheFilteredRows() throws Exception {
        Path lineitem = Fixtures.lineitem(dir.resolve("lineitem.qvr"), 0.01, 16_384);
        Path small = dir.resolve("small.qvr");
        long copied;
        // ---- as in README.md, "Using Quiver from Java" (paths aside) ----
        try (BufferAllocator alloc = new RootAllocator();
                QuiverFile f = QuiverFile.open(lineitem);
                QuiverScanReader r = f.scan(alloc, ScanOptions.builder()
                        .columns("l_orderkey", "l_quantity").filter("l_quantity < 24").threads(2).build());
                QuiverWriter w = QuiverWriter.open(alloc, small, r.getVectorSchemaRoot().getSchema(),
                        WriterOptions.defaults())) {
            while (r.loadNextBatch()) w.write(r.getVectorSchemaRoot());
            copied = w.finish().rows();
        }
        // ---- the copy holds exactly the rows the filter kept ----
        try (BufferAllocator alloc = new RootAllocator();
                QuiverFile all = QuiverFile.open(lineitem);
                QuiverFile f = QuiverFile.open(small);
                QuiverScanReader check = all.scan(alloc,
                        ScanOptions.builder().columns("l_quantity").filter("l_quantity < 24").build())) {
            long expected = 0;
            while (check.loadNextBatch()) expected += check.getVectorSchemaRoot().getRowCount();
            assertTrue(expected > 0 && expected < all.numRows());
            assertEquals(expected, copied);
            assertEquals(expected, f.numRows());
            assertEquals(2, f.schema().getFields().size());
        }
    }
}
