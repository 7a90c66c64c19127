package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** ScanOptions.nanOrder: float filters under IEEE and under Spark's NaN-largest order. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NanOrderTest {
    // Row i holds VALUES[i] in both float columns (null where null); row groups of 2 rows.
    static final double[] VALUES = {Double.NaN, Double.NEGATIVE_INFINITY, -0.0, 0.0, 1.5,
        Double.POSITIVE_INFINITY, 0, 7};
    static final int NULL_ROW = 6;
    @TempDir static Path dir;
    static Path file;
    static BufferAllocator root;

    @BeforeAll
    static void write() {
        root = new RootAllocator();
        file = dir.resolve("nan.qvr");
        Schema schema = new Schema(List.of(
                TestTables.field("id", new ArrowType.Int(64, true), false),
                TestTables.field("d", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), true),
                TestTables.field("f", new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), true)));
        try (VectorSchemaRoot r = VectorSchemaRoot.create(schema, root);
                QuiverWriter w = QuiverWriter.open(root, file, schema, WriterOptions.builder().rowGroupRows(2).build())) {
            r.allocateNew();
            BigIntVector id = (BigIntVector) r.getVector("id");
            Float8Vector d = (Float8Vector) r.getVector("d");
            Float4Vector f = (Float4Vector) r.getVector("f");
            for (int i = 0; i < VALUES.length; i++) {
                id.setSafe(i, i);
                if (i == NULL_ROW) {
                    d.setNull(i);
                    f.setNull(i);
                } else {
                    d.setSafe(i, VALUES[i]);
                    f.setSafe(i, (float) VALUES[i]);
                }
            }
            r.setRowCount(VALUES.length);
            w.write(r);
            w.finish();
        }
    }

    @AfterAll
    static void close() {
        root.close();
    }

    static List<Long> ids(String filter, NanOrder order) throws Exception {
        List<Long> out = new ArrayList<>();
        try (BufferAllocator a = root.newChildAllocator("scan", 0, Long.MAX_VALUE);
                QuiverFile qf = QuiverFile.open(file);
                QuiverScanReader r = qf.scan(a, ScanOptions.builder().filter(filter).nanOrder(order).build())) {
            while (r.loadNextBatch()) {
                BigIntVector v = (BigIntVector) r.getVectorSchemaRoot().getVector("id");
                for (int i = 0; i < v.getValueCount(); i++) out.add(v.get(i));
            }
        }
        return out;
    }

    @Test
    void floatFiltersFollowTheOrder() throws Exception {
        for (String c : List.of("d", "f")) {
            assertEquals(List.of(), ids(c + " = NaN", NanOrder.IEEE));
            assertEquals(List.of(0L), ids(c + " = NaN", NanOrder.LARGEST));
            assertEquals(List.of(5L), ids(c + " >= Infinity", NanOrder.IEEE));
            assertEquals(List.of(0L, 5L), ids(c + " >= Infinity", NanOrder.LARGEST));
            assertEquals(List.of(5L, 7L), ids(c + " > 1.5", NanOrder.IEEE));
            assertEquals(List.of(0L, 5L, 7L), ids(c + " > 1.5", NanOrder.LARGEST));
            assertEquals(List.of(2L, 3L), ids(c + " = -0.0", NanOrder.LARGEST));
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 7L), ids(c + " < NaN", NanOrder.LARGEST));
            assertEquals(List.of(0L, 4L), ids(c + " IN (NaN, 1.5)", NanOrder.LARGEST));
            assertEquals(List.of(4L), ids(c + " IN (NaN, 1.5)", NanOrder.IEEE));
            // NOT: a NaN is FALSE for < under NaN-largest, TRUE's complement under IEEE.
            assertEquals(List.of(0L, 5L, 7L), ids("NOT (" + c + " <= 1.5)", NanOrder.IEEE));
            assertEquals(List.of(0L, 5L, 7L), ids("NOT (" + c + " <= 1.5)", NanOrder.LARGEST));
        }
        assertEquals(List.of(0L, 5L), ids("d = f AND d != 0 AND d > 5 AND d > 1e308", NanOrder.LARGEST));
        assertEquals(List.of(5L), ids("d = f AND d != 0 AND d > 5 AND d > 1e308", NanOrder.IEEE));
    }

    @Test
    void defaultIsIeee() {
        assertEquals(NanOrder.IEEE, ScanOptions.defaults().nanOrder());
        assertThrows(NullPointerException.class, () -> ScanOptions.builder().nanOrder(null));
    }
}
