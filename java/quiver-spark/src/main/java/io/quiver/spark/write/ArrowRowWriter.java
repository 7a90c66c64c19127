package io.quiver.spark.write;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Spark rows appended straight into Arrow vectors, one batch at a time.
 *
 * <p>Each column gets a field writer chosen once from its Spark type, so a
 * row is written without dispatching on types per value and without copying
 * the row first; flat columns make no object per row. Everything a row
 * holds is copied into the vectors: the caller may reuse or overwrite the
 * row after {@link #write} returns.
 *
 * <p>Vectors start at {@code min(64, batchRows)} slots and grow on demand
 * (doubling); {@link #reset} puts them back to that start, so a writer that
 * once held a large batch does not keep its memory, and many open
 * partition writers of a few rows each stay small.
 *
 * <p>Use: {@link #write} rows until {@link #isFull}, {@link #finishBatch},
 * hand the root's buffers on (or clear them), {@link #reset}, and so on;
 * {@link #close} at the end.
 *
 * <p>A failure part-way through a row poisons the writer: the row's
 * columns no longer line up, so later {@link #write}, {@link #finishBatch}
 * and {@link #reset} throw {@link IllegalStateException} naming the first
 * failure. {@link #close} always releases every vector.
 *
 * <p>Not thread-safe: one writer belongs to one task thread.
 */
public final class ArrowRowWriter implements AutoCloseable {
    /** The slots vectors start with (fewer if a batch holds fewer rows). */
    public static final int START_SLOTS = 64;
    /**
     * {@link #isFull} once a variable-width or list vector holds this many
     * bytes or elements: far enough below 2^31 that the rest of a batch's
     * last row cannot overflow int32 offsets (a single larger value fails
     * cleanly instead).
     */
    static final long DEFAULT_OFFSET_LIMIT = 1L << 30;

    private final Schema schema;
    private final int batchRows;
    private final int startSlots;
    private final long offsetLimit;
    private final FieldWriter[] columns;
    /** The columns with offsets (strings, binaries, lists, maps, or structs of them). */
    private final FieldWriter[] withOffsets;
    private final List<FieldVector> vectors;
    private final VectorSchemaRoot root;

    private int rows;
    /** Rows handed to {@link #write} over the writer's life, for errors. */
    private long rowNumber;
    /** finishBatch was called and reset not yet. */
    private boolean finished;
    private boolean closed;
    /** The first failure; non-null poisons the writer. */
    private RuntimeException failure;

    /**
     * The Arrow schema Quiver files written from {@code schema} carry: one
     * the read path maps back to the same Spark types. bool, int8/16/32/64,
     * float32/64, decimal128(p, s), utf8 (also char/varchar), binary,
     * date32, timestamp[us, "UTC"] (TimestampType), timestamp[us]
     * (TimestampNTZType), struct, list (item "element"), map (entries
     * "entries" of a non-null "key" and a "value"), null.
     *
     * @throws UnsupportedOperationException for any other type (intervals,
     *         variant, time, user-defined types, ...), naming the column
     *         path and the type
     */
    public static Schema arrowSchema(StructType schema) {
        return ArrowSchemaOfSpark.schema(schema);
    }

    /**
     * A writer of rows of {@code schema} into vectors allocated from
     * {@code allocator}, batches of at most {@code batchRows} rows.
     *
     * @throws UnsupportedOperationException for a type {@link #arrowSchema} refuses
     * @throws IllegalArgumentException when {@code batchRows} is not positive
     */
    public ArrowRowWriter(StructType schema, BufferAllocator allocator, int batchRows) {
        this(schema, allocator, batchRows, DEFAULT_OFFSET_LIMIT);
    }

    /** As the public constructor, with the offset limit of {@link #isFull} given (tests). */
    ArrowRowWriter(StructType schema, BufferAllocator allocator, int batchRows, long offsetLimit) {
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(allocator, "allocator");
        if (batchRows < 1) {
            throw new IllegalArgumentException("quiver: batchRows must be positive, got " + batchRows);
        }
        this.schema = arrowSchema(schema);
        this.batchRows = batchRows;
        this.startSlots = Math.min(START_SLOTS, batchRows);
        this.offsetLimit = offsetLimit;
        StructField[] fields = schema.fields();
        this.columns = new FieldWriter[fields.length];
        List<FieldWriter> offsets = new ArrayList<>();
        List<FieldVector> made = new ArrayList<>();
        try {
            for (int i = 0; i < fields.length; i++) {
                Field f = this.schema.getFields().get(i);
                FieldVector v = f.createVector(allocator);
                made.add(v);
                columns[i] = FieldWriters.of(fields[i].dataType(), v, fields[i].name(), fields[i].nullable());
                if (hasOffsets(fields[i].dataType())) {
                    offsets.add(columns[i]);
                }
            }
            this.vectors = List.copyOf(made);
            this.root = new VectorSchemaRoot(this.schema.getFields(), vectors, 0);
            allocate();
        } catch (RuntimeException | Error e) {
            for (FieldVector v : made) {
                v.close();
            }
            throw e;
        }
        this.withOffsets = offsets.toArray(new FieldWriter[0]);
    }

    private static boolean hasOffsets(DataType t) {
        if (t instanceof StringType || t instanceof BinaryType || t instanceof ArrayType || t instanceof MapType) {
            return true;
        }
        if (t instanceof StructType st) {
            for (StructField f : st.fields()) {
                if (hasOffsets(f.dataType())) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Every vector emptied and allocated again at the start capacity. */
    private void allocate() {
        for (FieldVector v : vectors) {
            v.clear();
        }
        root.setRowCount(0);
        for (int i = 0; i < columns.length; i++) {
            columns[i].configure(startSlots);
            vectors.get(i).allocateNew();
            columns[i].allocated();
        }
    }

    /** The Arrow schema of the batches ({@link #arrowSchema} of the Spark schema). */
    public Schema schema() {
        return schema;
    }

    /**
     * Appends {@code row}, copying all it holds; keeps no reference to it.
     *
     * @throws IllegalArgumentException when a value cannot be written (a
     *         decimal outside its precision, a null in a non-nullable field,
     *         a value of the wrong class in a generic row, ...), naming the
     *         column path and the row; the writer is poisoned
     * @throws OutOfMemoryException when the allocator refuses to grow a
     *         vector; the writer is poisoned
     * @throws IllegalStateException when the writer is poisoned or closed,
     *         when {@link #finishBatch} was called and {@link #reset} not
     *         yet, or when the batch holds {@code batchRows} rows already
     */
    public void write(InternalRow row) {
        checkUsable("write");
        if (rows >= batchRows) {
            throw new IllegalStateException("quiver: the batch holds its " + batchRows
                    + " rows already; finishBatch() and reset() before writing more");
        }
        int slot = rows;
        FieldWriter[] cs = columns;
        int i = 0;
        try {
            if (row.numFields() < cs.length) {
                throw new IllegalArgumentException("quiver: row " + rowNumber + " has " + row.numFields()
                        + " fields, the schema " + cs.length);
            }
            for (; i < cs.length; i++) {
                cs[i].write(row, i, slot);
            }
        } catch (FieldWriteException e) {
            throw poison(e.path(), e);
        } catch (RuntimeException | Error e) {
            // Only the row itself (numFields) or an Error get here: field
            // writers wrap every RuntimeException of theirs.
            throw poison(i < cs.length ? cs[i].path : "", e);
        }
        rows = slot + 1;
        rowNumber++;
    }

    private RuntimeException poison(String path, Throwable e) {
        Throwable cause = e instanceof FieldWriteException && e.getCause() != null ? e.getCause() : e;
        String message = "quiver: cannot write row " + rowNumber + " (row " + rows + " of the batch), column '"
                + path + "': " + e.getMessage();
        RuntimeException thrown;
        if (cause instanceof OutOfMemoryException) {
            thrown = new OutOfMemoryException(message, cause);
        } else if (e instanceof IllegalArgumentException && !(e instanceof FieldWriteException)) {
            thrown = (IllegalArgumentException) e;
        } else {
            thrown = new IllegalArgumentException(message, cause);
        }
        failure = thrown;
        if (e instanceof Error err) {
            throw err;
        }
        return thrown;
    }

    private void checkUsable(String call) {
        if (closed) {
            throw new IllegalStateException("quiver: " + call + "() on a closed row writer");
        }
        if (failure != null) {
            throw new IllegalStateException("quiver: " + call + "() on a row writer that failed earlier ("
                    + failure.getMessage() + "); it takes no more rows or batches, only close()", failure);
        }
        if (finished && !call.equals("reset")) {
            throw new IllegalStateException("quiver: " + call
                    + "() after finishBatch(); reset() first, once the batch's buffers were handed on");
        }
    }

    /** The rows of the current batch. */
    public int rows() {
        return rows;
    }

    /**
     * Whether the batch must be finished before the next row: it holds
     * {@code batchRows} rows, or a variable-width or list vector holds more
     * than 1 GiB (or 2^30 elements), which keeps int32 offsets safe.
     */
    public boolean isFull() {
        if (rows >= batchRows) {
            return true;
        }
        for (FieldWriter w : withOffsets) {
            if (w.largestOffset() > offsetLimit) {
                return true;
            }
        }
        return false;
    }

    /**
     * The current batch: value counts set, the root holds {@link #rows()}
     * rows. The root stays owned by this writer; after its buffers were
     * moved away or cleared, call {@link #reset}.
     *
     * @throws IllegalStateException when poisoned, closed, or already finished
     */
    public VectorSchemaRoot finishBatch() {
        checkUsable("finishBatch");
        try {
            for (FieldWriter c : columns) {
                c.finish(rows);
            }
            root.setRowCount(rows);
        } catch (RuntimeException e) {
            failure = new IllegalStateException("quiver: finishing a batch of " + rows + " rows failed: " + e, e);
            throw failure;
        }
        finished = true;
        return root;
    }

    /**
     * Every vector back to the start capacity (what the root still holds is
     * released); {@link #rows()} becomes 0. Also discards a batch that was
     * not finished.
     *
     * @throws IllegalStateException when poisoned or closed
     */
    public void reset() {
        checkUsable("reset");
        try {
            allocate();
        } catch (RuntimeException e) {
            failure = e instanceof OutOfMemoryException
                    ? new OutOfMemoryException("quiver: allocating the next batch's vectors failed: " + e.getMessage(), e)
                    : new IllegalStateException("quiver: allocating the next batch's vectors failed: " + e, e);
            throw failure;
        }
        rows = 0;
        finished = false;
    }

    /** The bytes of the buffers the vectors hold now. */
    public long allocatedBytes() {
        if (closed) {
            return 0;
        }
        long n = 0;
        for (FieldWriter c : columns) {
            n += c.allocatedBytes();
        }
        return n;
    }

    /** Releases every vector. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        root.close();
    }
}
