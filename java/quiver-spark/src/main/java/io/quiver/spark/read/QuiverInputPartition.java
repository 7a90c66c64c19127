package io.quiver.spark.read;

import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * What one Spark task reads: slices of one or more files (small files are
 * packed together, a large file is cut into several partitions by row
 * group). Plain Java data: it is serialized to the executor, which opens the
 * files itself.
 *
 * @param index  the partition's position in the scan's plan
 * @param slices the file slices, read in order
 */
public record QuiverInputPartition(int index, List<FileSlice> slices) implements InputPartition {
    public QuiverInputPartition {
        slices = List.copyOf(slices);
    }
}
