package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.quiver.Cast;
import io.quiver.QuiverFile;
import io.quiver.QuiverScanReader;
import io.quiver.QuiverWriter;
import io.quiver.ScanOptions;
import io.quiver.WriterOptions;
import io.quiver.spark.read.SparkSchemaConverter;

import java.nio.file.Path;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Batches of the row writer written into a Quiver file and read back
 * through the read path's cast (Cast.SPARK): the native writer takes the
 * vectors as they are, the file's schema maps back to the very Spark
 * schema, and every value (nulls at every level included) comes back.
 * Both ways into the native writer: copied ({@code write}) and moved
 * ({@code writeOwned}, which clears the root; the writer's reset then
 * allocates fresh buffers while the native writer still holds the old
 * ones, and the allocator must close clean after both are done).
 */
@Timeout(300)
class ArrowRowWriterRoundTripTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "owned={0}")
    @ValueSource(booleans = {false, true})
    void everyTypeThroughAQuiverFile(boolean owned) throws Exception {
        StructType schema = TestRows.everyType();
        List<GenericInternalRow> rows = TestRows.rows(schema, 3000, 11);
        UnsafeProjection p = UnsafeProjection.create(schema);
        Path file = dir.resolve("every.qvr");
        try (BufferAllocator allocator = new RootAllocator()) {
            try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 1000);
                    QuiverWriter out = QuiverWriter.open(allocator, file, ArrowRowWriter.arrowSchema(schema),
                            WriterOptions.builder().rowGroupRows(1200).build())) {
                for (int i = 0; i < rows.size(); i++) {
                    // Alternate generic and unsafe rows within the same batches.
                    InternalRow r = i % 2 == 0 ? rows.get(i) : p.apply(rows.get(i));
                    w.write(r);
                    if (w.isFull()) {
                        push(out, w.finishBatch(), owned);
                        w.reset();
                    }
                }
                if (w.rows() > 0) {
                    push(out, w.finishBatch(), owned);
                }
                assertEquals(rows.size(), out.finish().rows());
            }
            try (QuiverFile f = QuiverFile.open(file)) {
                assertEquals(schema, SparkSchemaConverter.convert(f.schema(), file.toString()));
                int seen = 0;
                try (QuiverScanReader scan = f.scan(allocator, ScanOptions.builder().cast(Cast.SPARK).build())) {
                    while (scan.loadNextBatch()) {
                        VectorSchemaRoot root = scan.getVectorSchemaRoot();
                        if (root.getRowCount() == 0) {
                            continue;
                        }
                        TestRows.assertRows(schema, rows, seen, TestRows.asSpark(root));
                        seen += root.getRowCount();
                    }
                }
                assertEquals(rows.size(), seen);
            }
        }
    }

    private static void push(QuiverWriter out, VectorSchemaRoot root, boolean owned) {
        if (owned) {
            out.writeOwned(root);
            assertEquals(0, root.getRowCount());
        } else {
            out.write(root);
        }
    }
}
