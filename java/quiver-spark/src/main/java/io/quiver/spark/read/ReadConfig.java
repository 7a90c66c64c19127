package io.quiver.spark.read;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.types.StructType;

/**
 * Everything an executor needs to read the slices of a
 * {@link QuiverInputPartition}, fixed on the driver once pushdown is done and
 * shipped inside the partition reader factory.
 *
 * @param dataSchema       the data columns the scan outputs, nested-pruned, in
 *                         output order (Spark's types after the scan's casts)
 * @param partitionSchema  the partition columns, appended after the data
 *                         columns in every batch (constant per slice)
 * @param columns          Quiver column names of the projected fields
 *                         (dotted, quoted as the file layer's one name rule
 *                         wants: {@code "s"."a"}); one per leaf or whole
 *                         column asked for; empty: no data column (rows
 *                         counted only)
 * @param filter           the Quiver filter text of the pushed predicates, to
 *                         be evaluated with NaN ordered as Spark orders it
 *                         ({@code NanOrder.LARGEST}); null: none
 * @param limit            rows each task may stop after (a pushed LIMIT); 0: none
 * @param batchRows        rows per Arrow batch
 * @param threads          native decode workers per task ({@code -1}: decode on
 *                         the task thread)
 * @param prefetch         completed batches waiting at most
 * @param ignoreMissingFiles {@code spark.sql.files.ignoreMissingFiles}
 * @param ignoreCorruptFiles {@code spark.sql.files.ignoreCorruptFiles}
 */
public record ReadConfig(StructType dataSchema, StructType partitionSchema, List<String> columns, String filter,
        long limit, long batchRows, int threads, int prefetch, boolean ignoreMissingFiles,
        boolean ignoreCorruptFiles) implements Serializable {
    public ReadConfig {
        columns = List.copyOf(columns);
    }
}
