package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.memory.PoolStats;
import io.quiver.spark.memory.TaskMemory;
import io.quiver.spark.read.SparkTestSession;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The task-side writers inside real Spark tasks (their memory is the task's
 * TaskMemory, whose balance is checked at task completion, and Spark's own
 * leak check is on): failures injected part-way through a row, at commit,
 * and in one child of a partitioned writer each leave no Arrow memory, no
 * native pool memory and no files; abort and close are idempotent; two
 * attempts of one partition publish only the committed one.
 */
@Timeout(300)
class QuiverDataWriterTest {
    private static final StructType SCHEMA = new StructType().add("id", DataTypes.LongType)
            .add("s", DataTypes.StringType).add("k", DataTypes.IntegerType);

    private static SparkSession spark;
    private static JavaSparkContext jsc;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.startUtc("QuiverDataWriterTest", "256m");
        jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    /** A scenario run inside one task: returns lines the test checks. */
    interface Scenario extends Serializable {
        List<String> run(QuiverDataWriterFactory factory, WriteLayout layout) throws Exception;
    }

    private static List<String> inTask(WriteLayout layout, boolean partitioned, Map<String, String> options,
            Scenario s) {
        QuiverDataWriterFactory f = new QuiverDataWriterFactory(layout, SCHEMA,
                partitioned ? new int[] {2} : new int[0], QuiverWriteOptions.parse(options), "UTC");
        return jsc.parallelize(List.of(0), 1).flatMap(i -> s.run(f, layout).iterator()).collect();
    }

    private static InternalRow row(long id, String s, int k) {
        return new GenericInternalRow(new Object[] {id, s == null ? null : UTF8String.fromString(s), k});
    }

    /** A row whose string column throws when read: the writer fails part-way through it. */
    private static InternalRow poisonedRow(long id, int k) {
        return new GenericInternalRow(new Object[] {id, UTF8String.fromString("x"), k}) {
            @Override
            public UTF8String getUTF8String(int ordinal) {
                throw new IllegalArgumentException("injected failure reading column " + ordinal);
            }
        };
    }

    /** What the task holds now: Arrow bytes of its write allocator and the native pool's bytes in use. */
    private static String held() {
        TaskMemory m = TaskMemory.get(TaskContext.get());
        PoolStats st = m.pool().stats();
        return "arrow=" + m.writeAllocator().getAllocatedMemory() + " native=" + st.used() + " reservations="
                + st.reservations();
    }

    private static long files(Path p) throws IOException {
        if (!Files.exists(p)) {
            return 0;
        }
        try (Stream<Path> s = Files.walk(p)) {
            return s.filter(Files::isRegularFile).count();
        }
    }

    private static String thrown(Runnable r) {
        try {
            r.run();
            return "no exception";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private WriteLayout layout() {
        return new WriteLayout(dir.resolve("out").toString(), UUID.randomUUID().toString());
    }

    private static final String NOTHING_HELD = "arrow=0 native=0 reservations=0";

    @Test
    void aFailurePartWayThroughARowPoisonsTheWriterAndCommitReleasesEverything() {
        WriteLayout layout = layout();
        List<String> out = inTask(layout, false, Map.of("batchRows", "16"), (f, l) -> {
            long task = TaskContext.get().taskAttemptId();
            DataWriter<InternalRow> w = f.createWriter(0, task);
            List<String> r = new ArrayList<>();
            for (int i = 0; i < 40; i++) { // two full batches went to the native writer, some rows wait
                w.write(row(i, "s" + i, i % 3));
            }
            r.add("files staged before: " + files(l.attempt(0, task)));
            r.add("mid-row: " + thrown(() -> write(w, poisonedRow(40, 0))));
            r.add("next write: " + thrown(() -> write(w, row(41, "a", 0))));
            r.add("commit: " + thrown(() -> commit(w)));
            r.add("held: " + held());
            r.add("files left: " + files(l.attempt(0, task)));
            w.abort();
            w.close();
            w.close();
            r.add("held after: " + held());
            return r;
        });
        String all = String.join("\n", out);
        assertTrue(all.contains("mid-row: IllegalArgumentException: ") && all.contains("injected failure"), all);
        assertTrue(all.contains("next write: IllegalStateException") && all.contains("failed earlier"), all);
        assertTrue(all.contains("commit: IllegalStateException") && all.contains("cannot commit"), all);
        assertTrue(all.contains("held: " + NOTHING_HELD), all);
        assertTrue(all.contains("files left: 0"), all);
        assertTrue(all.contains("held after: " + NOTHING_HELD), all);
    }

    @Test
    void aFailureAtCommitReleasesEverythingAndLeavesNoFile() {
        WriteLayout layout = layout();
        List<String> out = inTask(layout, false, Map.of("batchRows", "16", "rowGroupRows", "32"), (f, l) -> {
            long task = TaskContext.get().taskAttemptId();
            DataWriter<InternalRow> w = f.createWriter(0, task);
            for (int i = 0; i < 100; i++) {
                w.write(row(i, "s" + i, 0));
            }
            // The attempt's folder vanishes (an operator, a disk gone): finishing the file cannot publish it.
            StagingFolders.deleteTree(l.attempt(0, task));
            List<String> r = new ArrayList<>();
            r.add("commit: " + thrown(() -> commit(w)));
            r.add("held: " + held());
            r.add("files left: " + files(l.staging()));
            r.add("again: " + thrown(() -> commit(w)));
            w.close();
            w.abort();
            return r;
        });
        String all = String.join("\n", out);
        assertTrue(all.startsWith("commit: ") && !all.contains("commit: no exception"), all);
        assertTrue(all.contains("held: " + NOTHING_HELD), all);
        assertTrue(all.contains("files left: 0"), all);
        assertTrue(all.contains("again: IllegalStateException"), all);
    }

    @Test
    void aChildFailingPartWayThroughARowAbortsEveryChild() {
        WriteLayout layout = layout();
        List<String> out = inTask(layout, true, Map.of("batchRows", "8"), (f, l) -> {
            long task = TaskContext.get().taskAttemptId();
            DataWriter<InternalRow> w = f.createWriter(0, task);
            for (int i = 0; i < 60; i++) {
                w.write(row(i, "s" + i, i % 4));
            }
            List<String> r = new ArrayList<>();
            r.add("open before: " + ((PartitionedDataWriter) w).openFiles());
            r.add("mid-row: " + thrown(() -> write(w, poisonedRow(60, 2))));
            r.add("next write: " + thrown(() -> write(w, row(61, "a", 1))));
            r.add("commit: " + thrown(() -> commit(w)));
            r.add("open after: " + ((PartitionedDataWriter) w).openFiles());
            r.add("held: " + held());
            r.add("files left: " + files(l.attempt(0, task)));
            w.abort();
            w.close();
            return r;
        });
        String all = String.join("\n", out);
        assertTrue(all.contains("open before: 4"), all);
        assertTrue(all.contains("mid-row: IllegalArgumentException: ") && all.contains("injected failure"), all);
        assertTrue(all.contains("next write: IllegalStateException"), all);
        assertTrue(all.contains("commit: IllegalStateException"), all);
        assertTrue(all.contains("open after: 0"), all);
        assertTrue(all.contains("held: " + NOTHING_HELD), all);
        assertTrue(all.contains("files left: 0"), all);
    }

    @Test
    void aChildFailingAtCommitAbortsTheOthers() {
        WriteLayout layout = layout();
        List<String> out = inTask(layout, true, Map.of("batchRows", "8"), (f, l) -> {
            long task = TaskContext.get().taskAttemptId();
            DataWriter<InternalRow> w = f.createWriter(0, task);
            for (int i = 0; i < 60; i++) {
                w.write(row(i, "s" + i, i % 4));
            }
            // The folder of the first partition's child goes: its finish fails first, the other three
            // were not finished yet and must be aborted all the same.
            StagingFolders.deleteTree(l.attempt(0, task).resolve("k=0"));
            List<String> r = new ArrayList<>();
            r.add("commit: " + thrown(() -> commit(w)));
            r.add("held: " + held());
            r.add("files left: " + files(l.staging()));
            w.close();
            return r;
        });
        String all = String.join("\n", out);
        assertTrue(!all.contains("commit: no exception"), all);
        assertTrue(all.contains("held: " + NOTHING_HELD), all);
        assertTrue(all.contains("files left: 0"), all);
    }

    @Test
    void abortAndCloseAreIdempotentAndCommitAfterAbortIsRefused() {
        WriteLayout layout = layout();
        for (boolean partitioned : new boolean[] {false, true}) {
            List<String> out = inTask(layout, partitioned, Map.of(), (f, l) -> {
                long task = TaskContext.get().taskAttemptId();
                DataWriter<InternalRow> w = f.createWriter(0, task);
                for (int i = 0; i < 10; i++) {
                    w.write(row(i, null, i % 2));
                }
                w.abort();
                w.abort();
                w.close();
                w.close();
                List<String> r = new ArrayList<>();
                r.add("commit: " + thrown(() -> commit(w)));
                r.add("write: " + thrown(() -> write(w, row(1, "a", 1))));
                r.add("held: " + held());
                r.add("files left: " + files(l.attempt(0, task)));
                // A committed writer's close keeps its files for the job commit.
                DataWriter<InternalRow> c = f.createWriter(1, task);
                c.write(row(1, "a", 1));
                c.commit();
                c.close();
                c.abort();
                r.add("committed files kept: " + files(l.attempt(1, task)));
                return r;
            });
            String all = String.join("\n", out);
            assertTrue(all.contains("commit: IllegalStateException"), all);
            assertTrue(all.contains("write: IllegalStateException"), all);
            assertTrue(all.contains("held: " + NOTHING_HELD), all);
            assertTrue(all.contains("files left: 0"), all);
            assertTrue(all.contains("committed files kept: 1"), all);
        }
    }

    /** Two attempts of partition 0 both stage and commit their task; the job publishes the one Spark chose. */
    @Test
    void ofTwoAttemptsOfAPartitionOnlyTheCommittedOneIsPublished() throws IOException {
        Path target = dir.resolve("attempts");
        QuiverBatchWrite job = new QuiverBatchWrite(new WriteLayout(target.toString(), UUID.randomUUID().toString()),
                SCHEMA, new int[] {2}, QuiverWriteOptions.parse(Map.of()), "UTC", false);
        QuiverDataWriterFactory f = (QuiverDataWriterFactory) job.createBatchWriterFactory(null);
        List<QuiverCommitMessage> msgs = jsc.parallelize(List.of(0, 1), 2).map(attempt -> {
            long task = TaskContext.get().taskAttemptId();
            DataWriter<InternalRow> w = f.createWriter(0, task);
            for (int i = 0; i < 20; i++) {
                w.write(row(attempt * 1000 + i, "a" + attempt, i % 2));
            }
            QuiverCommitMessage m = (QuiverCommitMessage) w.commit();
            w.close();
            return m;
        }).collect();
        assertEquals(2, msgs.size());
        assertEquals(msgs.get(0).files().stream().map(QuiverCommitMessage.StagedFile::relativePath).sorted().toList(),
                msgs.get(1).files().stream().map(QuiverCommitMessage.StagedFile::relativePath).sorted().toList(),
                "both attempts stage the same final names");
        job.commit(new WriterCommitMessage[] {msgs.get(1)});
        List<Row> back = spark.read().format("quiver").load(target.toString()).collectAsList();
        assertEquals(20, back.size());
        assertTrue(back.stream().allMatch(r -> r.getLong(0) >= 1000), back.toString());
        try (Stream<Path> s = Files.list(target)) {
            assertEquals(List.of("k=0", "k=1"), s.map(p -> p.getFileName().toString()).sorted()
                    .collect(Collectors.toList()));
        }
        assertEquals(2, files(target));
    }

    private static void write(DataWriter<InternalRow> w, InternalRow r) {
        try {
            w.write(r);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void commit(DataWriter<InternalRow> w) {
        try {
            w.commit();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
