package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.FileIdentity;
import io.quiver.spark.memory.TaskMemory;

import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files that changed, vanished or rotted between planning and reading: each
 * fails the query as Spark's own file sources do (FAILED_READ_FILE, with
 * Quiver's message), or is skipped under ignoreMissingFiles /
 * ignoreCorruptFiles; the session goes on after every one.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class QuiverReadErrorsTest {
    @TempDir static Path dir;
    static SparkSession spark;
    static final int ROWS = 5000;
    static final StructType DATA = new StructType().add("id", DataTypes.LongType, false).add("s", DataTypes.StringType)
            .add("dec", DataTypes.createDecimalType(38, 2));
    static String good;
    static FileIdentity goodId;

    @BeforeAll
    static void start() {
        Path p = dir.resolve("good.qvr");
        goodId = ReadTestFiles.writeTypes(p, 0, ROWS, 1024);
        good = p.toString();
        spark = SparkTestSession.startUtc("QuiverReadErrorsTest", "64m");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    static FileSlice whole(String path, FileIdentity id) {
        return new FileSlice(path, id, 0, 5, ROWS, 0, new GenericInternalRow(0));
    }

    /** The good file, then `bad`, then the good file again, in one partition; and the good file in another. */
    static Dataset<Row> read(FileSlice bad, boolean ignoreMissing, boolean ignoreCorrupt) {
        ReadConfig c = ReadTestFiles.withIgnore(
                ReadTestFiles.config(DATA, new StructType(), List.of("id", "s", "dec"), null, 0), ignoreMissing,
                ignoreCorrupt);
        List<QuiverInputPartition> ps = List.of(
                new QuiverInputPartition(0, List.of(whole(good, goodId), bad, whole(good, goodId))),
                new QuiverInputPartition(1, List.of(whole(good, goodId))));
        return spark.read().format(TestSource.class.getName()).option("id", TestSource.register(c, ps)).load();
    }

    static String trace(Throwable e) {
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    /** The session still reads after a failure. */
    static void sessionGoesOn() {
        assertEquals(4 * ROWS, read(whole(good, goodId), false, false).count());
        assertEquals(0, TaskMemory.liveCount());
    }

    @Test
    void aMissingFile() {
        FileSlice gone = whole(dir.resolve("gone.qvr").toString(), goodId);
        Exception e = assertThrows(Exception.class, () -> read(gone, false, false).count());
        String t = trace(e);
        assertTrue(t.contains("FAILED_READ_FILE.FILE_NOT_EXIST"), t);
        assertTrue(t.contains("gone.qvr"), t);
        assertTrue(t.contains("java.io.FileNotFoundException"), t);
        sessionGoesOn();
        // Skipped: the good file three times.
        assertEquals(3 * ROWS, read(gone, true, false).count());
        // ignoreCorruptFiles does not skip a missing file.
        assertThrows(Exception.class, () -> read(gone, false, true).count());
        sessionGoesOn();
    }

    @Test
    void aFileReplacedAfterPlanning() throws Exception {
        Path p = dir.resolve("replaced.qvr");
        FileIdentity planned = ReadTestFiles.writeTypes(p, 0, ROWS, 1024);
        ReadTestFiles.writeTypes(p, 100, ROWS, 1024); // same size class, other contents
        FileSlice s = whole(p.toString(), planned);
        Exception e = assertThrows(Exception.class, () -> read(s, false, false).count());
        String t = trace(e);
        assertTrue(t.contains("FAILED_READ_FILE"), t);
        assertTrue(t.contains("QuiverFileChangedException"), t);
        assertTrue(t.contains("replaced.qvr"), t);
        sessionGoesOn();
        assertEquals(3 * ROWS, read(s, false, true).count());
        sessionGoesOn();
    }

    @Test
    void aCorruptFile() throws Exception {
        Path p = dir.resolve("corrupt.qvr");
        Files.copy(Path.of(good), p);
        long size = Files.size(p);
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
            // Bytes inside the column data, away from the header and the footer.
            for (long at = size / 2; at < size / 2 + 64; at++) {
                f.seek(at);
                int b = f.read();
                f.seek(at);
                f.write(b ^ 0x5A);
            }
        }
        FileSlice s = whole(p.toString(), goodId);
        Exception e = assertThrows(Exception.class, () -> read(s, false, false).count());
        String t = trace(e);
        System.out.println("corrupt file error: " + t.lines().filter(l -> l.contains("FAILED_READ_FILE")).findFirst()
                .orElse(t.lines().findFirst().orElse("")));
        assertTrue(t.contains("FAILED_READ_FILE.NO_HINT"), t);
        assertTrue(t.contains("QuiverCorruptException"), t);
        assertTrue(t.contains("row group"), t);
        assertTrue(t.contains("corrupt.qvr"), t);
        sessionGoesOn();
        // Skipped from the corrupt row group on: all of the good file's rows,
        // and of the corrupt one only what came before it.
        long n = read(s, false, true).count();
        assertTrue(n >= 3 * ROWS && n < 4 * ROWS, "rows " + n);
        sessionGoesOn();
    }
}
