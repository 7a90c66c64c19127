package io.quiver.bench;

import io.quiver.spark.QuiverDataSource;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The two writers of the writer-alone benchmark, each driven the way Spark
 * drives it, minus the query around it:
 * <ul>
 * <li>{@link Parquet}: Spark's built-in Parquet writer as FileFormatWriter
 * uses it: {@code ParquetFileFormat.prepareWrite} on the driver (a Hadoop
 * {@link Job} carrying the write support's settings), then per task a
 * {@link TaskAttemptContext} with the attempt's ids,
 * {@code OutputWriterFactory.newInstance}, {@code OutputWriter.write} per row
 * and {@code close};</li>
 * <li>{@link Quiver}: {@code format("quiver")}'s DataSource V2 write as
 * Spark's V2 write path uses it: {@code getTable} with the write's schema and
 * partitioning, {@code newWriteBuilder(LogicalWriteInfo)} then {@code build()},
 * {@code toBatch()} and {@code createBatchWriterFactory} on the driver; per
 * task {@code createWriter(partition, taskId)}, {@code write} per row,
 * {@code commit} and {@code close}; the job's {@code BatchWrite.commit} on the
 * driver publishes the file.</li>
 * </ul>
 * The driver halves are made on the driver; the task halves run inside a
 * Spark task (the Quiver writer charges its memory to the task's
 * TaskMemory, which needs the task's TaskContext).
 */
final class BenchWriters {
    private BenchWriters() {}

    /** Spark's Parquet writer, prepared on the driver for one schema and codec. */
    static final class Parquet {
        private final OutputWriterFactory factory;
        private final Configuration conf;
        private final StructType schema;

        Parquet(SparkSession spark, StructType schema, String codec) throws Exception {
            Job job = Job.getInstance(new Configuration(spark.sparkContext().hadoopConfiguration()));
            job.setOutputKeyClass(Void.class);
            job.setOutputValueClass(InternalRow.class);
            scala.collection.immutable.Map<String, String> options =
                    new scala.collection.immutable.Map.Map1<>("compression", codec);
            this.factory = new ParquetFileFormat().prepareWrite(spark, job, options, schema);
            this.conf = job.getConfiguration();
            this.schema = schema;
        }

        /** In a task: a writer of one file in {@code dir}, as FileFormatWriter's task setup makes it. */
        OutputWriter open(String dir, int partition) {
            Configuration c = new Configuration(conf);
            JobID job = new JobID("quiverbench", 0);
            TaskAttemptID attempt = new TaskAttemptID(new TaskID(job, TaskType.MAP, partition), 0);
            c.set("mapreduce.job.id", job.toString());
            c.set("mapreduce.task.id", attempt.getTaskID().toString());
            c.set("mapreduce.task.attempt.id", attempt.toString());
            c.setBoolean("mapreduce.task.ismap", true);
            c.setInt("mapreduce.task.partition", partition);
            TaskAttemptContext ctx = new TaskAttemptContextImpl(c, attempt);
            String path = String.format("%s/part-%05d-%s%s", dir, partition, UUID.randomUUID(),
                    factory.getFileExtension(ctx));
            return factory.newInstance(path, schema, ctx);
        }
    }

    /** {@code format("quiver")}'s V2 batch write, planned on the driver for one output directory. */
    static final class Quiver {
        private final BatchWrite batch;
        private final DataWriterFactory factory;

        /**
         * Plans a write of {@code schema} into {@code dir} (mode Append, as
         * {@code df.write.mode("append")} plans it), partitioned by
         * {@code partitionBy} (Hive directories), with the writer's
         * {@code options}.
         */
        Quiver(StructType schema, String dir, List<String> partitionBy, Map<String, String> options) {
            Map<String, String> props = new HashMap<>(options);
            props.put("path", dir);
            if (!partitionBy.isEmpty()) {
                // How DataFrameWriter.partitionBy reaches a TableProvider.
                StringBuilder json = new StringBuilder("[");
                for (String c : partitionBy) {
                    json.append(json.length() > 1 ? "," : "").append('"').append(c).append('"');
                }
                props.put("__partition_columns", json.append(']').toString());
            }
            Transform[] parts = partitionBy.stream().map(Expressions::identity).toArray(Transform[]::new);
            Table table = new QuiverDataSource().getTable(schema, parts, props);
            if (!(table instanceof SupportsWrite writable)) {
                throw new IllegalStateException("format(\"quiver\")'s table " + table.getClass().getName()
                        + " does not support writing (issue 13's write path is not in this build)");
            }
            CaseInsensitiveStringMap opts = new CaseInsensitiveStringMap(props);
            String queryId = UUID.randomUUID().toString();
            LogicalWriteInfo info = new LogicalWriteInfo() {
                @Override
                public CaseInsensitiveStringMap options() {
                    return opts;
                }

                @Override
                public String queryId() {
                    return queryId;
                }

                @Override
                public StructType schema() {
                    return schema;
                }

                @Override
                public Optional<StructType> rowIdSchema() {
                    return Optional.empty();
                }

                @Override
                public Optional<StructType> metadataSchema() {
                    return Optional.empty();
                }
            };
            this.batch = writable.newWriteBuilder(info).build().toBatch();
            this.factory = batch.createBatchWriterFactory(() -> 1);
        }

        /** In a task: the task's DataWriter. */
        DataWriter<InternalRow> open(int partition, long taskId) {
            return factory.createWriter(partition, taskId);
        }

        /** On the driver: publishes what the tasks committed. */
        void commit(WriterCommitMessage... messages) {
            batch.commit(messages);
        }

        /** On the driver: discards the job's files. */
        void abort(WriterCommitMessage... messages) {
            batch.abort(messages);
        }
    }
}
