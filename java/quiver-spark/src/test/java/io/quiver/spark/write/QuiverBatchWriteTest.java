package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job-level commit protocol on staged files made by hand (the bytes are
 * not read: only where they go is checked): only committed attempts are
 * published, under their final names; a second attempt of a partition
 * publishes nothing; abort removes the staging folder; overwrite replaces
 * the old data only once the new is published, and restores it when the
 * publish fails.
 */
class QuiverBatchWriteTest {
    private static final StructType SCHEMA = new StructType().add("id", DataTypes.LongType);

    @TempDir
    Path dir;

    private static QuiverBatchWrite job(Path target, boolean truncate) {
        return new QuiverBatchWrite(new WriteLayout(target.toString(), UUID.randomUUID().toString()), SCHEMA,
                new int[0], QuiverWriteOptions.parse(java.util.Map.of()), "UTC", truncate);
    }

    /** Stages {@code rel} for attempt (partition, task) with {@code content}; returns its entry. */
    private static QuiverCommitMessage.StagedFile stage(QuiverBatchWrite job, int partition, long task, String rel,
            String content) throws IOException {
        Path f = job.layout().attempt(partition, task).resolve(rel);
        Files.createDirectories(f.getParent());
        Files.writeString(f, content);
        return new QuiverCommitMessage.StagedFile(rel, 1, content.length());
    }

    private static TreeSet<String> tree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return new TreeSet<>();
        }
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(Files::isRegularFile).map(p -> root.relativize(p).toString())
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    /** The files a reader would see: not those under the staging folder. */
    private static TreeSet<String> published(Path root) throws IOException {
        return tree(root).stream().filter(p -> !p.startsWith(WriteLayout.STAGING_PREFIX))
                .collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void onlyTheCommittedAttemptOfAPartitionIsPublished() throws IOException {
        Path target = dir.resolve("out");
        QuiverBatchWrite job = job(target, false);
        assertTrue(Files.isDirectory(job.layout().staging()), "staging made when the job starts");
        String n0 = job.layout().fileName(0, 0);
        String n1 = job.layout().fileName(1, 0);
        QuiverCommitMessage.StagedFile a = stage(job, 0, 10, n0, "first attempt of partition 0");
        QuiverCommitMessage.StagedFile b = stage(job, 0, 11, n0, "second attempt of partition 0");
        QuiverCommitMessage.StagedFile c = stage(job, 1, 12, n1, "partition 1");
        // Spark hands over the committed attempts' messages: 11 (speculative, say) won partition 0.
        job.commit(new WriterCommitMessage[] {new QuiverCommitMessage(0, 11, List.of(b)),
            new QuiverCommitMessage(1, 12, List.of(c))});
        assertEquals(new TreeSet<>(List.of(n0, n1)), tree(target));
        assertEquals("second attempt of partition 0", Files.readString(target.resolve(n0)));
        assertFalse(Files.exists(job.layout().staging()), "staging removed at commit");
        assertTrue(a.relativePath().equals(n0));
    }

    @Test
    void twoCommitsOfOnePartitionAreRefusedAndNothingIsPublished() throws IOException {
        Path target = dir.resolve("out");
        QuiverBatchWrite job = job(target, false);
        String n0 = job.layout().fileName(0, 0);
        QuiverCommitMessage.StagedFile a = stage(job, 0, 10, n0, "a");
        QuiverCommitMessage.StagedFile b = stage(job, 0, 11, n0, "b");
        WriterCommitMessage[] both = {new QuiverCommitMessage(0, 10, List.of(a)),
            new QuiverCommitMessage(0, 11, List.of(b))};
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> job.commit(both));
        assertTrue(e.getMessage().contains("two task attempts"), e.getMessage());
        assertEquals(new TreeSet<>(), published(target));
        job.abort(both);
        assertFalse(Files.exists(target), "the folder the job made is gone after abort");
    }

    @Test
    void abortRemovesTheStagingFolderAndKeepsExistingData() throws IOException {
        Path target = dir.resolve("out");
        Files.createDirectories(target);
        Files.writeString(target.resolve("old.qvr"), "old");
        QuiverBatchWrite job = job(target, true);
        QuiverCommitMessage.StagedFile a = stage(job, 0, 1, job.layout().fileName(0, 0), "new");
        job.abort(new WriterCommitMessage[] {new QuiverCommitMessage(0, 1, List.of(a)), null});
        assertEquals(new TreeSet<>(List.of("old.qvr")), tree(target));
        try (Stream<Path> s = Files.list(target)) {
            assertEquals(1, s.count(), "only the old file is left");
        }
        job.abort(new WriterCommitMessage[0]); // again: nothing to do, no error
    }

    @Test
    void overwriteReplacesTheOldDataAtCommit() throws IOException {
        Path target = dir.resolve("out");
        Files.createDirectories(target.resolve("k=1"));
        Files.writeString(target.resolve("k=1/old.qvr"), "old");
        Files.writeString(target.resolve("old.qvr"), "old");
        QuiverBatchWrite job = job(target, true);
        String rel = "k=1/" + job.layout().fileName(0, 0);
        QuiverCommitMessage.StagedFile a = stage(job, 0, 1, rel, "new");
        assertEquals(new TreeSet<>(List.of("k=1/old.qvr", "old.qvr")), published(target),
                "the old data stays until the job commits");
        job.commit(new WriterCommitMessage[] {new QuiverCommitMessage(0, 1, List.of(a))});
        assertEquals(new TreeSet<>(List.of(rel)), tree(target));
    }

    @Test
    void aFailedPublishRestoresTheOldDataAndPublishesNothing() throws IOException {
        Path target = dir.resolve("out");
        Files.createDirectories(target);
        Files.writeString(target.resolve("old.qvr"), "old", StandardCharsets.UTF_8);
        QuiverBatchWrite job = job(target, true);
        // The second file's folder is the first file's name: its publish fails after the first moved.
        QuiverCommitMessage.StagedFile a = stage(job, 0, 1, "x/a.qvr", "a");
        QuiverCommitMessage.StagedFile b = stage(job, 1, 2, "x/a.qvr/b.qvr", "b");
        WriterCommitMessage[] msgs = {new QuiverCommitMessage(0, 1, List.of(a)),
            new QuiverCommitMessage(1, 2, List.of(b))};
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> job.commit(msgs));
        assertTrue(e.getMessage().contains("old data was restored"), e.getMessage());
        job.abort(msgs);
        assertEquals(new TreeSet<>(List.of("old.qvr")), tree(target));
        assertEquals("old", Files.readString(target.resolve("old.qvr")));
    }

    @Test
    void aMissingStagedFileFailsTheCommitBeforeAnythingMoves() throws IOException {
        Path target = dir.resolve("out");
        QuiverBatchWrite job = job(target, false);
        QuiverCommitMessage.StagedFile a = stage(job, 0, 1, job.layout().fileName(0, 0), "a");
        QuiverCommitMessage.StagedFile ghost = new QuiverCommitMessage.StagedFile(job.layout().fileName(1, 0), 1, 1);
        WriterCommitMessage[] msgs = {new QuiverCommitMessage(0, 1, List.of(a)),
            new QuiverCommitMessage(1, 2, List.of(ghost))};
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> job.commit(msgs));
        assertTrue(e.getMessage().contains("missing"), e.getMessage());
        assertEquals(new TreeSet<>(), published(target));
    }

    @Test
    void aStagedPathLeavingItsFolderIsRefused() throws IOException {
        Path target = dir.resolve("out");
        QuiverBatchWrite job = job(target, false);
        stage(job, 0, 1, "a.qvr", "a");
        WriterCommitMessage[] msgs = {new QuiverCommitMessage(0, 1,
                List.of(new QuiverCommitMessage.StagedFile("../../escape.qvr", 1, 1)))};
        assertThrows(IllegalStateException.class, () -> job.commit(msgs));
        assertFalse(Files.exists(dir.resolve("escape.qvr")));
    }
}
