package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.validate.ValidateVectorBufferVisitor;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ArrowRowWriter on its own: every type with nulls at every level compared
 * with the values put in (through Spark's ArrowColumnVector), rows reused
 * and overwritten by the caller, growth and the return to the start
 * capacity, the poisoning of a failed writer, and no leak (every test's
 * allocator must close clean).
 */
@Timeout(120)
class ArrowRowWriterTest {
    private BufferAllocator allocator;

    @BeforeEach
    void open() {
        allocator = new RootAllocator();
    }

    @AfterEach
    void closeAllocator() {
        // Throws (failing the test) if any buffer is still held.
        allocator.close();
    }

    /** Writes {@code rows} in batches of {@code batchRows}, checking every batch against them. */
    private void writeAndCheck(StructType schema, List<? extends InternalRow> expected, List<? extends InternalRow> given,
            int batchRows) {
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, batchRows)) {
            int from = 0;
            for (int i = 0; i < given.size(); i++) {
                w.write(given.get(i));
                if (w.isFull() || i == given.size() - 1) {
                    VectorSchemaRoot root = w.finishBatch();
                    assertEquals(w.rows(), root.getRowCount());
                    for (FieldVector v : root.getFieldVectors()) {
                        v.accept(new ValidateVectorBufferVisitor(), null);
                    }
                    TestRows.assertRows(schema, expected, from, TestRows.asSpark(root));
                    from += root.getRowCount();
                    root.clear();
                    w.reset();
                }
            }
            assertEquals(given.size(), from);
        }
    }

    @Test
    void everyTypeWithNullsAtEveryLevelFromGenericRows() {
        StructType schema = TestRows.everyType();
        List<GenericInternalRow> rows = TestRows.rows(schema, 1500, 1);
        writeAndCheck(schema, rows, rows, 500);
    }

    @Test
    void everyTypeFromUnsafeRows() {
        StructType schema = TestRows.everyType();
        List<GenericInternalRow> rows = TestRows.rows(schema, 1500, 2);
        UnsafeProjection p = UnsafeProjection.create(schema);
        List<InternalRow> unsafe = new ArrayList<>();
        for (GenericInternalRow r : rows) {
            unsafe.add(p.apply(r).copy());
        }
        writeAndCheck(schema, rows, unsafe, 700);
    }

    @Test
    void oneOnHeapUnsafeRowReusedForEveryRow() {
        StructType schema = TestRows.everyType();
        List<GenericInternalRow> rows = TestRows.rows(schema, 600, 3);
        UnsafeProjection p = UnsafeProjection.create(schema);
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 1000)) {
            UnsafeRow last = null;
            for (GenericInternalRow r : rows) {
                UnsafeRow u = p.apply(r); // the projection's one row, rewritten each time
                if (last != null) {
                    assertSame(last, u);
                }
                last = u;
                w.write(u);
            }
            VectorSchemaRoot root = w.finishBatch();
            assertEquals(rows.size(), root.getRowCount());
            TestRows.assertRows(schema, rows, 0, TestRows.asSpark(root));
        }
    }

    @Test
    void oneOffHeapUnsafeRowReusedAndScribbledOver() {
        StructType schema = TestRows.everyType();
        List<GenericInternalRow> rows = TestRows.rows(schema, 600, 4);
        UnsafeProjection p = UnsafeProjection.create(schema);
        int room = 1 << 20;
        long address = Platform.allocateMemory(room);
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 256)) {
            UnsafeRow offHeap = new UnsafeRow(schema.size());
            int from = 0;
            for (GenericInternalRow r : rows) {
                UnsafeRow u = p.apply(r);
                assertTrue(u.getSizeInBytes() <= room);
                Platform.copyMemory(u.getBaseObject(), u.getBaseOffset(), null, address, u.getSizeInBytes());
                offHeap.pointTo(null, address, u.getSizeInBytes());
                w.write(offHeap);
                // Whatever the writer kept of the row would now read garbage.
                Platform.setMemory(address, (byte) 0xA5, u.getSizeInBytes());
                if (w.isFull()) {
                    VectorSchemaRoot root = w.finishBatch();
                    TestRows.assertRows(schema, rows, from, TestRows.asSpark(root));
                    from += root.getRowCount();
                    w.reset();
                }
            }
            VectorSchemaRoot root = w.finishBatch();
            TestRows.assertRows(schema, rows, from, TestRows.asSpark(root));
            assertEquals(rows.size(), from + root.getRowCount());
        } finally {
            Platform.freeMemory(address);
        }
    }

    @Test
    void genericRowWhoseBackingArraysAreOverwrittenAfterWrite() {
        StructType schema = new StructType()
                .add("s", DataTypes.StringType)
                .add("b", DataTypes.BinaryType)
                .add("a", DataTypes.createArrayType(DataTypes.StringType))
                .add("st", new StructType().add("b", DataTypes.BinaryType));
        byte[] text = new byte[32];
        byte[] bin = new byte[16];
        List<InternalRow> expected = new ArrayList<>();
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 1024)) {
            for (int i = 0; i < 300; i++) {
                byte[] t = TestRows.utf8("row " + i + " é");
                System.arraycopy(t, 0, text, 0, t.length);
                Arrays.fill(bin, (byte) i);
                // One string object over a shared array, one byte[] reused:
                // the caller's buffers, rewritten for the next row.
                UTF8String s = UTF8String.fromBytes(text, 0, t.length);
                GenericInternalRow row = new GenericInternalRow(new Object[] {s, bin,
                    new GenericArrayData(new Object[] {s, null, s}), new GenericInternalRow(new Object[] {bin})});
                w.write(row);
                expected.add(new GenericInternalRow(new Object[] {s.clone(), bin.clone(),
                    new GenericArrayData(new Object[] {s.clone(), null, s.clone()}),
                    new GenericInternalRow(new Object[] {bin.clone()})}));
                Arrays.fill(text, (byte) 'X');
                Arrays.fill(bin, (byte) -1);
            }
            VectorSchemaRoot root = w.finishBatch();
            assertEquals(300, root.getRowCount());
            TestRows.assertRows(schema, expected, 0, TestRows.asSpark(root));
        }
    }

    @Test
    void vectorsStartAt64SlotsGrowAndGoBackAfterEachBatch() {
        StructType schema = TestRows.everyType();
        List<GenericInternalRow> rows = TestRows.rows(schema, 5000, 5);
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 8192)) {
            List<Integer> start = capacities(w.finishBatch());
            long startBytes = w.allocatedBytes();
            long startAllocator = allocator.getAllocatedMemory();
            assertTrue(startBytes > 0 && startBytes <= startAllocator, startBytes + " vs " + startAllocator);
            w.reset();
            for (int c : start) {
                // Arrow rounds buffers up to powers of two: 64 slots, or a
                // few more where a buffer holds them in fewer bytes.
                assertTrue(c >= 64 && c <= 256, "start capacity " + c);
            }
            for (GenericInternalRow r : rows) {
                w.write(r);
            }
            VectorSchemaRoot root = w.finishBatch();
            TestRows.assertRows(schema, rows, 0, TestRows.asSpark(root));
            for (FieldVector v : root.getFieldVectors()) {
                assertTrue(v.getValueCapacity() >= 5000, v.getName() + " holds " + v.getValueCapacity());
            }
            assertTrue(w.allocatedBytes() > 8 * startBytes, w.allocatedBytes() + " vs start " + startBytes);
            w.reset();
            assertEquals(0, w.rows());
            assertEquals(start, capacities(w.finishBatch()));
            assertEquals(startBytes, w.allocatedBytes());
            assertEquals(startAllocator, allocator.getAllocatedMemory());
            w.reset();
        }
    }

    /** The slots every vector (children included) holds. */
    private static List<Integer> capacities(VectorSchemaRoot root) {
        List<Integer> out = new ArrayList<>();
        for (FieldVector v : root.getFieldVectors()) {
            collect(v, out);
        }
        return out;
    }

    private static void collect(FieldVector v, List<Integer> out) {
        if (v instanceof BaseFixedWidthVector || v instanceof BaseVariableWidthVector || v instanceof ListVector
                || v instanceof StructVector) {
            out.add(v.getValueCapacity());
        }
        for (FieldVector c : v.getChildrenFromFields()) {
            collect(c, out);
        }
    }

    @Test
    void aSmallBatchStartsSmaller() {
        StructType schema = new StructType().add("a", DataTypes.LongType).add("s", DataTypes.StringType);
        try (ArrowRowWriter small = new ArrowRowWriter(schema, allocator, 8);
                ArrowRowWriter big = new ArrowRowWriter(schema, allocator, 100_000)) {
            assertTrue(small.allocatedBytes() < big.allocatedBytes(),
                    small.allocatedBytes() + " vs " + big.allocatedBytes());
            // 64 slots of a long and a string: well under 4 KiB.
            assertTrue(big.allocatedBytes() < 4096, "start " + big.allocatedBytes());
        }
    }

    @Test
    void isFullAtBatchRowsAndAtTheOffsetLimit() {
        StructType schema = new StructType().add("id", DataTypes.IntegerType)
                .add("st", new StructType().add("s", DataTypes.StringType));
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 100, 1000)) {
            GenericInternalRow row = new GenericInternalRow(new Object[] {1,
                new GenericInternalRow(new Object[] {UTF8String.fromString("x".repeat(300))})});
            w.write(row);
            w.write(row);
            w.write(row);
            assertFalse(w.isFull(), "900 bytes");
            w.write(row);
            assertTrue(w.isFull(), "1200 bytes");
            assertEquals(4, w.finishBatch().getRowCount());
            w.reset();
            GenericInternalRow small = new GenericInternalRow(new Object[] {2,
                new GenericInternalRow(new Object[] {UTF8String.fromString("y")})});
            for (int i = 0; i < 100; i++) {
                assertFalse(w.isFull());
                w.write(small);
            }
            assertTrue(w.isFull());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.write(small));
            assertTrue(e.getMessage().contains("100 rows"), e.getMessage());
            // A refused extra row does not poison: the batch is intact.
            VectorSchemaRoot root = w.finishBatch();
            assertEquals(100, root.getRowCount());
            assertEquals("y", TestRows.asSpark(root).getRow(99).getStruct(1, 1).getUTF8String(0).toString());
        }
    }

    @Test
    void aDecimalOutsideItsPrecisionPoisonsNamingTheColumnAndRow() {
        StructType schema = new StructType().add("id", DataTypes.LongType)
                .add("s", new StructType().add("name", DataTypes.StringType).add("d", DataTypes.createDecimalType(5, 2)))
                .add("tail", DataTypes.StringType);
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 100)) {
            for (int i = 0; i < 3; i++) {
                w.write(new GenericInternalRow(new Object[] {(long) i, new GenericInternalRow(new Object[] {
                    UTF8String.fromString("n"), Decimal.apply(new BigDecimal("123.45"))}), UTF8String.fromString("t")}));
            }
            GenericInternalRow bad = new GenericInternalRow(new Object[] {3L, new GenericInternalRow(new Object[] {
                UTF8String.fromString("n"), Decimal.apply(new BigDecimal("1234.56"))}), UTF8String.fromString("t")});
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.write(bad));
            assertTrue(e.getMessage().contains("row 3") && e.getMessage().contains("'s.d'")
                    && e.getMessage().contains("1234.56") && e.getMessage().contains("decimal(5, 2)"), e.getMessage());
            assertPoisoned(w, e);
        }
    }

    private static void assertPoisoned(ArrowRowWriter w, RuntimeException first) {
        GenericInternalRow any = new GenericInternalRow(3);
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> w.write(any));
        assertTrue(again.getMessage().contains(first.getMessage()), again.getMessage());
        assertSame(first, again.getCause());
        IllegalStateException finish = assertThrows(IllegalStateException.class, w::finishBatch);
        assertTrue(finish.getMessage().contains(first.getMessage()), finish.getMessage());
        assertThrows(IllegalStateException.class, w::reset);
    }

    @Test
    void decimalsAreRescaledExactlyOrRefused() {
        StructType schema = new StructType().add("c", DataTypes.createDecimalType(10, 3))
                .add("w", DataTypes.createDecimalType(30, 3));
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 10)) {
            // 1.5 at scale 1 is 1.500 at scale 3: written exactly.
            w.write(new GenericInternalRow(new Object[] {Decimal.apply(new BigDecimal("1.5")),
                Decimal.apply(new BigDecimal("-2.5"))}));
            InternalRow got = TestRows.asSpark(w.finishBatch()).getRow(0);
            assertEquals(new BigDecimal("1.500"), got.getDecimal(0, 10, 3).toJavaBigDecimal());
            assertEquals(new BigDecimal("-2.500"), got.getDecimal(1, 30, 3).toJavaBigDecimal());
            w.reset();
            // 1.2345 would need rounding to scale 3: refused.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.write(
                    new GenericInternalRow(new Object[] {Decimal.apply(new BigDecimal("1.2345")), null})));
            assertTrue(e.getMessage().contains("'c'") && e.getMessage().contains("without rounding"), e.getMessage());
        }
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 10)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.write(
                    new GenericInternalRow(new Object[] {null, Decimal.apply(new BigDecimal("1" + "0".repeat(27)))})));
            assertTrue(e.getMessage().contains("'w'") && e.getMessage().contains("decimal(30, 3)"), e.getMessage());
        }
    }

    @Test
    void wideDecimalsFromUnsafeRowsAreCheckedAgainstThePrecision() {
        // An unsafe row of decimal(38, 0) read as decimal(20, 0): the same
        // bytes, so the writer's own check of the precision is what stands
        // between a too-large value and the file.
        StructType wide = new StructType().add("d", DataTypes.createDecimalType(38, 0));
        StructType narrow = new StructType().add("d", DataTypes.createDecimalType(20, 0));
        UnsafeProjection p = UnsafeProjection.create(wide);
        BigDecimal max = new BigDecimal("99999999999999999999");
        try (ArrowRowWriter w = new ArrowRowWriter(narrow, allocator, 10)) {
            for (BigDecimal ok : new BigDecimal[] {max, max.negate(), BigDecimal.ZERO, new BigDecimal("-1")}) {
                w.write(p.apply(new GenericInternalRow(new Object[] {Decimal.apply(ok)})));
            }
            InternalRow back = TestRows.asSpark(w.finishBatch()).getRow(1);
            assertEquals(max.negate(), back.getDecimal(0, 20, 0).toJavaBigDecimal());
            w.reset();
            BigDecimal over = max.add(BigDecimal.ONE).negate();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> w.write(p.apply(new GenericInternalRow(new Object[] {Decimal.apply(over)}))));
            assertTrue(e.getMessage().contains(over.toPlainString()) && e.getMessage().contains("decimal(20, 0)"),
                    e.getMessage());
        }
    }

    @Test
    void aNullInANonNullableFieldPoisons() {
        StructType schema = new StructType().add("a", DataTypes.LongType, false)
                .add("l", DataTypes.createArrayType(DataTypes.IntegerType, false));
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 10)) {
            w.write(new GenericInternalRow(new Object[] {1L, new GenericArrayData(new Object[] {1, 2})}));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.write(
                    new GenericInternalRow(new Object[] {2L, new GenericArrayData(new Object[] {1, null})})));
            assertTrue(e.getMessage().contains("'l.element'") && e.getMessage().contains("row 1")
                    && e.getMessage().contains("non-nullable"), e.getMessage());
            assertPoisoned(w, e);
        }
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 10)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> w.write(new GenericInternalRow(new Object[] {null, null})));
            assertTrue(e.getMessage().contains("'a'"), e.getMessage());
        }
    }

    @Test
    void aValueTheRowCannotGivePoisonsNamingTheNestedColumn() {
        StructType schema = new StructType().add("id", DataTypes.LongType)
                .add("m", DataTypes.createMapType(DataTypes.StringType,
                        new StructType().add("s", DataTypes.StringType)));
        try (ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 10)) {
            // A java.lang.String where Spark keeps a UTF8String.
            GenericInternalRow bad = new GenericInternalRow(new Object[] {1L,
                new org.apache.spark.sql.catalyst.util.ArrayBasedMapData(
                        new GenericArrayData(new Object[] {UTF8String.fromString("k")}),
                        new GenericArrayData(new Object[] {new GenericInternalRow(new Object[] {"not utf8"})}))});
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> w.write(bad));
            assertTrue(e.getMessage().contains("'m.value.s'") && e.getMessage().contains("row 0"), e.getMessage());
            assertTrue(e.getCause() instanceof ClassCastException, String.valueOf(e.getCause()));
            assertPoisoned(w, e);
        }
    }

    @Test
    void anAllocatorRefusingToGrowPoisonsAndCloseStillReleasesEverything() {
        StructType schema = new StructType().add("s", DataTypes.StringType).add("l", DataTypes.LongType);
        try (BufferAllocator limited = allocator.newChildAllocator("limited", 0, 64 * 1024)) {
            ArrowRowWriter w = new ArrowRowWriter(schema, limited, 100_000);
            GenericInternalRow row = new GenericInternalRow(new Object[] {UTF8String.fromString("z".repeat(1000)), 7L});
            RuntimeException e = assertThrows(RuntimeException.class, () -> {
                for (int i = 0; i < 1000; i++) {
                    w.write(row);
                }
            });
            assertTrue(e instanceof OutOfMemoryException, e.toString());
            assertTrue(e.getMessage().contains("'s'"), e.getMessage());
            assertPoisoned(w, e);
            w.close();
            w.close();
            assertEquals(0, limited.getAllocatedMemory());
        }
    }

    @Test
    void stateErrorsAndIdempotentClose() {
        StructType schema = new StructType().add("a", DataTypes.IntegerType);
        ArrowRowWriter w = new ArrowRowWriter(schema, allocator, 10);
        w.write(new GenericInternalRow(new Object[] {1}));
        w.finishBatch();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> w.write(new GenericInternalRow(new Object[] {2})));
        assertTrue(e.getMessage().contains("reset()"), e.getMessage());
        assertThrows(IllegalStateException.class, w::finishBatch);
        w.reset();
        w.write(new GenericInternalRow(new Object[] {3}));
        assertEquals(3, TestRows.asSpark(w.finishBatch()).getRow(0).getInt(0));
        w.close();
        w.close();
        assertEquals(0, w.allocatedBytes());
        assertThrows(IllegalStateException.class, () -> w.write(new GenericInternalRow(new Object[] {4})));
        assertThrows(IllegalStateException.class, w::finishBatch);
        assertThrows(IllegalStateException.class, w::reset);
        assertThrows(IllegalArgumentException.class, () -> new ArrowRowWriter(schema, allocator, 0));
    }

    @Test
    void anEmptyBatchAndAnEmptySchema() {
        try (ArrowRowWriter w = new ArrowRowWriter(TestRows.everyType(), allocator, 10)) {
            VectorSchemaRoot root = w.finishBatch();
            assertEquals(0, root.getRowCount());
            for (FieldVector v : root.getFieldVectors()) {
                assertEquals(0, v.getValueCount());
            }
        }
        try (ArrowRowWriter w = new ArrowRowWriter(new StructType(), allocator, 10)) {
            w.write(new GenericInternalRow(0));
            w.write(new GenericInternalRow(0));
            assertEquals(2, w.finishBatch().getRowCount());
        }
    }

    @Test
    void arrowSchemaMapsEveryTypeAndRefusesOthersNamingThePath() {
        Schema s = ArrowRowWriter.arrowSchema(TestRows.everyType());
        Field ts = s.findField("ts");
        assertEquals(new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, "UTC"), ts.getType());
        assertEquals(new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.MICROSECOND, null),
                s.findField("ntz").getType());
        assertEquals("element", s.findField("arr").getChildren().get(0).getName());
        Field entries = s.findField("m").getChildren().get(0);
        assertEquals("entries", entries.getName());
        assertFalse(entries.isNullable());
        assertEquals("key", entries.getChildren().get(0).getName());
        assertFalse(entries.getChildren().get(0).isNullable());
        assertEquals("value", entries.getChildren().get(1).getName());
        assertFalse(s.findField("nn_i64").isNullable());
        assertFalse(s.findField("arr_nn").getChildren().get(0).isNullable());
        // The read path maps it back to the very Spark schema, nullability included.
        assertEquals(TestRows.everyType(), io.quiver.spark.read.SparkSchemaConverter.convert(s, "x.qvr"));
        assertEquals(ArrowType.Utf8.INSTANCE, ArrowRowWriter.arrowSchema(new StructType()
                .add("c", DataTypes.createCharType(3)).add("v", DataTypes.createVarcharType(9)))
                .findField("v").getType());

        StructType bad = new StructType().add("ok", DataTypes.LongType)
                .add("s", new StructType().add("l", DataTypes.createArrayType(DataTypes.CalendarIntervalType)));
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> ArrowRowWriter.arrowSchema(bad));
        assertTrue(e.getMessage().contains("'s.l.element'") && e.getMessage().contains("INTERVAL"), e.getMessage());
        assertThrows(UnsupportedOperationException.class, () -> new ArrowRowWriter(bad, allocator, 10));
    }
}
