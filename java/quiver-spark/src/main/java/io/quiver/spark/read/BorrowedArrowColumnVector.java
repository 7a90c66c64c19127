package io.quiver.spark.read;

import org.apache.arrow.vector.ValueVector;
import org.apache.spark.sql.vectorized.ArrowColumnVector;

/**
 * An {@link ArrowColumnVector} over a vector of the scan's root, which the
 * reader owns and reloads for every batch. Spark frees a batch's columns
 * when it moves to the next one ({@code ColumnarBatch.closeIfFreeable}, which
 * for a plain ArrowColumnVector closes the Arrow vector): that would close
 * the root's vector under the reader (a struct vector even loses its
 * children, and the next load fails). So closing this column does nothing;
 * the reader releases the batch when it loads the next one or closes.
 */
final class BorrowedArrowColumnVector extends ArrowColumnVector {
    BorrowedArrowColumnVector(ValueVector vector) {
        super(vector);
    }

    @Override
    public void closeIfFreeable() {
        // The reader's, not Spark's, to free.
    }

    @Override
    public void close() {
        // The reader's, not Spark's, to free.
    }
}
