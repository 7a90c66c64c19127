package io.quiver.spark.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit protocol of one write job, on the driver.
 *
 * <p>Each task attempt stages its files in a folder of its own inside the
 * job's staging folder ({@link WriteLayout}); Spark's commit coordinator
 * lets one attempt per partition commit, and only committed attempts'
 * messages reach {@link #commit}, which moves their files to their final
 * names under the target. Staged names are the final names, so a retried
 * or speculative attempt publishes exactly the files the committed attempt
 * wrote, never two copies.
 *
 * <p>Overwrite parks the old data inside the staging folder at job commit
 * (renames, no copy), publishes, and only then removes it with the staging
 * folder: a job that fails before or during its commit leaves the old data
 * in place (a failed publish is undone: the files it moved are removed and
 * the parked data moved back). {@link #abort} removes the staging folder,
 * and the target folder when the job created it and it is empty.
 */
public final class QuiverBatchWrite implements BatchWrite {
    private static final Logger LOG = LoggerFactory.getLogger(QuiverBatchWrite.class);

    private final WriteLayout layout;
    private final StructType schema;
    private final int[] partitionOrdinals;
    private final QuiverWriteOptions options;
    private final String timeZone;
    private final boolean truncate;
    private final boolean createdTarget;

    /**
     * Creates the job's staging folder (and the target folder if needed).
     *
     * @param truncate replace what the target holds (SaveMode.Overwrite)
     */
    public QuiverBatchWrite(WriteLayout layout, StructType schema, int[] partitionOrdinals,
            QuiverWriteOptions options, String timeZone, boolean truncate) {
        this.layout = layout;
        this.schema = schema;
        this.partitionOrdinals = partitionOrdinals.clone();
        this.options = options;
        this.timeZone = timeZone;
        this.truncate = truncate;
        Path target = layout.target();
        this.createdTarget = !Files.exists(target, LinkOption.NOFOLLOW_LINKS);
        try {
            Files.createDirectories(layout.staging());
        } catch (IOException e) {
            throw new UncheckedIOException("quiver: cannot create the staging folder '" + layout.staging()
                    + "' of the write to '" + target + "': " + e, e);
        }
    }

    public WriteLayout layout() {
        return layout;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new QuiverDataWriterFactory(layout, schema, partitionOrdinals, options, timeZone);
    }

    @Override
    public boolean useCommitCoordinator() {
        return true;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        List<Path[]> moves = plan(messages);
        Path target = layout.target();
        List<Path[]> parked = new ArrayList<>();
        List<Path> published = new ArrayList<>();
        try {
            if (truncate) {
                park(parked);
            }
            for (Path[] m : moves) {
                Files.createDirectories(m[1].getParent());
                // No REPLACE_EXISTING: a name taken already is an error, never a silent loss.
                Files.move(m[0], m[1]);
                published.add(m[1]);
            }
        } catch (IOException | RuntimeException e) {
            undo(published, parked, e);
            throw new IllegalStateException("quiver: committing the write to '" + target + "' failed; "
                    + (truncate ? "the old data was restored" : "nothing was published") + ": " + e, e);
        }
        try {
            StagingFolders.deleteTree(layout.staging());
        } catch (RuntimeException e) {
            // The data is published: the job succeeded. What is left is hidden from readers.
            LOG.warn("quiver: the write to '{}' is committed but its staging folder '{}' could not be removed: {}",
                    target, layout.staging(), e.toString());
        }
    }

    /** The (staged, final) path of every committed file; refuses what would publish two copies. */
    private List<Path[]> plan(WriterCommitMessage[] messages) {
        Map<Integer, Long> attemptOf = new HashMap<>();
        List<Path[]> moves = new ArrayList<>();
        Map<Path, Path> finals = new HashMap<>();
        for (WriterCommitMessage m : messages) {
            if (m == null) {
                continue;
            }
            if (!(m instanceof QuiverCommitMessage q)) {
                throw new IllegalStateException("quiver: commit of '" + layout.target() + "': unexpected message "
                        + m.getClass().getName());
            }
            Long other = attemptOf.putIfAbsent(q.partitionId(), q.taskId());
            if (other != null) {
                throw new IllegalStateException("quiver: commit of '" + layout.target() + "': partition "
                        + q.partitionId() + " was committed by two task attempts (" + other + " and " + q.taskId()
                        + ")");
            }
            Path attempt = layout.attempt(q.partitionId(), q.taskId());
            for (QuiverCommitMessage.StagedFile f : q.files()) {
                Path src = attempt.resolve(f.relativePath()).normalize();
                Path dst = layout.target().resolve(f.relativePath()).normalize();
                if (!src.startsWith(attempt) || !dst.startsWith(layout.target())) {
                    throw new IllegalStateException("quiver: commit of '" + layout.target() + "': staged path '"
                            + f.relativePath() + "' leaves its folder");
                }
                if (!Files.isRegularFile(src, LinkOption.NOFOLLOW_LINKS)) {
                    throw new IllegalStateException("quiver: commit of '" + layout.target() + "': the staged file '"
                            + src + "' of task attempt " + q.taskId() + " is missing");
                }
                Path prev = finals.put(dst, src);
                if (prev != null) {
                    throw new IllegalStateException("quiver: commit of '" + layout.target() + "': '" + dst
                            + "' staged twice ('" + prev + "', '" + src + "')");
                }
                moves.add(new Path[] {src, dst});
            }
        }
        return moves;
    }

    /** Moves what the target holds (but staging folders) into the job's staging folder. */
    private void park(List<Path[]> parked) throws IOException {
        Path replaced = layout.replaced();
        Files.createDirectories(replaced);
        List<Path> entries = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(layout.target())) {
            for (Path p : s) {
                if (!p.getFileName().toString().startsWith(WriteLayout.STAGING_PREFIX)) {
                    entries.add(p);
                }
            }
        }
        for (Path p : entries) {
            Path to = replaced.resolve(p.getFileName().toString());
            Files.move(p, to);
            parked.add(new Path[] {p, to});
        }
    }

    /** Undoes a failed commit: removes what was published, moves parked data back. */
    private void undo(List<Path> published, List<Path[]> parked, Exception cause) {
        for (Path p : published) {
            try {
                Files.deleteIfExists(p);
            } catch (IOException | RuntimeException e) {
                cause.addSuppressed(e);
            }
        }
        if (!parked.isEmpty()) {
            // Folders the publish created (new partition directories) would be in the way.
            for (Path[] m : parked) {
                try {
                    if (Files.isDirectory(m[0], LinkOption.NOFOLLOW_LINKS)) {
                        StagingFolders.deleteTree(m[0]);
                    }
                    Files.move(m[1], m[0]);
                } catch (IOException | RuntimeException e) {
                    cause.addSuppressed(e);
                }
            }
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        StagingFolders.deleteTree(layout.staging());
        Path target = layout.target();
        if (createdTarget) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(target)) {
                if (s.iterator().hasNext()) {
                    return;
                }
            } catch (IOException e) {
                return;
            }
            try {
                Files.deleteIfExists(target);
            } catch (IOException e) {
                LOG.warn("quiver: could not remove the folder '{}' the aborted write created: {}", target,
                        e.toString());
            }
        }
    }

    @Override
    public String toString() {
        return "QuiverBatchWrite[" + layout.target() + ", job " + layout.jobId() + (truncate ? ", overwrite" : "")
                + "]";
    }
}
