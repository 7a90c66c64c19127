package io.quiver.spark.read;

import io.quiver.FileStatistics;
import io.quiver.QuiverFile;
import io.quiver.Split;
import io.quiver.spark.QuiverTable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One planned read of a {@link QuiverTable}: the scan Spark runs once
 * pushdown is done. It is its own {@link Batch}.
 *
 * <p>The plan (files kept by partition pruning, their row-group slices,
 * packed into tasks, and the statistics) is made once, on first need, and
 * is deterministic: the same files give the same partitions. Each file's
 * footer is read again at planning (bounded parallelism), so the slices
 * carry the identity of the file actually planned.
 */
public final class QuiverScan implements Scan, Batch, SupportsReportStatistics {
    private static final Logger LOG = LoggerFactory.getLogger(QuiverScan.class);

    private final QuiverTable table;
    private final QuiverReadOptions options;
    private final ColumnProjection projection;
    private final StructType partitionSchema;
    private final List<Expression> partitionFilters;
    private final List<Predicate> pushedData;
    private final List<Predicate> pushedPartition;
    private final String filter;
    private final long limit;
    private Plan plan;

    QuiverScan(QuiverTable table, QuiverReadOptions options, ColumnProjection projection, StructType partitionSchema,
            List<Expression> partitionFilters, List<Predicate> pushedData, List<Predicate> pushedPartition,
            String filter, long limit) {
        this.table = table;
        this.options = options;
        this.projection = projection;
        this.partitionSchema = partitionSchema;
        this.partitionFilters = partitionFilters;
        this.pushedData = pushedData;
        this.pushedPartition = pushedPartition;
        this.filter = filter;
        this.limit = limit;
    }

    @Override
    public StructType readSchema() {
        List<StructField> all = new ArrayList<>(List.of(projection.schema().fields()));
        all.addAll(List.of(partitionSchema.fields()));
        return new StructType(all.toArray(new StructField[0]));
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    /** What the executors need, fixed by pushdown. */
    public ReadConfig readConfig() {
        SQLConf conf = SQLConf.get();
        return new ReadConfig(projection.schema(), partitionSchema, projection.columns(), filter, limit,
                options.batchRows(), options.threads(), options.prefetch(), conf.ignoreMissingFiles(),
                conf.ignoreCorruptFiles());
    }

    @Override
    public InputPartition[] planInputPartitions() {
        return plan().partitions().toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new QuiverPartitionReaderFactory(readConfig());
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return QuiverMetrics.all();
    }

    @Override
    public Statistics estimateStatistics() {
        Plan p = plan();
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return OptionalLong.of(p.bytes());
            }

            @Override
            public OptionalLong numRows() {
                return OptionalLong.of(p.rows());
            }

            @Override
            public Map<NamedReference, ColumnStatistics> columnStats() {
                return p.columnStats();
            }
        };
    }

    @Override
    public String description() {
        Plan p = plan();
        StringBuilder b = new StringBuilder("QuiverScan");
        b.append(" paths=").append(table.listing().rootPaths());
        b.append(", files=").append(p.files().size());
        if (p.files().size() <= 10) {
            b.append(' ').append(p.files());
        }
        b.append(", partitions=").append(p.partitions().size());
        b.append(", columns=").append(projection.columns());
        b.append(", partitionColumns=").append(List.of(partitionSchema.fieldNames()));
        b.append(", pushedFilters=").append(describe(pushedData));
        b.append(", quiverFilter=").append(filter == null ? "none" : filter);
        b.append(", partitionFilters=").append(describe(pushedPartition));
        b.append(", limit=").append(limit == 0 ? "none" : Long.toString(limit));
        return b.toString();
    }

    private static List<String> describe(List<Predicate> ps) {
        List<String> out = new ArrayList<>();
        for (Predicate p : ps) {
            out.add(p.toString());
        }
        return out;
    }

    /** The plan (made once). */
    synchronized Plan plan() {
        if (plan == null) {
            plan = makePlan();
        }
        return plan;
    }

    private Plan makePlan() {
        SQLConf conf = SQLConf.get();
        List<QuiverFileListing.ListedFile> files = table.listing().files(partitionFilters);
        long openCost = conf.filesOpenCostInBytes();
        int minPartitions = conf.filesMinPartitionNum().isDefined()
                ? ((Number) conf.filesMinPartitionNum().get()).intValue()
                : ((org.apache.spark.sql.classic.SparkSession) table.session()).leafNodeDefaultParallelism();
        int[] partitionColumns = partitionColumnIndexes();
        boolean ignoreMissing = conf.ignoreMissingFiles();
        boolean ignoreCorrupt = conf.ignoreCorruptFiles();
        // A file skipped here (missing or corrupt under Spark's ignore
        // settings) is simply not planned: it would give no rows anyway.
        // Each file is planned as one slice per row group, weighed by the
        // bytes of the projected columns; the split size is then Spark's
        // (maxPartitionBytes, openCostInBytes, the parallelism) over those
        // projected bytes, not over file lengths: a query reading a few
        // columns of a large file must still get a task per core.
        List<FilePlan> filePlans = ParallelFiles.map(files, f -> {
            FilePlan fp = FileFooter.skippable(ignoreMissing, ignoreCorrupt,
                    () -> planFile(f, partitionColumns));
            return fp == null ? new FilePlan(List.of(), 0, null) : fp;
        });
        List<Long> projected = new ArrayList<>();
        for (FilePlan fp : filePlans) {
            long b = 0;
            for (FileSlice s : fp.slices()) {
                b += s.bytes();
            }
            projected.add(b);
        }
        long maxSplitBytes = SplitPacking.maxSplitBytes(conf.filesMaxPartitionBytes(), openCost, minPartitions,
                projected);
        List<FileSlice> slices = new ArrayList<>();
        long rows = 0;
        long bytes = 0;
        List<String> names = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            FilePlan fp = filePlans.get(i);
            if (fp.stats() == null) {
                continue;
            }
            slices.addAll(SplitPacking.coalesce(fp.slices(), maxSplitBytes));
            rows += fp.rows();
            for (FileSlice s : fp.slices()) {
                bytes += s.bytes();
            }
            names.add(files.get(i).uri());
        }
        List<QuiverInputPartition> partitions = SplitPacking.pack(slices, maxSplitBytes, openCost);
        List<FilePlan> planned = new ArrayList<>();
        for (FilePlan fp : filePlans) {
            if (fp.stats() != null) {
                planned.add(fp);
            }
        }
        return new Plan(partitions, names, rows, bytes, columnStats(planned));
    }

    /** Positions of the scan's partition columns in the table's partition schema. */
    private int[] partitionColumnIndexes() {
        StructField[] all = table.partitionSchema().fields();
        StructField[] kept = partitionSchema.fields();
        int[] out = new int[kept.length];
        for (int k = 0; k < kept.length; k++) {
            for (int i = 0; i < all.length; i++) {
                if (all[i].name().equals(kept[k].name())) {
                    out[k] = i;
                }
            }
        }
        return out;
    }

    private FilePlan planFile(QuiverFileListing.ListedFile f, int[] partitionColumns) {
        StructField[] all = table.partitionSchema().fields();
        Object[] values = new Object[partitionColumns.length];
        for (int k = 0; k < partitionColumns.length; k++) {
            int i = partitionColumns[k];
            values[k] = f.partitionValues().isNullAt(i) ? null : f.partitionValues().get(i, all[i].dataType());
        }
        InternalRow partitionValues = new GenericInternalRow(values);
        try (QuiverFile qf = QuiverFile.open(f.path());
                BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE)) {
            Schema schema = qf.schema();
            // A target of one byte: a split per row group (a split holds at least one).
            List<Split> splits = qf.planSplits(1, presentColumns(schema));
            List<FileSlice> slices = new ArrayList<>();
            for (Split s : splits) {
                slices.add(new FileSlice(f.path(), s.identity(), s.rowGroupBegin(), s.rowGroupEnd(), s.rows(),
                        s.bytes(), partitionValues));
            }
            return new FilePlan(slices, qf.numRows(), columnStats(qf, schema, allocator));
        }
    }

    /**
     * The file's column statistics for Spark's optimizer. They only inform
     * plans, so a file whose statistics cannot be read (an Arrow Java import
     * refusing a type it does not know, say) is planned without them.
     */
    private static Map<String, ColumnStat> columnStats(QuiverFile qf, Schema schema, BufferAllocator allocator) {
        Map<String, ColumnStat> stats = new HashMap<>();
        try (FileStatistics fs = qf.statistics(allocator)) {
            int preorder = 0;
            for (Field field : schema.getFields()) {
                stats.put(field.getName(), ColumnStat.of(fs.of(preorder)));
                preorder += 1 + descendants(field);
            }
        } catch (RuntimeException e) {
            LOG.warn("planning " + qf.path() + " without column statistics: " + e.getMessage());
            return Map.of();
        }
        return stats;
    }

    /**
     * The projected columns this file has: under mergeSchema a file may lack
     * some (the reader delivers nulls for them), and the file layer refuses
     * to weigh a name it does not know.
     */
    private List<String> presentColumns(Schema schema) {
        List<String> out = new ArrayList<>();
        List<List<String>> paths = projection.paths();
        for (int i = 0; i < paths.size(); i++) {
            List<Field> level = schema.getFields();
            Field found = null;
            for (String name : paths.get(i)) {
                found = null;
                for (Field f : level) {
                    if (f.getName().equals(name)) {
                        found = f;
                    }
                }
                if (found == null) {
                    break;
                }
                level = found.getChildren();
            }
            if (found != null) {
                out.add(projection.columns().get(i));
            }
        }
        return out;
    }

    private static int descendants(Field f) {
        int n = 0;
        for (Field c : f.getChildren()) {
            n += 1 + descendants(c);
        }
        return n;
    }

    /**
     * Statistics of the projected top-level columns of simple types over
     * all planned files: the null count when every file has one, min and
     * max when every file has exact bounds (a column missing from a file,
     * under mergeSchema, is all nulls there and has no bounds).
     */
    private Map<NamedReference, ColumnStatistics> columnStats(List<FilePlan> files) {
        Map<NamedReference, ColumnStatistics> out = new LinkedHashMap<>();
        for (StructField f : projection.schema().fields()) {
            DataType t = f.dataType();
            Long nulls = 0L;
            Object min = null;
            Object max = null;
            boolean bounds = isBounded(t);
            for (FilePlan fp : files) {
                ColumnStat s = fp.stats().get(f.name());
                if (s == null) {
                    nulls = null;
                    bounds = false;
                    break;
                }
                nulls = nulls == null || s.nulls() == null ? null : nulls + s.nulls();
                if (bounds) {
                    Object lo = convert(s.min(), t);
                    Object hi = convert(s.max(), t);
                    if (lo == null || hi == null) {
                        bounds = false;
                    } else {
                        min = min == null || compare(lo, min) < 0 ? lo : min;
                        max = max == null || compare(hi, max) > 0 ? hi : max;
                    }
                }
            }
            if (files.isEmpty()) {
                continue;
            }
            final Long nullCount = nulls;
            final Object lo = bounds ? min : null;
            final Object hi = bounds ? max : null;
            // A one-part reference built as is: Expressions.column parses the
            // name as SQL, which splits "a.b" and refuses a name with a quote.
            out.put(FieldReference.column(f.name()), new ColumnStatistics() {
                @Override
                public OptionalLong nullCount() {
                    return nullCount == null ? OptionalLong.empty() : OptionalLong.of(nullCount);
                }

                @Override
                public Optional<Object> min() {
                    return Optional.ofNullable(lo);
                }

                @Override
                public Optional<Object> max() {
                    return Optional.ofNullable(hi);
                }
            });
        }
        return out;
    }

    private static boolean isBounded(DataType t) {
        return t instanceof BooleanType || t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType
                || t instanceof LongType || t instanceof FloatType || t instanceof DoubleType;
    }

    /** A bound from the statistics as the Spark value of type {@code t}; null when it is not one. */
    private static Object convert(Object v, DataType t) {
        if (t instanceof BooleanType) {
            return v instanceof Boolean ? v : null;
        }
        if (!(v instanceof Number n)) {
            return null;
        }
        // Signed integers and floats only: an unsigned column is widened by
        // the scan, and its statistics hold the unsigned value's bits.
        if (t instanceof ByteType) return v instanceof Byte ? n.byteValue() : null;
        if (t instanceof ShortType) return v instanceof Short ? n.shortValue() : null;
        if (t instanceof IntegerType) return v instanceof Integer ? n.intValue() : null;
        if (t instanceof LongType) return v instanceof Long ? n.longValue() : null;
        if (t instanceof FloatType) return v instanceof Float ? n.floatValue() : null;
        if (t instanceof DoubleType) return v instanceof Double ? n.doubleValue() : null;
        return null;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static int compare(Object a, Object b) {
        // Float.compare / Double.compare (via Comparable) order NaN above
        // every number, as Spark does.
        return ((Comparable) a).compareTo(b);
    }

    /** One file's share of the plan; stats null: the file was skipped. */
    record FilePlan(List<FileSlice> slices, long rows, Map<String, ColumnStat> stats) {}

    /** One column's statistics in one file, as the file layer reports them. */
    record ColumnStat(Long nulls, Object min, Object max) {
        static ColumnStat of(Map<String, Object> s) {
            Object n = s.get("ARROW:null_count:exact");
            return new ColumnStat(n instanceof Number x ? x.longValue() : null, s.get("ARROW:min_value:exact"),
                    s.get("ARROW:max_value:exact"));
        }
    }

    /**
     * The planned read.
     *
     * @param partitions the tasks
     * @param files      the files read (after partition pruning), as Spark names them
     * @param rows       rows of those files (before any filter)
     * @param bytes      encoded bytes of the projected columns in them
     * @param columnStats per projected top-level column
     */
    record Plan(List<QuiverInputPartition> partitions, List<String> files, long rows, long bytes,
            Map<NamedReference, ColumnStatistics> columnStats) {}
}
