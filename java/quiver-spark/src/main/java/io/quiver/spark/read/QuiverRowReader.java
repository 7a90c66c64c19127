package io.quiver.spark.read;

import java.io.IOException;
import java.util.Iterator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * Rows of a {@link QuiverColumnarReader}'s batches, one at a time. The row
 * returned by {@link #get()} is a view into the current batch, valid until
 * the next call of {@link #next()} (as Spark's own vectorized readers hand
 * out rows); Spark copies what it keeps.
 */
final class QuiverRowReader implements PartitionReader<InternalRow> {
    private final QuiverColumnarReader batches;
    private Iterator<InternalRow> rows;
    private InternalRow row;

    QuiverRowReader(QuiverColumnarReader batches) {
        this.batches = batches;
    }

    @Override
    public boolean next() throws IOException {
        while (rows == null || !rows.hasNext()) {
            if (!batches.next()) {
                row = null;
                return false;
            }
            rows = batches.get().rowIterator();
        }
        row = rows.next();
        return true;
    }

    @Override
    public InternalRow get() {
        return row;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return batches.currentMetricsValues();
    }

    @Override
    public void close() throws IOException {
        rows = null;
        row = null;
        batches.close();
    }
}
