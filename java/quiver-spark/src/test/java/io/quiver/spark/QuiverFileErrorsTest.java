package io.quiver.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.spark.read.ReadTestFiles;
import io.quiver.spark.read.SparkTestSession;

import java.io.FileNotFoundException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files that are corrupt, missing or replaced after planning fail the query
 * the way Spark's file sources do (the error names the file; a missing file is
 * a FileNotFoundException in the chain), are skipped under
 * spark.sql.files.ignoreCorruptFiles / ignoreMissingFiles, and the session
 * goes on working after every failure.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class QuiverFileErrorsTest {
    private static final int ROWS = 10_000;
    private static SparkSession spark;

    @TempDir
    Path tmp;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("quiver-file-errors", "64m");
    }

    @AfterEach
    void resetConf() {
        spark.conf().unset("spark.sql.files.ignoreCorruptFiles");
        spark.conf().unset("spark.sql.files.ignoreMissingFiles");
        assertSessionWorks();
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    /** Three files f0..f2 of ROWS rows each (c0 = row, c1 = 2 * row), one row group each. */
    private Path dataset(String name) {
        Path d = tmp.resolve(name);
        for (int i = 0; i < 3; i++) {
            ReadTestFiles.writeLongs(d.resolve("f" + i + ".qvr"), 2, ROWS, 16384);
        }
        return d;
    }

    /** A query after a failure still runs, on Quiver data too. */
    private void assertSessionWorks() {
        assertEquals(5L, spark.range(5).count());
        Path d = dataset("healthy-" + System.nanoTime());
        assertEquals(3L * ROWS, spark.read().format("quiver").load(d.toString()).count());
    }

    /** Every message in the chain of `t`, joined. */
    private static String messages(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c.getClass().getName()).append(": ").append(c.getMessage()).append('\n');
        }
        return sb.toString();
    }

    private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Overwrites 64 bytes a third into the file (column data, not the footer)
     * with 0x5A; the queries read both columns, whichever holds them.
     */
    private static void corrupt(Path f) throws Exception {
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(raf.length() / 3);
            byte[] junk = new byte[64];
            java.util.Arrays.fill(junk, (byte) 0x5A);
            raf.write(junk);
        }
    }

    @Test
    void corruptFileFailsNamingItAndIsSkippedWhenAsked() throws Exception {
        Path d = dataset("corrupt");
        corrupt(d.resolve("f1.qvr"));
        Dataset<Row> df = spark.read().format("quiver").load(d.toString());
        Exception e = assertThrows(Exception.class, () -> df.selectExpr("sum(c0)", "sum(c1)").collectAsList());
        String all = messages(e);
        assertTrue(all.contains("f1.qvr"), "the error names the file:\n" + all);

        spark.conf().set("spark.sql.files.ignoreCorruptFiles", "true");
        Row r = spark.read().format("quiver").load(d.toString()).selectExpr("count(*)", "sum(c0)", "sum(c1)").first();
        assertEquals(2L * ROWS, r.getLong(0), "rows of the two healthy files");
        assertEquals(2L * ((long) ROWS * (ROWS - 1) / 2), r.getLong(1));
        assertEquals(2L * ((long) ROWS * (ROWS - 1)), r.getLong(2));
    }

    @Test
    void fileMissingAfterPlanningFailsAsSparkDoesAndIsSkippedWhenAsked() throws Exception {
        Path d = dataset("missing");
        Dataset<Row> df = spark.read().format("quiver").load(d.toString());
        df.queryExecution().executedPlan(); // planned: the file list and the splits are fixed
        Files.delete(d.resolve("f2.qvr"));
        Exception e = assertThrows(Exception.class, () -> df.collectAsList());
        String all = messages(e);
        assertTrue(causedBy(e, FileNotFoundException.class), "a FileNotFoundException in the chain:\n" + all);
        assertTrue(all.contains("f2.qvr"), "the error names the file:\n" + all);

        Path d2 = dataset("missing-ignored");
        spark.conf().set("spark.sql.files.ignoreMissingFiles", "true");
        Dataset<Row> df2 = spark.read().format("quiver").load(d2.toString());
        df2.queryExecution().executedPlan();
        Files.delete(d2.resolve("f0.qvr"));
        assertEquals(2L * ROWS, df2.collectAsList().size());
    }

    @Test
    void fileReplacedAfterPlanningFails() throws Exception {
        Path d = dataset("replaced");
        Dataset<Row> df = spark.read().format("quiver").load(d.toString());
        df.queryExecution().executedPlan();
        // Another valid Quiver file under the same name (other rows, other size), moved in atomically.
        Path other = tmp.resolve("other.qvr");
        ReadTestFiles.writeLongs(other, 2, ROWS / 2, 16384);
        Files.move(other, d.resolve("f0.qvr"), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        Exception e = assertThrows(Exception.class, () -> df.collectAsList());
        String all = messages(e);
        assertTrue(all.contains("f0.qvr"), "the error names the file:\n" + all);
    }

    @Test
    void pathThatDoesNotExistFailsAtLoad() {
        Path nowhere = tmp.resolve("no-such-folder");
        AnalysisException e = assertThrows(AnalysisException.class,
                () -> spark.read().format("quiver").load(nowhere.toString()).collectAsList());
        assertTrue(e.getMessage().contains("no-such-folder"), e.getMessage());
    }

    @Test
    void notAQuiverFileFailsNamingIt() throws Exception {
        Path d = tmp.resolve("garbage");
        Files.createDirectories(d);
        Files.writeString(d.resolve("bad.qvr"), "this is not a Quiver file, only text that is long enough to look");
        Exception e = assertThrows(Exception.class, () -> spark.read().format("quiver").load(d.toString()).collectAsList());
        String all = messages(e);
        assertTrue(all.contains("bad.qvr"), "the error names the file:\n" + all);
    }
}
