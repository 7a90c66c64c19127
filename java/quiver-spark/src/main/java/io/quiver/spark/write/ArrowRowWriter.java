package io.quiver.spark.write;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * Spark rows appended straight into Arrow vectors, one batch at a time.
 *
 * <p>Each column gets a field writer chosen once from its Spark type, so a
 * row is written without dispatching on types per value and without copying
 * the row first. Everything a row holds is copied into the vectors: the
 * caller may reuse or overwrite the row after {@link #write} returns.
 *
 * <p>Vectors start at {@code min(64, batchRows)} slots and grow on demand;
 * {@link #reset} puts them back to that start, so a writer that once held a
 * large batch does not keep its memory (many open partition writers of a
 * few rows each then stay small).
 *
 * <p>A failure part-way through a row poisons the writer: the row's columns
 * can no longer be trusted to line up, so later calls throw
 * {@link IllegalStateException} naming the first failure. {@link #close}
 * always releases every vector.
 *
 * <p>Not thread-safe: one writer belongs to one task thread.
 */
public final class ArrowRowWriter implements AutoCloseable {

    /**
     * The Arrow schema Quiver files written from {@code schema} carry: one
     * the read path maps back to the same Spark types.
     *
     * @throws UnsupportedOperationException for a type with no Arrow
     *         equivalent the read path delivers (intervals, variant, ...),
     *         naming the column path and the type
     */
    public static Schema arrowSchema(StructType schema) {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /**
     * A writer of rows of {@code schema} into vectors allocated from
     * {@code allocator}, batches of at most {@code batchRows} rows.
     */
    public ArrowRowWriter(StructType schema, BufferAllocator allocator, int batchRows) {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /**
     * Appends {@code row}. Keeps no reference to it.
     *
     * @throws IllegalStateException when the writer is poisoned, closed, or full
     */
    public void write(InternalRow row) {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /** The rows of the current batch. */
    public int rows() {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /**
     * Whether the batch must be finished before the next row: it holds
     * {@code batchRows} rows, or its variable-width data passed the limit
     * that keeps int32 offsets safe.
     */
    public boolean isFull() {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /**
     * The current batch: value counts set, the root holds {@link #rows()}
     * rows. The root stays owned by this writer; after its buffers were
     * moved away or cleared, call {@link #reset}.
     */
    public VectorSchemaRoot finishBatch() {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /** Every vector back to the start capacity; {@link #rows()} becomes 0. */
    public void reset() {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /** The bytes the vectors hold now. */
    public long allocatedBytes() {
        throw new UnsupportedOperationException("not yet implemented");
    }

    /** Releases every vector. Idempotent. */
    @Override
    public void close() {
        throw new UnsupportedOperationException("not yet implemented");
    }
}
