package io.quiver.spark.write;

import io.quiver.spark.memory.TaskMemory;
import java.nio.file.Path;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;

/**
 * Sent to the executors: everything a task needs to write its rows (the
 * rows' schema, the partition columns' ordinals, the options, the job's
 * layout, the session's time zone). Each task attempt gets a writer whose
 * Arrow vectors come from its {@link TaskMemory#writeAllocator()} and whose
 * native buffering is charged to its {@link TaskMemory#pool()}.
 */
public final class QuiverDataWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;

    private final WriteLayout layout;
    private final StructType schema;
    private final int[] partitionOrdinals;
    private final QuiverWriteOptions options;
    private final String timeZone;

    public QuiverDataWriterFactory(WriteLayout layout, StructType schema, int[] partitionOrdinals,
            QuiverWriteOptions options, String timeZone) {
        this.layout = layout;
        this.schema = schema;
        this.partitionOrdinals = partitionOrdinals.clone();
        this.options = options;
        this.timeZone = timeZone;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        TaskMemory memory = TaskMemory.get(TaskContext.get());
        Path attempt = layout.attempt(partitionId, taskId);
        StructType dataSchema = PartitionedDataWriter.dataSchema(schema, partitionOrdinals);
        // Converted once per task: every file of the task shares it.
        Schema arrowSchema = ArrowRowWriter.arrowSchema(dataSchema);
        if (partitionOrdinals.length == 0) {
            StagedFileWriter f = new StagedFileWriter(dataSchema, arrowSchema, attempt,
                    layout.fileName(partitionId, 0), options, memory.writeAllocator(), memory.pool());
            // As Spark's file sources do, partition 0 writes its file even without rows, so that the
            // schema of an empty DataFrame (which runs one task of no rows) is kept.
            return new SingleFileDataWriter(f, attempt, partitionId, taskId, partitionId == 0);
        }
        return new PartitionedDataWriter(schema, partitionOrdinals, timeZone, attempt, partitionId, taskId,
                options.maxOpenFiles(), (dir, n) -> new StagedFileWriter(dataSchema, arrowSchema, attempt,
                        dir + "/" + layout.fileName(partitionId, n), options, memory.writeAllocator(), memory.pool()));
    }
}
