package io.quiver.spark;

import java.util.Map;
import java.util.Objects;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("quiver")}: Quiver files as a DataSource V2
 * table. The schema is inferred from the files' footers (or given by the
 * user: {@link #supportsExternalMetadata()}), Hive partition folders become
 * partition columns, and the table reads through {@link QuiverTable}.
 *
 * <p>Spark creates one provider per {@code load()} and asks it for the
 * schema, the partitioning and then the table with the same options; the
 * listing and footers are done once and kept for those calls.
 *
 * <p>{@code df.write.format("quiver").mode(...).save(path)} makes a fresh
 * provider and calls only {@link #getTable}, with the DataFrame's schema
 * and the {@code partitionBy} columns: without an inference before it, the
 * table is {@link QuiverTable#unlisted} (the folder written to may not
 * exist yet, and the partitioning Spark checks is the one given).
 */
public final class QuiverDataSource implements TableProvider, DataSourceRegister {
    private Map<String, String> resolvedFor;
    private StructType resolvedUserSchema;
    private QuiverTable resolved;
    private boolean inferred; // inferSchema or inferPartitioning ran: a read

    @Override
    public String shortName() {
        return "quiver";
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        markInferred();
        return table(options.asCaseSensitiveMap(), null).fullSchema();
    }

    @Override
    public Transform[] inferPartitioning(CaseInsensitiveStringMap options) {
        markInferred();
        return table(options.asCaseSensitiveMap(), null).partitioning();
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        synchronized (this) {
            if (!inferred && schema != null) {
                return QuiverTable.unlisted(SparkSession.active(), new CaseInsensitiveStringMap(properties), schema,
                        partitioning);
            }
        }
        // The schema handed back is either the one inferSchema returned (the
        // table resolved for it is reused) or the user's, which also types
        // the partition columns and so needs a listing of its own.
        QuiverTable inferred = resolved != null && properties.equals(resolvedFor) && resolvedUserSchema == null
                ? resolved : null;
        if (schema == null || (inferred != null && schema.equals(inferred.schemaIfInferred()))) {
            return table(properties, null);
        }
        return table(properties, schema);
    }

    private synchronized void markInferred() {
        inferred = true;
    }

    private synchronized QuiverTable table(Map<String, String> options, StructType userSchema) {
        if (resolved == null || !options.equals(resolvedFor) || !Objects.equals(userSchema, resolvedUserSchema)) {
            resolved = QuiverTable.resolve(SparkSession.active(), new CaseInsensitiveStringMap(options),
                    userSchema);
            resolvedFor = Map.copyOf(options);
            resolvedUserSchema = userSchema;
        }
        return resolved;
    }
}
