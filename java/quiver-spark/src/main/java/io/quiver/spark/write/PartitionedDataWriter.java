package io.quiver.spark.write;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.ProjectingInternalRow;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A task attempt's writer for a {@code partitionBy} write: one staged file
 * per partition value, in Hive directories ({@code k=v/...}) named as
 * Spark's file sources name them: each value cast to a string as Spark
 * casts it (in the session's time zone), escaped by
 * {@link ExternalCatalogUtils#getPartitionPathString}, null or empty
 * becoming {@code __HIVE_DEFAULT_PARTITION__}. The partition columns are
 * left out of the files' data.
 *
 * <p>Rows need not come sorted: at most {@code maxOpenFiles} files are
 * open at once, and opening one more finishes the least recently used; a
 * later row of its partition starts the directory's next file
 * ({@code c001}, ...). The partition key is copied out of the (reused) row
 * before it is kept.
 *
 * <p><b>Failures.</b> A child that throws poisons this writer too: later
 * writes throw, and {@link #commit} aborts every child and throws.
 * {@link #abort} aborts every child even when some throw (their exceptions
 * are attached to the first as suppressed), then removes the attempt's
 * folder; abort and {@link #close} are idempotent.
 */
final class PartitionedDataWriter implements DataWriter<InternalRow> {
    private final Path attemptDir;
    private final int partitionId;
    private final long taskId;
    private final int maxOpenFiles;
    private final String[] partitionNames;
    private final UnsafeProjection keyProjection;
    private final Expression[] asString;
    private final ProjectingInternalRow dataRow;
    /** Makes the child for a relative path. */
    private final BiFunction<String, Integer, StagedFileWriter> newChild;

    /** Open children in access order: the first is the least recently used. */
    private final LinkedHashMap<UnsafeRow, Child> open = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<String, Integer> filesPerDir = new HashMap<>();
    private final List<QuiverCommitMessage.StagedFile> finished = new ArrayList<>();
    private Child last;
    private long rows;
    private Throwable failure;
    private QuiverCommitMessage committed;
    private boolean aborted;

    private record Child(UnsafeRow key, String dir, StagedFileWriter writer) {}

    /**
     * @param schema              the rows' schema (data and partition columns)
     * @param partitionOrdinals   the partition columns' ordinals in it, in partitionBy order
     * @param timeZone            the session's time zone (partition values of timestamps)
     * @param newChild            makes the staged file of a relative path, given the directory and the file's number
     */
    PartitionedDataWriter(StructType schema, int[] partitionOrdinals, String timeZone, Path attemptDir,
            int partitionId, long taskId, int maxOpenFiles, BiFunction<String, Integer, StagedFileWriter> newChild) {
        this.attemptDir = attemptDir;
        this.partitionId = partitionId;
        this.taskId = taskId;
        this.maxOpenFiles = maxOpenFiles;
        this.newChild = newChild;
        int k = partitionOrdinals.length;
        this.partitionNames = new String[k];
        List<Expression> keyExprs = new ArrayList<>();
        this.asString = new Expression[k];
        boolean[] isPartition = new boolean[schema.length()];
        for (int i = 0; i < k; i++) {
            StructField f = schema.fields()[partitionOrdinals[i]];
            partitionNames[i] = f.name();
            isPartition[partitionOrdinals[i]] = true;
            keyExprs.add(new BoundReference(partitionOrdinals[i], f.dataType(), f.nullable()));
            asString[i] = new Cast(new BoundReference(i, f.dataType(), true), DataTypes.StringType,
                    Option.apply(timeZone));
        }
        this.keyProjection = UnsafeProjection.create(CollectionConverters.asScala(keyExprs).toSeq());
        List<StructField> dataFields = new ArrayList<>();
        List<Object> dataOrdinals = new ArrayList<>();
        for (int i = 0; i < schema.length(); i++) {
            if (!isPartition[i]) {
                dataFields.add(schema.fields()[i]);
                dataOrdinals.add(i);
            }
        }
        this.dataRow = ProjectingInternalRow.apply(new StructType(dataFields.toArray(new StructField[0])),
                CollectionConverters.asScala(dataOrdinals).toSeq());
    }

    /** The data columns of {@code schema}: all but the partition columns. */
    static StructType dataSchema(StructType schema, int[] partitionOrdinals) {
        boolean[] isPartition = new boolean[schema.length()];
        for (int o : partitionOrdinals) {
            isPartition[o] = true;
        }
        List<StructField> out = new ArrayList<>();
        for (int i = 0; i < schema.length(); i++) {
            if (!isPartition[i]) {
                out.add(schema.fields()[i]);
            }
        }
        return new StructType(out.toArray(new StructField[0]));
    }

    @Override
    public void write(InternalRow row) {
        if (failure != null) {
            throw new IllegalStateException("quiver: task attempt " + taskId + ": the writer failed earlier: "
                    + failure, failure);
        }
        if (aborted || committed != null) {
            throw new IllegalStateException("quiver: write after " + (aborted ? "abort" : "commit") + " of task attempt "
                    + taskId);
        }
        try {
            UnsafeRow key = keyProjection.apply(row);
            Child c = last;
            if (c == null || !c.key().equals(key)) {
                c = open.get(key);
                if (c == null) {
                    c = openChild(key.copy());
                }
                last = c;
            }
            dataRow.project(row);
            c.writer().write(dataRow);
            rows++;
        } catch (RuntimeException | Error e) {
            failure = e;
            throw e;
        }
    }

    private Child openChild(UnsafeRow key) {
        if (open.size() >= maxOpenFiles) {
            Iterator<Map.Entry<UnsafeRow, Child>> it = open.entrySet().iterator();
            Child eldest = it.next().getValue();
            it.remove();
            if (last == eldest) {
                last = null;
            }
            finished.add(eldest.writer().finish(false));
        }
        String dir = directory(key);
        int n = filesPerDir.merge(dir, 1, Integer::sum) - 1;
        StagedFileWriter w = newChild.apply(dir, n);
        Child c = new Child(key, dir, w);
        open.put(key, c);
        return c;
    }

    /** The Hive directories of a partition key, e.g. {@code year=2024/city=S%3A%2Fo}. */
    private String directory(UnsafeRow key) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < asString.length; i++) {
            Object v = asString[i].eval(key);
            String s = v == null ? null : ((UTF8String) v).toString();
            if (i > 0) {
                b.append('/');
            }
            b.append(ExternalCatalogUtils.getPartitionPathString(partitionNames[i], s));
        }
        return b.toString();
    }

    @Override
    public QuiverCommitMessage commit() {
        if (committed != null) {
            return committed;
        }
        if (aborted) {
            throw new IllegalStateException("quiver: commit after abort of task attempt " + taskId);
        }
        if (failure != null) {
            Throwable cause = failure;
            abort();
            throw new IllegalStateException("quiver: task attempt " + taskId + " cannot commit: its write failed: "
                    + cause, cause);
        }
        try {
            Iterator<Child> it = open.values().iterator();
            while (it.hasNext()) {
                Child c = it.next();
                QuiverCommitMessage.StagedFile f = c.writer().finish(false);
                it.remove();
                if (f != null) {
                    finished.add(f);
                }
            }
        } catch (RuntimeException | Error e) {
            failure = e;
            FirstFailure.abortAfter(e, this::abort);
            throw e;
        }
        last = null;
        List<QuiverCommitMessage.StagedFile> files = new ArrayList<>();
        for (QuiverCommitMessage.StagedFile f : finished) {
            if (f != null) {
                files.add(f);
            }
        }
        committed = new QuiverCommitMessage(partitionId, taskId, files);
        return committed;
    }

    @Override
    public void abort() {
        if (aborted || committed != null) {
            return;
        }
        aborted = true;
        last = null;
        FirstFailure first = new FirstFailure();
        for (Child c : open.values()) {
            try {
                c.writer().abort();
            } catch (RuntimeException | Error e) {
                first.add(e);
            }
        }
        open.clear();
        try {
            StagingFolders.deleteTree(attemptDir);
        } catch (RuntimeException e) {
            first.add(e);
        }
        first.rethrow();
    }

    @Override
    public void close() {
        if (committed == null) {
            abort();
        }
    }

    /** Files open now (tests). */
    int openFiles() {
        return open.size();
    }

    /** Arrow bytes held by the open files' vectors. */
    long allocatedBytes() {
        long n = 0;
        for (Child c : open.values()) {
            n += c.writer().allocatedBytes();
        }
        return n;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        long bytes = 0;
        long files = 0;
        for (QuiverCommitMessage.StagedFile f : finished) {
            if (f != null) {
                bytes += f.bytes();
                files++;
            }
        }
        return WriteMetrics.task(rows, files, bytes);
    }
}
