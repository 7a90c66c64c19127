package io.quiver.spark.read;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * The executor side of a Quiver scan: made on the driver with the scan's
 * {@link ReadConfig}, serialized to the executors, where it opens one reader
 * per {@link QuiverInputPartition}. Columnar reads are the native path
 * (Arrow batches of the native scan, wrapped without copying); the row
 * reader, for when Spark asks for rows, walks the same batches row by row.
 */
public final class QuiverPartitionReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final ReadConfig config;

    public QuiverPartitionReaderFactory(ReadConfig config) {
        if (config == null) {
            throw new IllegalArgumentException("QuiverPartitionReaderFactory: no ReadConfig (null)");
        }
        this.config = config;
    }

    /** The settings every reader of this factory uses. */
    public ReadConfig config() {
        return config;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return partition instanceof QuiverInputPartition;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new QuiverColumnarReader(config, quiver(partition));
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new QuiverRowReader(new QuiverColumnarReader(config, quiver(partition)));
    }

    private static QuiverInputPartition quiver(InputPartition partition) {
        if (partition instanceof QuiverInputPartition q) {
            return q;
        }
        throw new IllegalArgumentException("Quiver's reader factory got a partition of another source: "
                + (partition == null ? "null" : partition.getClass().getName()));
    }
}
