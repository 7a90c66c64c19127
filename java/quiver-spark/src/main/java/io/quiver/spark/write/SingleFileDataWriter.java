package io.quiver.spark.write;

import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.DataWriter;

/**
 * A task attempt's writer for an unpartitioned write: one staged file,
 * {@code part-<partition>-<job>-c000.qvr} in the attempt's folder.
 *
 * <p>{@link #commit} after a failed {@link #write} aborts (releasing the
 * native writer, the Arrow vectors and the file) and then throws naming
 * the failure; {@link #abort} removes the attempt's folder; abort and
 * {@link #close} are idempotent, and close aborts an uncommitted writer.
 */
final class SingleFileDataWriter implements DataWriter<InternalRow> {
    private final StagedFileWriter file;
    private final Path attemptDir;
    private final int partitionId;
    private final long taskId;
    private final boolean evenIfEmpty;
    private QuiverCommitMessage committed;
    private boolean aborted;

    /**
     * @param evenIfEmpty write a file of no rows when no row comes (the one
     *                    task of an empty DataFrame: its schema is kept)
     */
    SingleFileDataWriter(StagedFileWriter file, Path attemptDir, int partitionId, long taskId, boolean evenIfEmpty) {
        this.file = file;
        this.attemptDir = attemptDir;
        this.partitionId = partitionId;
        this.taskId = taskId;
        this.evenIfEmpty = evenIfEmpty;
    }

    @Override
    public void write(InternalRow row) {
        if (aborted || committed != null) {
            throw new IllegalStateException("quiver: write after " + (aborted ? "abort" : "commit") + " of task attempt "
                    + taskId);
        }
        file.write(row);
    }

    @Override
    public QuiverCommitMessage commit() {
        if (committed != null) {
            return committed;
        }
        if (aborted) {
            throw new IllegalStateException("quiver: commit after abort of task attempt " + taskId);
        }
        if (file.failed()) {
            Throwable cause = file.failure();
            abort();
            throw new IllegalStateException("quiver: task attempt " + taskId + " cannot commit: its write failed: "
                    + cause, cause);
        }
        QuiverCommitMessage.StagedFile f;
        try {
            f = file.finish(evenIfEmpty);
        } catch (RuntimeException | Error e) {
            FirstFailure.abortAfter(e, this::abort);
            throw e;
        }
        committed = new QuiverCommitMessage(partitionId, taskId, f == null ? List.of() : List.of(f));
        return committed;
    }

    @Override
    public void abort() {
        if (aborted || committed != null) {
            return;
        }
        aborted = true;
        FirstFailure first = new FirstFailure();
        try {
            file.abort();
        } catch (RuntimeException e) {
            first.add(e);
        }
        try {
            StagingFolders.deleteTree(attemptDir);
        } catch (RuntimeException e) {
            first.add(e);
        }
        first.rethrow();
    }

    @Override
    public void close() {
        if (committed == null) {
            abort();
        }
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        QuiverCommitMessage c = committed;
        long bytes = c == null || c.files().isEmpty() ? 0 : c.files().get(0).bytes();
        long files = c == null ? 0 : c.files().size();
        return WriteMetrics.task(file.rows(), files, bytes);
    }
}
