package io.quiver.spark.read;

import io.quiver.spark.QuiverTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.V2ExpressionUtils$;
import org.apache.spark.sql.catalyst.types.DataTypeUtils$;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Pushdown for one scan of a {@link QuiverTable}.
 *
 * <ul>
 * <li>Columns: the data columns Spark needs, struct fields pruned to the
 *     kept leaves ({@link ColumnProjection}), and the partition columns it
 *     needs.</li>
 * <li>Predicates: one on data columns only that {@link FilterTranslator}
 *     turns into Quiver filter text is evaluated by the scan (NaN ordered as
 *     Spark orders it) and leaves Spark's post-scan filter. One on partition
 *     columns only is evaluated on the driver, by Spark's own expression
 *     evaluation, against each folder's values to drop files, and is also
 *     returned to Spark. One mixing both, or one that does not translate,
 *     stays with Spark. {@link #pushedPredicates()} reports the first two
 *     kinds.</li>
 * <li>Limit: each task may stop after that many rows (Spark still applies
 *     the limit over all tasks).</li>
 * </ul>
 */
public final class QuiverScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns,
        SupportsPushDownV2Filters, SupportsPushDownLimit {
    private final QuiverTable table;
    private final QuiverReadOptions options;
    private StructType requiredData;
    private StructType requiredPartition;
    private final List<Predicate> pushedData = new ArrayList<>();
    private final List<String> pushedDataText = new ArrayList<>();
    private final List<Predicate> pushedPartition = new ArrayList<>();
    private final List<Expression> partitionFilters = new ArrayList<>();
    private long limit;

    public QuiverScanBuilder(QuiverTable table, QuiverReadOptions options) {
        this.table = table;
        this.options = options;
        this.requiredData = table.dataSchema();
        this.requiredPartition = table.partitionSchema();
    }

    @Override
    public void pruneColumns(StructType required) {
        List<StructField> data = new ArrayList<>();
        List<StructField> part = new ArrayList<>();
        for (StructField f : required.fields()) {
            if (partitionIndex(f.name()) >= 0) {
                part.add(f);
            } else {
                data.add(f);
            }
        }
        requiredData = new StructType(data.toArray(new StructField[0]));
        // The partition columns keep the table's order and types.
        List<StructField> kept = new ArrayList<>();
        for (StructField p : table.partitionSchema().fields()) {
            for (StructField f : part) {
                if (sameName(p.name(), f.name())) {
                    kept.add(p);
                    break;
                }
            }
        }
        requiredPartition = new StructType(kept.toArray(new StructField[0]));
    }

    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
        List<Predicate> forSpark = new ArrayList<>();
        for (Predicate p : predicates) {
            boolean anyPartition = false;
            boolean anyData = false;
            for (NamedReference r : p.references()) {
                String[] names = r.fieldNames();
                if (names.length == 1 && partitionIndex(names[0]) >= 0) {
                    anyPartition = true;
                } else {
                    anyData = true;
                }
            }
            if (anyPartition && !anyData) {
                Expression e = toCatalyst(p);
                if (e != null) {
                    partitionFilters.add(e);
                    pushedPartition.add(p);
                }
                forSpark.add(p);
            } else if (anyData && !anyPartition) {
                String text = FilterTranslator.translate(p, table.dataSchema(), this::exactColumn);
                if (text != null) {
                    pushedData.add(p);
                    pushedDataText.add(text);
                } else {
                    forSpark.add(p);
                }
            } else {
                // Mixed references, or none (a constant): Spark evaluates it.
                forSpark.add(p);
            }
        }
        return forSpark.toArray(new Predicate[0]);
    }

    @Override
    public Predicate[] pushedPredicates() {
        List<Predicate> all = new ArrayList<>(pushedData);
        all.addAll(pushedPartition);
        return all.toArray(new Predicate[0]);
    }

    @Override
    public boolean pushLimit(int n) {
        limit = n;
        return true;
    }

    @Override
    public Scan build() {
        ColumnProjection projection = ColumnProjection.of(table.dataSchema(), requiredData);
        String filter = null;
        if (!pushedDataText.isEmpty()) {
            StringBuilder b = new StringBuilder();
            for (String t : pushedDataText) {
                if (b.length() > 0) {
                    b.append(" AND ");
                }
                b.append('(').append(t).append(')');
            }
            filter = b.toString();
        }
        return new QuiverScan(table, options, projection, requiredPartition, List.copyOf(partitionFilters),
                List.copyOf(pushedData), List.copyOf(pushedPartition), filter, limit);
    }

    /**
     * A partition-only predicate as a catalyst expression over the
     * partition columns (what InMemoryFileIndex prunes with, evaluating it
     * as Spark evaluates any expression); null when Spark's converter does
     * not take it, and then it only stays with Spark.
     */
    private Expression toCatalyst(Predicate p) {
        Option<Expression> converted = V2ExpressionUtils$.MODULE$.toCatalyst(p);
        if (converted.isEmpty()) {
            return null;
        }
        List<AttributeReference> attrs = CollectionConverters.asJava(
                DataTypeUtils$.MODULE$.toAttributes(table.partitionSchema()));
        boolean[] unknown = {false};
        Expression e = converted.get().transform(new AbstractPartialFunction<Expression, Expression>() {
            @Override
            public boolean isDefinedAt(Expression x) {
                return x instanceof UnresolvedAttribute;
            }

            @Override
            @SuppressWarnings("unchecked")
            public <A1 extends Expression, B1> B1 applyOrElse(A1 x, scala.Function1<A1, B1> dflt) {
                if (!(x instanceof UnresolvedAttribute u)) {
                    return dflt.apply(x);
                }
                List<String> parts = CollectionConverters.asJava(u.nameParts());
                int i = parts.size() == 1 ? partitionIndex(parts.get(0)) : -1;
                if (i < 0) {
                    unknown[0] = true;
                    return (B1) x;
                }
                return (B1) attrs.get(i);
            }
        });
        return !unknown[0] && e.resolved() ? e : null;
    }

    /**
     * Whether the native values of column path {@code path} are what Spark
     * sees in every file: false for a column missing from some file (under
     * mergeSchema) and for timestamps stored in nanoseconds (the scan's
     * cast to microseconds truncates, so a native comparison could differ).
     */
    private boolean exactColumn(List<String> path) {
        for (FileFooter f : table.footers()) {
            Field field = find(f.arrowSchema().getFields(), path.get(0));
            for (int i = 1; field != null && i < path.size(); i++) {
                field = field.getType().getTypeID() == ArrowType.ArrowTypeID.Struct
                        ? find(field.getChildren(), path.get(i)) : null;
            }
            if (field == null) {
                return false;
            }
            if (field.getType() instanceof ArrowType.Timestamp ts && ts.getUnit() == TimeUnit.NANOSECOND) {
                return false;
            }
        }
        return true;
    }

    /**
     * The field spelled exactly {@code name}: the filter text names the
     * read schema's spelling and the scan binds it exactly, so a file that
     * spells the column in another case (merged or given ignoring case) must
     * leave the predicate to Spark rather than fail the scan.
     */
    private static Field find(List<Field> fields, String name) {
        for (Field f : fields) {
            if (f.getName().equals(name)) {
                return f;
            }
        }
        return null;
    }

    private int partitionIndex(String name) {
        StructField[] p = table.partitionSchema().fields();
        for (int i = 0; i < p.length; i++) {
            if (sameName(p[i].name(), name)) {
                return i;
            }
        }
        return -1;
    }

    private boolean sameName(String a, String b) {
        return table.caseSensitive() ? a.equals(b) : a.toLowerCase(Locale.ROOT).equals(b.toLowerCase(Locale.ROOT));
    }
}
