package io.quiver.spark.read;

import io.quiver.FileOptions;
import io.quiver.QuiverCancelledException;
import io.quiver.QuiverCorruptException;
import io.quiver.QuiverException;
import io.quiver.QuiverFile;
import io.quiver.QuiverFileChangedException;
import io.quiver.QuiverIOException;
import io.quiver.QuiverNotFoundException;
import io.quiver.QuiverOutOfMemoryException;
import io.quiver.QuiverScanReader;
import io.quiver.ScanOptions;
import io.quiver.ScanStats;
import io.quiver.Cast;
import io.quiver.NanOrder;
import io.quiver.spark.memory.TaskMemory;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ColumnVectorUtils;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the {@link FileSlice}s of one {@link QuiverInputPartition}, in
 * order, inside a Spark task: each slice is a native scan of its row groups
 * (columns, pushed filter, limit, casts for Spark), charged to the task's
 * {@link TaskMemory}; each Arrow batch becomes a {@link ColumnarBatch} of
 * {@code ArrowColumnVector}s (no copy) in the order of
 * {@link ReadConfig#dataSchema()}, followed by the partition columns as
 * constants of the slice.
 *
 * <p><b>Lifetime.</b> A batch is valid until the next {@link #next()}: the
 * next load releases it, and the end of a slice closes its scan and file.
 * {@link #close()} releases everything; a task completion listener calls it
 * too, so a task that stops early (a satisfied LIMIT, a failure, a kill)
 * frees its native memory before the task's memory is checked. A task
 * interrupt listener cancels the native scan from the killing thread, so a
 * killed task stops decoding at once rather than when the current batch
 * would have been complete.
 *
 * <p><b>Errors.</b> As Spark's own file readers: a missing file is
 * {@code FAILED_READ_FILE.FILE_NOT_EXIST} (skipped with a warning under
 * {@code ignoreMissingFiles}); a corrupt file, or one replaced since
 * planning, a {@code FAILED_READ_FILE} SparkException carrying Quiver's
 * message (the rest of the slice skipped with a warning under
 * {@code ignoreCorruptFiles}); native memory exhaustion Spark's
 * {@code SparkOutOfMemoryError} naming the pool's largest consumers.
 */
final class QuiverColumnarReader implements PartitionReader<ColumnarBatch> {
    private static final Logger LOG = LoggerFactory.getLogger(QuiverColumnarReader.class);

    private final ReadConfig config;
    private final List<FileSlice> slices;
    private final TaskContext context;
    private final TaskMemory memory;

    private int nextSlice;
    private FileSlice slice;          // the slice being read, or null
    private QuiverFile file;          // its file
    private volatile QuiverScanReader reader; // its scan; volatile: the interrupt listener cancels it
    private volatile boolean cancelled;
    private int[] rootIndex;          // per data column: its vector in the scan's root, or -1 (not in the file)
    private ColumnarBatch batch;
    private long rowsOut;
    private boolean closed;

    // Metrics of the slices already closed; the open one's are read live.
    private long rowGroupsPruned;
    private long rowsFiltered;
    private long bytesRead;

    QuiverColumnarReader(ReadConfig config, QuiverInputPartition partition) {
        this.config = config;
        this.slices = partition.slices();
        this.context = TaskContext.get();
        // Before the listeners below: completion listeners run in reverse
        // order of registration, so this reader's close runs before the
        // TaskMemory's balance check.
        this.memory = TaskMemory.get(context);
        context.addTaskCompletionListener(ctx -> {
            try {
                close();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        context.addTaskInterruptListener((org.apache.spark.util.TaskInterruptListener) (ctx, reason) -> cancel());
    }

    /** Stops the native scan from any thread; the task thread then fails as killed. */
    void cancel() {
        cancelled = true;
        QuiverScanReader r = reader;
        if (r != null) {
            r.cancel();
        }
    }

    @Override
    public boolean next() throws IOException {
        while (true) {
            if (closed || (config.limit() > 0 && rowsOut >= config.limit())) {
                closeSlice();
                return false;
            }
            if (cancelled) {
                context.killTaskIfInterrupted();
            }
            if (reader == null) {
                if (nextSlice >= slices.size()) {
                    return false;
                }
                openSlice(slices.get(nextSlice++));
                continue;
            }
            boolean got;
            try {
                got = reader.loadNextBatch();
            } catch (QuiverException e) {
                fail(e, false);
                continue; // the slice was skipped (ignoreCorruptFiles)
            }
            if (!got) {
                closeSlice();
                continue;
            }
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            int n = root.getRowCount();
            if (n == 0) {
                continue;
            }
            batch = toBatch(root, n);
            rowsOut += n;
            return true;
        }
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    private void openSlice(FileSlice s) {
        slice = s;
        try {
            file = QuiverFile.open(s.path(), FileOptions.defaults().expect(s.identity()).pool(memory.pool()));
        } catch (QuiverException e) {
            fail(e, true);
            return;
        }
        try {
            List<String> present = fileColumns(file.schema().getFields(), config.columns());
            ScanOptions.Builder b = ScanOptions.builder()
                    .rowGroups(s.rowGroupBegin(), s.rowGroupEnd())
                    .columns(present)
                    .filter(config.filter())
                    // Spark's float order: NaN above every number, NaN = NaN.
                    .nanOrder(NanOrder.LARGEST)
                    .cast(Cast.SPARK)
                    .threads(config.threads())
                    .prefetch(config.prefetch())
                    .batchRows(config.batchRows());
            if (config.limit() > 0) {
                b.limit(config.limit() - rowsOut);
            }
            reader = file.scan(memory.importAllocator(), b.build());
            if (cancelled) {
                reader.cancel();
            }
            Map<String, Integer> out = fieldIndex(reader.getVectorSchemaRoot().getSchema().getFields());
            StructField[] fields = config.dataSchema().fields();
            rootIndex = new int[fields.length];
            for (int i = 0; i < fields.length; i++) {
                rootIndex[i] = lookup(out, fields[i].name());
            }
        } catch (QuiverException e) {
            fail(e, false);
        } catch (IOException e) {
            closeSlice();
            throw sneaky(failedRead(s.path(), e.getMessage(), e));
        }
    }

    private ColumnarBatch toBatch(VectorSchemaRoot root, int n) {
        StructType data = config.dataSchema();
        StructType parts = config.partitionSchema();
        ColumnVector[] v = new ColumnVector[data.size() + parts.size()];
        for (int i = 0; i < data.size(); i++) {
            if (rootIndex[i] >= 0) {
                StructField f = data.fields()[i];
                try {
                    // By name and declared type: a file's struct may order or lack fields otherwise.
                    v[i] = ConformedColumns.of(root.getVector(rootIndex[i]), f.dataType(), f.name(), slice.path());
                } catch (IllegalArgumentException e) {
                    String path = slice.path();
                    closeSlice();
                    throw sneaky(failedRead(path, e.getMessage(), e));
                }
            } else {
                ConstantColumnVector c = new ConstantColumnVector(n, data.fields()[i].dataType());
                c.setNull();
                v[i] = c;
            }
        }
        InternalRow values = slice.partitionValues();
        for (int j = 0; j < parts.size(); j++) {
            ConstantColumnVector c = new ConstantColumnVector(n, parts.fields()[j].dataType());
            ColumnVectorUtils.populate(c, values, j);
            v[data.size() + j] = c;
        }
        return new ColumnarBatch(v, n);
    }

    /**
     * Turns a Quiver error of the current slice into Spark's, or skips the
     * slice (ignoreMissingFiles / ignoreCorruptFiles). Returns only when
     * the slice was skipped; the slice is closed either way.
     */
    private void fail(QuiverException e, boolean atOpen) {
        String path = slice.path();
        // Built before the slice is closed: the pool's figures then still
        // show what the scan held when it ran out.
        OutOfMemoryError oom = e instanceof QuiverOutOfMemoryException ? outOfMemory(e) : null;
        closeSlice();
        if (oom != null) {
            throw oom;
        }
        if (e instanceof QuiverCancelledException) {
            context.killTaskIfInterrupted();
            throw e;
        }
        if (atOpen && e instanceof QuiverNotFoundException) {
            if (config.ignoreMissingFiles()) {
                LOG.warn("Skipped missing file: {}", path, e);
                return;
            }
            FileNotFoundException fnf = new FileNotFoundException(e.getMessage());
            fnf.initCause(e);
            throw sneaky(org.apache.spark.sql.errors.QueryExecutionErrors.fileNotExistError(path, fnf));
        }
        boolean fileFault = e instanceof QuiverCorruptException || e instanceof QuiverFileChangedException
                || e instanceof QuiverIOException;
        if (fileFault && config.ignoreCorruptFiles()) {
            LOG.warn("Skipped the rest of the content in the corrupted file: {}", path, e);
            return;
        }
        throw sneaky(failedRead(path, e.getMessage(), e));
    }

    /** FAILED_READ_FILE with Quiver's message (which names the file, column and row group) in the message itself. */
    static org.apache.spark.SparkException failedRead(String path, String why, Throwable cause) {
        String cls = "FAILED_READ_FILE.NO_HINT";
        String msg = "[" + cls + "] Encountered error while reading file " + path + ". " + why;
        scala.collection.immutable.Map<String, String> params = new scala.collection.immutable.Map.Map1<>("path", path);
        return new org.apache.spark.SparkException(msg, cause, scala.Option.apply(cls), params,
                new org.apache.spark.QueryContext[0]);
    }

    private static final java.util.regex.Pattern GRANTED =
            java.util.regex.Pattern.compile("host granted (\\d+) of (\\d+) bytes asked");
    private static final java.util.regex.Pattern GROW =
            java.util.regex.Pattern.compile("cannot grow by (\\d+) bytes");

    /**
     * Spark's error for a task that cannot get memory
     * (UNABLE_TO_ACQUIRE_MEMORY), which an executor survives; Quiver's
     * message (the pool, the reservation, the five largest consumers) and
     * the task pool's figures ride in its text, the Quiver exception as cause.
     */
    private OutOfMemoryError outOfMemory(QuiverException e) {
        String m = e.getMessage() == null ? "" : e.getMessage();
        String asked = "?";
        String granted = "0";
        java.util.regex.Matcher g = GRANTED.matcher(m);
        if (g.find()) {
            granted = g.group(1);
            asked = g.group(2);
        } else {
            java.util.regex.Matcher w = GROW.matcher(m);
            if (w.find()) {
                asked = w.group(1);
            }
        }
        String pool;
        try {
            io.quiver.memory.PoolStats st = memory.pool().stats();
            pool = "; the task's Quiver pool holds " + st.hostHeld() + " bytes of task memory (" + st.used()
                    + " in use by " + st.reservations() + " reservations, peak reserved " + st.peakReserved()
                    + ", out-of-memory errors " + st.oomCount() + ")";
        } catch (RuntimeException ignored) {
            pool = "";
        }
        Map<String, String> params = new HashMap<>();
        params.put("requestedBytes", asked);
        params.put("receivedBytes", granted + ". Quiver: " + m + pool
                + ". Raise spark.memory.offHeap.size or lower the scan's batch rows or threads");
        org.apache.spark.memory.SparkOutOfMemoryError oom =
                new org.apache.spark.memory.SparkOutOfMemoryError("UNABLE_TO_ACQUIRE_MEMORY", params);
        oom.initCause(e);
        return oom;
    }

    private void closeSlice() {
        QuiverScanReader r = reader;
        if (r != null) {
            try {
                ScanStats st = r.stats();
                rowGroupsPruned += st.rowGroupsPruned();
                rowsFiltered += st.rowsFiltered();
                bytesRead += st.bytesRead();
            } catch (RuntimeException ignored) {
                // A stream that failed still reports; one that cannot adds nothing.
            }
            reader = null;
            try {
                r.close();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        if (file != null) {
            file.close();
            file = null;
        }
        batch = null;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        long pruned = rowGroupsPruned;
        long filtered = rowsFiltered;
        long bytes = bytesRead;
        QuiverScanReader r = reader;
        if (r != null) {
            try {
                ScanStats st = r.stats();
                pruned += st.rowGroupsPruned();
                filtered += st.rowsFiltered();
                bytes += st.bytesRead();
            } catch (RuntimeException ignored) {
                // closed under us (a kill): the closed slices' figures stand
            }
        }
        return new CustomTaskMetric[] {
            QuiverMetrics.task(QuiverMetrics.ROW_GROUPS_PRUNED, pruned),
            QuiverMetrics.task(QuiverMetrics.ROWS_FILTERED_NATIVELY, filtered),
            QuiverMetrics.task(QuiverMetrics.BYTES_READ, bytes),
        };
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        closeSlice();
    }

    // ---- names ----

    private static Map<String, Integer> fieldIndex(List<Field> fields) {
        Map<String, Integer> m = new HashMap<>();
        for (int i = 0; i < fields.size(); i++) {
            m.putIfAbsent(fields.get(i).getName(), i);
        }
        return m;
    }

    /** The field named {@code name}: exactly, else the one matching it ignoring case; -1 if none or ambiguous. */
    private static int lookup(Map<String, Integer> byName, String name) {
        Integer i = byName.get(name);
        if (i != null) {
            return i;
        }
        int found = -1;
        for (Map.Entry<String, Integer> e : byName.entrySet()) {
            if (e.getKey().toLowerCase(Locale.ROOT).equals(name.toLowerCase(Locale.ROOT))) {
                if (found >= 0) {
                    return -1;
                }
                found = e.getValue();
            }
        }
        return found;
    }

    /**
     * The config's columns as this file spells them: the scan matches names
     * exactly, while the read schema (merged ignoring case, or the user's)
     * may spell a column otherwise, and a struct field of the merged schema
     * may be missing from this file's struct. Each name is resolved field by
     * field (exactly, else the only one equal ignoring case); a column whose
     * top-level name the file lacks is left out (the reader delivers nulls),
     * one whose struct lacks a field is read as its longest present prefix
     * (the whole struct, which {@link ConformedColumns} narrows by name), and
     * a column inside another one kept is dropped, so no column is scanned twice.
     */
    static List<String> fileColumns(List<Field> fields, List<String> columns) {
        List<List<String>> paths = new ArrayList<>();
        for (String c : columns) {
            List<String> resolved = new ArrayList<>();
            List<Field> level = fields;
            for (String name : namePath(c)) {
                Field f = level == null ? null : field(level, name);
                if (f == null) {
                    break;
                }
                resolved.add(f.getName());
                level = f.getType().getTypeID() == org.apache.arrow.vector.types.pojo.ArrowType.ArrowTypeID.Struct
                        ? f.getChildren() : null;
            }
            if (!resolved.isEmpty()) {
                paths.add(resolved);
            }
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < paths.size(); i++) {
            List<String> p = paths.get(i);
            boolean inside = false;
            for (int j = 0; j < paths.size() && !inside; j++) {
                List<String> q = paths.get(j);
                inside = j != i && q.size() <= p.size() && p.subList(0, q.size()).equals(q)
                        && (q.size() < p.size() || j < i);
            }
            if (!inside) {
                out.add(ColumnProjection.name(p));
            }
        }
        return out;
    }

    private static Field field(List<Field> fields, String name) {
        Field found = null;
        for (Field f : fields) {
            if (f.getName().equals(name)) {
                return f;
            }
        }
        for (Field f : fields) {
            if (f.getName().toLowerCase(Locale.ROOT).equals(name.toLowerCase(Locale.ROOT))) {
                if (found != null) {
                    return null;
                }
                found = f;
            }
        }
        return found;
    }

    /**
     * The names of a Quiver column name (the one name rule of docs/file.md:
     * dot-separated, a name in double quotes with "" for a quote inside,
     * spaces around names skipped).
     */
    static List<String> namePath(String path) {
        List<String> out = new ArrayList<>();
        int i = 0;
        int n = path.length();
        while (i <= n) {
            while (i < n && path.charAt(i) == ' ') {
                i++;
            }
            StringBuilder b = new StringBuilder();
            if (i < n && path.charAt(i) == '"') {
                for (i++; i < n; i++) {
                    char c = path.charAt(i);
                    if (c == '"') {
                        if (i + 1 < n && path.charAt(i + 1) == '"') {
                            b.append('"');
                            i++;
                        } else {
                            i++;
                            break;
                        }
                    } else {
                        b.append(c);
                    }
                }
                while (i < n && path.charAt(i) != '.') {
                    i++;
                }
                out.add(b.toString());
            } else {
                int dot = path.indexOf('.', i);
                int end = dot < 0 ? n : dot;
                out.add(path.substring(i, end).trim());
                i = end;
            }
            i++; // past the dot (or the end)
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static <T extends Throwable> RuntimeException sneaky(Throwable t) throws T {
        throw (T) t;
    }
}
