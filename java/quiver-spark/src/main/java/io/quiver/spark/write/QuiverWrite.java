package io.quiver.spark.write;

import java.util.UUID;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.types.StructType;

/**
 * One planned write of Quiver files, checked by {@link QuiverWriteBuilder}:
 * {@link #toBatch} starts the job (a fresh job id, its staging folder).
 */
public final class QuiverWrite implements Write {
    private final String target;
    private final StructType schema;
    private final int[] partitionOrdinals;
    private final QuiverWriteOptions options;
    private final String timeZone;
    private final boolean truncate;

    QuiverWrite(String target, StructType schema, int[] partitionOrdinals, QuiverWriteOptions options,
            String timeZone, boolean truncate) {
        this.target = target;
        this.schema = schema;
        this.partitionOrdinals = partitionOrdinals;
        this.options = options;
        this.timeZone = timeZone;
        this.truncate = truncate;
    }

    @Override
    public String description() {
        StringBuilder b = new StringBuilder("quiver ").append(truncate ? "overwrite " : "append ").append(target);
        if (partitionOrdinals.length > 0) {
            b.append(" partitionBy");
            for (int o : partitionOrdinals) {
                b.append(' ').append(schema.fields()[o].name());
            }
        }
        return b.toString();
    }

    @Override
    public BatchWrite toBatch() {
        return new QuiverBatchWrite(new WriteLayout(target, UUID.randomUUID().toString()), schema,
                partitionOrdinals, options, timeZone, truncate);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return WriteMetrics.supported();
    }
}
