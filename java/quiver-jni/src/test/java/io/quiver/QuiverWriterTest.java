package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.impl.UnionMapWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** QuiverWriter: publishing, and every failure path leaving nothing behind. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class QuiverWriterTest {
    @TempDir Path dir;
    BufferAllocator a;

    static final Schema INTS = new Schema(List.of(TestTables.field("x", new ArrowType.Int(32, true), true)));

    @BeforeEach
    void open() {
        a = new RootAllocator();
    }

    @AfterEach
    void noLeak() {
        a.close();
    }

    VectorSchemaRoot ints(int n) {
        VectorSchemaRoot r = VectorSchemaRoot.create(INTS, a);
        IntVector x = (IntVector) r.getVector(0);
        x.allocateNew(n);
        for (int i = 0; i < n; i++) {
            if (i % 3 == 0) x.setNull(i);
            else x.set(i, i);
        }
        r.setRowCount(n);
        return r;
    }

    List<String> entries() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void publishesOnlyOnFinish() throws Exception {
        Path p = dir.resolve("t.qvr");
        try (VectorSchemaRoot r = ints(100);
                QuiverWriter w = QuiverWriter.open(a, p, INTS, WriterOptions.builder().metadata("k", "v").build())) {
            w.write(r);
            w.write(r);
            assertFalse(Files.exists(p));
            WriteResult res = w.finish();
            assertEquals(200, res.rows());
            assertEquals(Files.size(p), res.bytes());
            assertEquals(res, w.finish());
        }
        assertEquals(List.of("t.qvr"), entries());
        try (QuiverFile f = QuiverFile.open(p); QuiverScanReader s = f.scan(a, ScanOptions.defaults())) {
            int rows = 0, nulls = 0;
            while (s.loadNextBatch()) {
                rows += s.getVectorSchemaRoot().getRowCount();
                nulls += s.getVectorSchemaRoot().getVector(0).getNullCount();
            }
            assertEquals(200, rows);
            assertEquals(68, nulls);
        }
    }

    @Test
    void schemaMismatchNamesTheFieldAndPoisonsTheWriter() throws Exception {
        Path p = dir.resolve("m.qvr");
        Schema other = new Schema(List.of(TestTables.field("x", new ArrowType.Int(64, true), true)));
        try (VectorSchemaRoot good = ints(10);
                VectorSchemaRoot bad = VectorSchemaRoot.create(other, a);
                QuiverWriter w = QuiverWriter.open(a, p, INTS, WriterOptions.defaults())) {
            w.write(good);
            bad.setRowCount(0);
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class, () -> w.write(bad));
            assertTrue(e.getMessage().contains("'x'") && e.getMessage().contains("Int(64"), e.getMessage());
            QuiverInvalidArgumentException later = assertThrows(QuiverInvalidArgumentException.class, () -> w.write(good));
            assertTrue(later.getMessage().contains("failed earlier") && later.getMessage().contains("'x'"), later.getMessage());
            assertThrows(QuiverInvalidArgumentException.class, w::finish);
        }
        assertEquals(List.of(), entries()); // no file, no temporary file
    }

    /**
     * A root whose buffers belong to another root allocator cannot be
     * exported through the writer's allocator; Arrow's IllegalArgumentException
     * escaped raw, naming neither the writer nor its file. It is now the
     * writer's QuiverInvalidArgumentException, with Arrow's as the cause.
     */
    @Test
    void aRootOfAnotherRootAllocatorIsAQuiverErrorNamingTheFile() throws Exception {
        Path p = dir.resolve("other-root.qvr");
        try (BufferAllocator other = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(INTS, other);
                QuiverWriter w = QuiverWriter.open(a, p, INTS, WriterOptions.defaults())) {
            ((IntVector) root.getVector(0)).allocateNew(4);
            ((IntVector) root.getVector(0)).set(0, 1);
            root.setRowCount(4);
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class, () -> w.write(root));
            assertTrue(e.getMessage().contains("write '" + p + "': exporting the batch failed"), e.getMessage());
            assertTrue(e.getCause() instanceof IllegalArgumentException, String.valueOf(e.getCause()));
            assertThrows(QuiverInvalidArgumentException.class, w::finish); // the writer is failed
        }
        assertEquals(List.of(), entries());
    }

    /**
     * A root whose string offsets point past its data buffer: the C Data
     * interface carries no buffer sizes, so the native writer copied what
     * the offsets claimed and the JVM died (SIGSEGV in memcpy under
     * nativeWrite). Java knows the capacities and refuses the root first.
     */
    @Test
    void aRootWhoseOffsetsPointPastItsDataIsRefusedNotACrash() throws Exception {
        Schema strings = new Schema(List.of(TestTables.field("s", ArrowType.Utf8.INSTANCE, true)));
        Path p = dir.resolve("offsets.qvr");
        try (VectorSchemaRoot root = VectorSchemaRoot.create(strings, a);
                QuiverWriter w = QuiverWriter.open(a, p, strings, WriterOptions.defaults())) {
            VarCharVector s = (VarCharVector) root.getVector(0);
            s.allocateNew();
            for (int i = 0; i < 10; i++) s.setSafe(i, ("x" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            root.setRowCount(10);
            s.getOffsetBuffer().setInt(4L * 10, 1 << 30); // the end offset: 1 GiB into a small buffer
            QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class, () -> w.write(root));
            assertTrue(e.getMessage().contains("write '" + p + "': column 's'"), e.getMessage());
            assertThrows(QuiverInvalidArgumentException.class, w::finish); // the writer is failed
        }
        assertEquals(List.of(), entries());
    }

    @Test
    void aMapColumnIsWrittenAndReadBack() throws Exception {
        // Arrow Java 19's ValueVector.validate() refuses every MapVector (its
        // type check sees a list); the writer's check must not.
        Path p = dir.resolve("map.qvr");
        try (MapVector m = MapVector.empty("m", a, false)) {
            UnionMapWriter w = m.getWriter();
            for (int row = 0; row < 3; row++) {
                w.setPosition(row);
                w.startMap();
                for (int k = 0; k < row; k++) {
                    w.startEntry();
                    w.key().integer().writeInt(k);
                    w.value().bigInt().writeBigInt(10L * row + k);
                    w.endEntry();
                }
                w.endMap();
            }
            m.setValueCount(3);
            try (VectorSchemaRoot r = new VectorSchemaRoot(List.of(m.getField()), List.of(m), 3);
                    QuiverWriter qw = QuiverWriter.open(a, p, r.getSchema(), WriterOptions.defaults())) {
                qw.write(r);
                assertEquals(3, qw.finish().rows());
            }
        }
        try (QuiverFile f = QuiverFile.open(p); QuiverScanReader s = f.scan(a, ScanOptions.defaults())) {
            assertTrue(s.loadNextBatch());
            MapVector m = (MapVector) s.getVectorSchemaRoot().getVector("m");
            assertEquals(3, m.getValueCount());
            assertEquals("[{\"key\":0,\"value\":20},{\"key\":1,\"value\":21}]", m.getObject(2).toString());
            assertEquals("[]", m.getObject(0).toString());
        }
    }

    @Test
    void nestedFieldMismatchIsNamedByPath() {
        Schema w1 = new Schema(List.of(TestTables.field("st", ArrowType.Struct.INSTANCE, true,
                TestTables.field("a", ArrowType.Utf8.INSTANCE, true))));
        Schema w2 = new Schema(List.of(TestTables.field("st", ArrowType.Struct.INSTANCE, true,
                TestTables.field("a", ArrowType.Utf8.INSTANCE, false))));
        String d = QuiverWriter.difference(w1.getFields(), w2.getFields(), "");
        assertEquals("field 'st.a' is not nullable, the writer's is nullable", d);
    }

    @Test
    void finishAfterAbortAndWriteAfterClose() throws Exception {
        Path p = dir.resolve("a.qvr");
        try (VectorSchemaRoot r = ints(10)) {
            QuiverWriter w = QuiverWriter.open(a, p, INTS, WriterOptions.defaults());
            w.write(r);
            w.abort();
            w.abort();
            assertThrows(IllegalStateException.class, w::finish);
            assertThrows(IllegalStateException.class, () -> w.write(r));
            w.close();
            w.close();
            assertThrows(IllegalStateException.class, () -> w.write(r));
        }
        assertEquals(List.of(), entries());
    }

    @Test
    void randomAccessWritesTheSameRowsAndIsRefusedWithCompact() throws Exception {
        Path p = dir.resolve("ra.qvr");
        try (VectorSchemaRoot r = ints(5000);
                QuiverWriter w = QuiverWriter.open(a, p, INTS, WriterOptions.builder().randomAccess(true).build())) {
            w.write(r);
            assertEquals(5000, w.finish().rows());
        }
        try (QuiverFile f = QuiverFile.open(p); QuiverScanReader s = f.scan(a, ScanOptions.defaults())) {
            int rows = 0;
            while (s.loadNextBatch()) rows += s.getVectorSchemaRoot().getRowCount();
            assertEquals(5000, rows);
        }
        Path q = dir.resolve("both.qvr");
        QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class,
                () -> QuiverWriter.open(a, q, INTS, WriterOptions.builder().compact(true).randomAccess(true).build()));
        assertTrue(e.getMessage().contains("compact and random_access exclude each other"), e.getMessage());
        assertTrue(e.getMessage().contains("both.qvr"), e.getMessage());
        assertEquals(List.of("ra.qvr"), entries());
    }

    @Test
    void missingDirectoryIsNotFoundNamingIt() {
        Path p = dir.resolve("no-such-dir").resolve("t.qvr");
        QuiverNotFoundException e = assertThrows(QuiverNotFoundException.class,
                () -> QuiverWriter.open(a, p, INTS, WriterOptions.defaults()));
        assertTrue(e.getMessage().contains("no-such-dir"), e.getMessage());
    }

    @Test
    void destinationThatIsADirectoryIsRefused() throws Exception {
        Path p = Files.createDirectory(dir.resolve("d.qvr"));
        QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class,
                () -> QuiverWriter.open(a, p, INTS, WriterOptions.defaults()));
        assertTrue(e.getMessage().contains("d.qvr"), e.getMessage());
        assertTrue(Files.isDirectory(p));
    }

    @Test
    void memoryLimitFailsTheWriteAndCloseCleansUp() throws Exception {
        Path p = dir.resolve("big.qvr");
        try (VectorSchemaRoot r = ints(200_000);
                QuiverWriter w = QuiverWriter.open(a, p, INTS,
                        WriterOptions.builder().memoryLimit(64 * 1024).rowGroupRows(1 << 20).build())) {
            QuiverOutOfMemoryException e = assertThrows(QuiverOutOfMemoryException.class, () -> {
                for (int i = 0; i < 8; i++) w.write(r);
            });
            assertTrue(e.getMessage().length() > 0);
            assertThrows(QuiverOutOfMemoryException.class, w::finish);
        }
        assertEquals(List.of(), entries());
    }

    @Test
    void aCallersPoolIsChargedAndOutlivedByTheWriter() throws Exception {
        Path p = dir.resolve("pooled.qvr");
        io.quiver.memory.NativePool pool = io.quiver.memory.NativePool.create("task", 0);
        try (VectorSchemaRoot r = ints(50_000);
                QuiverWriter w = QuiverWriter.open(a, p, INTS, WriterOptions.builder().pool(pool).build())) {
            w.write(r);
            long charged = pool.stats().reserved();
            assertTrue(charged >= 50_000 * 4, "the writer's buffering is charged to the pool: " + charged);
            pool.close(); // the writer holds its own reference to the native pool
            w.write(r);
            assertEquals(100_000, w.finish().rows());
        }
        assertEquals(List.of("pooled.qvr"), entries());
        io.quiver.memory.NativePool small = io.quiver.memory.NativePool.create("small", 64 * 1024);
        try (VectorSchemaRoot r = ints(200_000);
                QuiverWriter w = QuiverWriter.open(a, dir.resolve("over.qvr"), INTS,
                        WriterOptions.builder().pool(small).rowGroupRows(1 << 20).build())) {
            QuiverOutOfMemoryException e = assertThrows(QuiverOutOfMemoryException.class, () -> w.write(r));
            assertTrue(e.getMessage().contains("small"), e.getMessage());
        } finally {
            small.close();
        }
    }

    @Test
    void cleanerFreesAnUnclosedWriter() throws Exception {
        long before = QuiverWriter.liveCount();
        openAndDrop(dir.resolve("lost.qvr"));
        assertEquals(before + 1, QuiverWriter.liveCount());
        while (QuiverWriter.liveCount() != before) { // the class deadline bounds this
            System.gc();
            Thread.sleep(20);
        }
        assertEquals(List.of(), entries()); // aborted: the temporary file is gone
    }

    private void openAndDrop(Path p) throws Exception {
        try (VectorSchemaRoot r = ints(10)) {
            QuiverWriter.open(a, p, INTS, WriterOptions.defaults()).write(r);
        }
    }
}
