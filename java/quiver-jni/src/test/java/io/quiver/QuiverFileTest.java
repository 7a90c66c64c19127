package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampNanoVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** QuiverFile over a lineitem file written by qv gen, and every call's error path. */
@Timeout(300)
class QuiverFileTest {
    static final int ROW_GROUP_ROWS = 1000;

    @TempDir
    static Path dir;
    static Path lineitem;
    static BufferAllocator allocator;

    @BeforeAll
    static void setUp() throws Exception {
        lineitem = Fixtures.lineitem(dir.resolve("lineitem.qvr"), 0.001, ROW_GROUP_ROWS);
        allocator = new RootAllocator();
    }

    @AfterAll
    static void tearDown() {
        allocator.close(); // fails when a test leaked Arrow memory
    }

    static <T extends QuiverException> T fails(Class<T> kind, Executable call) {
        T e = assertThrows(kind, call);
        assertNotNull(e.getMessage());
        assertEquals(kind, QuiverException.create(e.kind(), 0, "", null).getClass(), "kind() matches the class");
        return e;
    }

    @Test
    void readsTheFilesFacts() throws Exception {
        try (QuiverFile f = QuiverFile.open(lineitem)) {
            assertEquals(lineitem.toString(), f.path());
            long rows = f.numRows();
            assertTrue(rows > 5000, "rows: " + rows);
            assertEquals((rows + ROW_GROUP_ROWS - 1) / ROW_GROUP_ROWS, f.numRowGroups());

            Schema schema = f.schema();
            assertEquals(16, schema.getFields().size(), schema.toString());
            Field orderkey = schema.findField("l_orderkey");
            assertEquals(new ArrowType.Int(64, true), orderkey.getType());
            assertTrue(schema.findField("l_comment").getType() instanceof ArrowType.Utf8);

            FileIdentity id = f.identity();
            assertEquals(Files.size(lineitem), id.size());
            assertEquals(id, f.identity());
        }
    }

    @Test
    void splitsCoverEveryRowOnceAndTravel() throws Exception {
        try (QuiverFile f = QuiverFile.open(lineitem.toString(), FileOptions.defaults().mmap(true))) {
            long fileBytes = Files.size(lineitem);
            List<Split> splits = f.planSplits(fileBytes / 4);
            assertTrue(splits.size() >= 2 && splits.size() <= f.numRowGroups(), splits.toString());
            long row = 0;
            long group = 0;
            for (Split s : splits) {
                assertEquals(lineitem.toString(), s.path());
                assertEquals(f.identity(), s.identity());
                assertEquals(group, s.rowGroupBegin());
                assertEquals(row, s.rowBegin());
                assertTrue(s.rowGroupEnd() > s.rowGroupBegin() && s.rows() > 0 && s.bytes() > 0, s.toString());
                group = s.rowGroupEnd();
                row = s.rowEnd();
            }
            assertEquals(f.numRowGroups(), group);
            assertEquals(f.numRows(), row);
            assertEquals(1, f.planSplits(0).size(), "the default target (128 MiB) holds this small file whole");

            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(splits.get(1));
            }
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
                assertEquals(splits.get(1), in.readObject());
            }
        }
    }

    @Test
    void statisticsAreArrowData() {
        try (QuiverFile f = QuiverFile.open(lineitem); FileStatistics all = f.statistics(allocator)) {
            assertEquals(1 + 16, all.root().getRowCount(), "a table row and one per column");
            Map<String, Object> table = all.of(-1);
            assertEquals(f.numRows(), table.get("ARROW:row_count:exact"));
            Map<String, Object> orderkey = all.of(0); // l_orderkey
            assertEquals(0L, orderkey.get("ARROW:null_count:exact"));
            long min = (Long) orderkey.get("ARROW:min_value:exact");
            long max = (Long) orderkey.get("ARROW:max_value:exact");
            assertTrue(min >= 1 && min <= max, orderkey.toString());

            long rows = 0;
            for (long g = 0; g < f.numRowGroups(); g++) {
                try (FileStatistics s = f.statistics(allocator, g)) {
                    rows += (Long) s.of(-1).get("ARROW:row_count:exact");
                    long gmin = (Long) s.of(0).get("ARROW:min_value:exact");
                    assertTrue(gmin >= min, "row group " + g);
                }
            }
            assertEquals(f.numRows(), rows);
        }
        assertEquals(0, allocator.getAllocatedMemory());
    }

    /**
     * Statistics of a file of many types, two timestamp kinds and two decimal
     * precisions among them: the union's members have distinct names (Arrow
     * Java merges members of one name, and the import failed with "ArrowArray
     * struct has 9 children (expected 7)").
     */
    @Test
    void statisticsOfEveryKindOfColumn() throws Exception {
        Path p = dir.resolve("kinds.qvr");
        TestTables.writeMixed(allocator, p, 3000, 1000, WriterOptions.builder().rowGroupRows(1000).build());
        Path q = dir.resolve("units.qvr");
        Schema schema = new Schema(List.of(
                TestTables.field("us", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC"), true),
                TestTables.field("ns", new ArrowType.Timestamp(TimeUnit.NANOSECOND, null), true),
                TestTables.field("d1", new ArrowType.Decimal(10, 2, 128), true),
                TestTables.field("d2", new ArrowType.Decimal(38, 10, 128), true)));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
                QuiverWriter w = QuiverWriter.open(allocator, q, schema, WriterOptions.defaults())) {
            root.allocateNew();
            for (int i = 0; i < 10; i++) {
                ((TimeStampMicroTZVector) root.getVector(0)).setSafe(i, 1000L * i);
                ((TimeStampNanoVector) root.getVector(1)).setSafe(i, 7L * i);
                ((DecimalVector) root.getVector(2)).setSafe(i, java.math.BigDecimal.valueOf(i, 2));
                ((DecimalVector) root.getVector(3)).setSafe(i, java.math.BigDecimal.valueOf(i, 10));
            }
            root.setRowCount(10);
            w.write(root);
            w.finish();
        }
        try (QuiverFile f = QuiverFile.open(p); FileStatistics all = f.statistics(allocator)) {
            assertEquals(3000L, all.of(-1).get("ARROW:row_count:exact"));
            assertEquals(0L, all.of(0).get("ARROW:min_value:exact"));
        }
        try (QuiverFile f = QuiverFile.open(q); FileStatistics all = f.statistics(allocator)) {
            assertEquals(java.time.LocalDateTime.of(1970, 1, 1, 0, 0, 0, 63), all.of(1).get("ARROW:max_value:exact"));
            assertEquals(new java.math.BigDecimal("0.0000000009"), all.of(3).get("ARROW:max_value:exact"));
            assertEquals(9000L, all.of(0).get("ARROW:max_value:exact"));
            assertEquals(0L, all.of(3).get("ARROW:null_count:exact"));
        }
        assertEquals(0, allocator.getAllocatedMemory());
    }

    @Test
    void aMissingFileIsNotFoundNamingThePath() {
        Path missing = dir.resolve("no-such-file.qvr");
        QuiverNotFoundException e = fails(QuiverNotFoundException.class, () -> QuiverFile.open(missing));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        assertEquals(ErrorKind.NOT_FOUND, e.kind());
        assertEquals(2, e.errno()); // ENOENT
    }

    @Test
    void aFileThatIsNotQuiverIsCorrupt() throws Exception {
        Path text = Files.writeString(dir.resolve("notes.qvr"), "this is a text file, not a Quiver file\n".repeat(20));
        QuiverCorruptException e = fails(QuiverCorruptException.class, () -> QuiverFile.open(text));
        assertTrue(e.getMessage().contains(text.toString()) && e.getMessage().contains("not a Quiver file"),
                e.getMessage());

        Path tiny = Files.write(dir.resolve("tiny.qvr"), new byte[] {1, 2, 3});
        e = fails(QuiverCorruptException.class, () -> QuiverFile.open(tiny));
        assertTrue(e.getMessage().contains("too small"), e.getMessage());
    }

    @Test
    void aDamagedFooterIsCorrupt() throws Exception {
        byte[] bytes = Files.readAllBytes(lineitem);
        bytes[bytes.length - 32 - 40] ^= 0x5a; // inside the footer, before the 32-byte tail
        Path damaged = Files.write(dir.resolve("damaged.qvr"), bytes);
        QuiverCorruptException e = fails(QuiverCorruptException.class, () -> QuiverFile.open(damaged));
        assertTrue(e.getMessage().contains(damaged.toString()) && e.getMessage().contains("footer checksum mismatch"),
                e.getMessage());

        byte[] cut = java.util.Arrays.copyOf(Files.readAllBytes(lineitem), bytes.length / 2);
        Path truncated = Files.write(dir.resolve("truncated.qvr"), cut);
        e = fails(QuiverCorruptException.class, () -> QuiverFile.open(truncated));
        assertTrue(e.getMessage().contains(truncated.toString()), e.getMessage());
    }

    @Test
    void anotherIdentityIsAChangedFile() {
        FileIdentity id;
        try (QuiverFile f = QuiverFile.open(lineitem)) {
            id = f.identity();
        }
        // The same identity opens; another size or another footer does not.
        try (QuiverFile f = QuiverFile.open(lineitem.toString(), FileOptions.defaults().expect(id))) {
            assertEquals(id, f.identity());
        }
        for (FileIdentity other : List.of(new FileIdentity(id.size() + 1, id.footerChecksum()),
                new FileIdentity(id.size(), id.footerChecksum() ^ 1))) {
            QuiverFileChangedException e = fails(QuiverFileChangedException.class,
                    () -> QuiverFile.open(lineitem.toString(), FileOptions.defaults().expect(other)));
            assertTrue(e.getMessage().contains("changed since it was planned") && e.getMessage().contains(
                    lineitem.toString()), e.getMessage());
            assertEquals(ErrorKind.CHANGED, e.kind());
        }
    }

    @Test
    void badArgumentsAreInvalidArguments() {
        fails(QuiverInvalidArgumentException.class, () -> QuiverFile.open((String) null));
        fails(QuiverInvalidArgumentException.class, () -> QuiverFile.open((Path) null)); // was a bare NullPointerException
        fails(QuiverInvalidArgumentException.class, () -> QuiverFile.open((Path) null, FileOptions.defaults()));
        QuiverInvalidArgumentException nul = fails(QuiverInvalidArgumentException.class,
                () -> QuiverFile.open(dir + "/a\0b.qvr"));
        assertTrue(nul.getMessage().contains("NUL byte"), nul.getMessage());
        fails(QuiverInvalidArgumentException.class, () -> FileOptions.defaults().memoryLimit(-1));
        try (QuiverFile f = QuiverFile.open(lineitem)) {
            long groups = f.numRowGroups();
            QuiverInvalidArgumentException e = fails(QuiverInvalidArgumentException.class,
                    () -> f.statistics(allocator, groups));
            assertTrue(e.getMessage().contains(Long.toString(groups)), e.getMessage());
            fails(QuiverInvalidArgumentException.class, () -> f.statistics(allocator, -2));
            fails(QuiverInvalidArgumentException.class, () -> f.statistics(null));
            fails(QuiverInvalidArgumentException.class, () -> f.planSplits(-1));
        }
        assertEquals(0, allocator.getAllocatedMemory());
    }

    @Test
    void aTinyMemoryLimitIsOutOfMemory() {
        QuiverOutOfMemoryException e = fails(QuiverOutOfMemoryException.class,
                () -> QuiverFile.open(lineitem.toString(), FileOptions.defaults().memoryLimit(64)));
        assertEquals(ErrorKind.OUT_OF_MEMORY, e.kind());
    }

    @Test
    void aFileNameThatIsNotAscii() throws Exception {
        Path named = dir.resolve("données-π-日本語.qvr");
        Files.copy(lineitem, named, StandardCopyOption.REPLACE_EXISTING);
        try (QuiverFile f = QuiverFile.open(named)) {
            assertEquals(named.toString(), f.path());
            assertTrue(f.numRows() > 0);
            assertEquals(named.toString(), f.planSplits(0).get(0).path());
        }
        Path missing = dir.resolve("manquant-é-ß.qvr");
        QuiverNotFoundException e = fails(QuiverNotFoundException.class, () -> QuiverFile.open(missing));
        assertTrue(e.getMessage().contains(missing.toString()), "the message names the path in UTF-8: "
                + e.getMessage());
    }

    @Test
    void callsAfterCloseThrowAndCloseIsIdempotent() {
        QuiverFile f = QuiverFile.open(lineitem);
        f.close();
        f.close();
        assertTrue(f.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, f::numRows);
        assertTrue(e.getMessage().contains(lineitem.toString()), e.getMessage());
        assertThrows(IllegalStateException.class, f::schema);
        assertThrows(IllegalStateException.class, () -> f.statistics(allocator));
        assertThrows(IllegalStateException.class, () -> f.planSplits(0));
        assertThrows(IllegalStateException.class, f::identity);
        assertFalse(f.toString().isEmpty());
    }
    /**
     * A Java string with an unpaired surrogate has no UTF-8 form;
     * String.getBytes(UTF_8) turns it into '?', which named another file
     * ("x\uD800.qvr" opened "x?.qvr"). It is refused instead.
     */
    @Test
    void aPathWithAnUnpairedSurrogateIsRefusedNotOpenedAsAnotherFile() throws Exception {
        Path other = dir.resolve("surrogate?.qvr");
        Files.copy(lineitem, other, StandardCopyOption.REPLACE_EXISTING);
        String path = dir.resolve("surrogate").toString() + "\uD800.qvr";
        QuiverInvalidArgumentException e = assertThrows(QuiverInvalidArgumentException.class, () -> QuiverFile.open(path).close());
        assertTrue(e.getMessage().contains("unpaired surrogate (U+D800) at index " + (path.length() - 5)), e.getMessage());
        assertTrue(e.getMessage().contains("open: path"), e.getMessage());
        // A correct pair (U+1F600) is text like any other: not found, by its real name.
        QuiverNotFoundException nf = assertThrows(QuiverNotFoundException.class,
                () -> QuiverFile.open(dir.resolve("x\uD83D\uDE00.qvr").toString()).close());
        assertTrue(nf.getMessage().contains("x\uD83D\uDE00.qvr"), nf.getMessage());
    }
}
