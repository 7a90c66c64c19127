package io.quiver.spark.write;

import io.quiver.QuiverWriter;
import io.quiver.WriteResult;
import io.quiver.WriterOptions;
import io.quiver.memory.NativePool;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * One Quiver file a task attempt stages: rows go into an
 * {@link ArrowRowWriter}'s vectors, and each full batch crosses the C Data
 * interface into the native writer, which takes its buffers over. The file
 * is opened at the first row (a partition writer that never gets a row
 * holds nothing) in the attempt's folder under its final relative name; the
 * native writer makes it appear there only when it is finished.
 *
 * <p><b>Failures.</b> The first exception of {@link #write} or
 * {@link #finish} (a row that could not be appended whole, a batch the
 * native writer refused, a full disk) poisons the writer: later calls
 * throw {@link IllegalStateException} naming it. {@link #abort} and
 * {@link #close} release the native writer (and its temporary file), the
 * Arrow vectors and their allocations; both are idempotent, and abort also
 * runs after a successful finish (removing nothing but releasing
 * nothing twice).
 */
final class StagedFileWriter implements AutoCloseable {
    private final StructType dataSchema;
    private final Schema arrowSchema;
    private final Path attemptDir;
    private final Path file;
    private final String relativePath;
    private final QuiverWriteOptions options;
    private final BufferAllocator allocator;
    private final NativePool pool;

    private ArrowRowWriter rows;   // null until the first row, and after release
    private QuiverWriter writer;   // likewise
    private long written;          // rows appended
    private Throwable failure;     // the first failure: the writer is poisoned
    private QuiverCommitMessage.StagedFile result;
    private boolean released;

    /**
     * @param dataSchema   the columns written (partition columns removed)
     * @param arrowSchema  {@code ArrowRowWriter.arrowSchema(dataSchema)}, computed once per task
     * @param attemptDir   the task attempt's staging folder
     * @param relativePath the file's path under it (and under the target once published)
     */
    StagedFileWriter(StructType dataSchema, Schema arrowSchema, Path attemptDir, String relativePath,
            QuiverWriteOptions options, BufferAllocator allocator, NativePool pool) {
        this.dataSchema = dataSchema;
        this.arrowSchema = arrowSchema;
        this.attemptDir = attemptDir;
        this.file = attemptDir.resolve(relativePath);
        this.relativePath = relativePath;
        this.options = options;
        this.allocator = allocator;
        this.pool = pool;
    }

    String relativePath() {
        return relativePath;
    }

    long rows() {
        return written;
    }

    /** Arrow bytes the vectors hold now (0 before the first row and after release). */
    long allocatedBytes() {
        ArrowRowWriter r = rows;
        return r == null ? 0 : r.allocatedBytes();
    }

    /** Appends one row (copied; the row may be reused by the caller as soon as this returns). */
    void write(InternalRow row) {
        checkUsable("write");
        try {
            if (writer == null) {
                open();
            }
            rows.write(row);
            written++;
            if (rows.isFull()) {
                flush();
            }
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        }
    }

    /**
     * Writes what is buffered and the footer, and returns the staged file;
     * null when no row was written and {@code evenIfEmpty} is false (no file
     * is made). Releases everything it held, also when it throws.
     */
    QuiverCommitMessage.StagedFile finish(boolean evenIfEmpty) {
        if (result != null) {
            return result;
        }
        checkUsable("finish");
        try {
            if (writer == null) {
                if (!evenIfEmpty) {
                    release();
                    return null;
                }
                open();
            }
            if (rows.rows() > 0) {
                flush();
            }
            WriteResult r = writer.finish();
            result = new QuiverCommitMessage.StagedFile(relativePath, r.rows(), r.bytes());
        } catch (RuntimeException | Error e) {
            failure = e;
            abort(e);
            throw e;
        }
        release();
        return result;
    }

    /** Discards the file and releases everything (idempotent; a finished file stays). */
    void abort() {
        abort(null);
    }

    private void abort(Throwable cause) {
        if (released) {
            return;
        }
        FirstFailure first = new FirstFailure();
        if (writer != null && result == null) {
            try {
                writer.abort();
            } catch (RuntimeException | Error e) {
                first.add(e);
            }
        }
        try {
            release();
        } catch (RuntimeException | Error e) {
            first.add(e);
        }
        if (cause != null) {
            first.suppressInto(cause);
        } else {
            first.rethrow();
        }
    }

    /** Aborts unless finished; idempotent. */
    @Override
    public void close() {
        abort();
    }

    boolean failed() {
        return failure != null;
    }

    Throwable failure() {
        return failure;
    }

    private void checkUsable(String op) {
        if (failure != null) {
            throw new IllegalStateException("quiver: " + op + " of '" + file + "': the writer failed earlier: "
                    + failure, failure);
        }
        if (result != null) {
            throw new IllegalStateException("quiver: " + op + " of '" + file + "': the file is already finished");
        }
        if (released) {
            throw new IllegalStateException("quiver: " + op + " of '" + file + "': the writer was aborted");
        }
    }

    private void open() {
        // Only folders below the job's staging folder are made here, never
        // the staging folder itself: a job abort removes it while tasks may
        // still be running, and a task must then fail rather than make it
        // again and leave files nobody removes.
        StagingFolders.createBelow(attemptDir.getParent(), file.getParent());
        rows = new ArrowRowWriter(dataSchema, allocator, options.batchRows());
        WriterOptions.Builder b = WriterOptions.builder()
                .rowGroupRows(options.rowGroupRows())
                .compact(options.compact())
                .randomAccess(options.randomAccess())
                .maxInFlight(options.maxInFlight())
                .pool(pool);
        writer = QuiverWriter.open(allocator, file, arrowSchema, b.build());
    }

    private void flush() {
        VectorSchemaRoot root = rows.finishBatch();
        // The native writer takes the buffers over (no copy) and clears the root, also when it fails.
        writer.writeOwned(root);
        rows.reset();
    }

    /** Closes the native writer and the Arrow vectors (each exactly once). */
    private void release() {
        if (released) {
            return;
        }
        released = true;
        FirstFailure first = new FirstFailure();
        QuiverWriter w = writer;
        ArrowRowWriter r = rows;
        writer = null;
        rows = null;
        if (w != null) {
            try {
                w.close();
            } catch (RuntimeException | Error e) {
                first.add(e);
            }
        }
        if (r != null) {
            try {
                r.close();
            } catch (RuntimeException | Error e) {
                first.add(e);
            }
        }
        first.rethrow();
    }
}
