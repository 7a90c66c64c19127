package io.quiver.spark;

import io.quiver.spark.read.FileFooter;
import io.quiver.spark.read.QuiverFileListing;
import io.quiver.spark.read.QuiverReadOptions;
import io.quiver.spark.read.QuiverScanBuilder;
import io.quiver.spark.read.SchemaMerger;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import io.quiver.spark.write.QuiverWriteBuilder;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Quiver files of one {@code load(...)} as a table: the listing (with
 * its partition columns), the data schema (inferred from the footers unless
 * the user gave one) and the read options. Reads go through
 * {@link QuiverScanBuilder}.
 *
 * <p>The schema is data columns then partition columns. A partition column
 * whose name is also a column in the files is read from the folder, as
 * Spark's file sources do, and left out of the data columns.
 *
 * <p>A table made by {@link #unlisted} (what {@code df.write...save(path)}
 * gets: Spark hands the provider the DataFrame's schema and the
 * {@code partitionBy} columns without asking it to infer anything) reports
 * that schema and partitioning as they were given, and lists its folder
 * only when a read needs it: the folder a write creates need not exist.
 */
public class QuiverTable implements SupportsRead, SupportsWrite {
    private final SparkSession session;
    private final CaseInsensitiveStringMap options;
    private final QuiverReadOptions readOptions;
    private QuiverFileListing listing;            // null until a read needs it (unlisted tables)
    private final StructType userSchema;
    private final Transform[] givenPartitioning;  // unlisted tables: as given; else null
    private final boolean caseSensitive;
    private List<FileFooter> footers;   // read on first need
    private StructType dataSchema;      // inferred on first need unless the user gave a schema

    protected QuiverTable(SparkSession session, CaseInsensitiveStringMap options, QuiverReadOptions readOptions,
            QuiverFileListing listing, StructType userSchema) {
        this(session, options, readOptions, listing, userSchema, null);
    }

    private QuiverTable(SparkSession session, CaseInsensitiveStringMap options, QuiverReadOptions readOptions,
            QuiverFileListing listing, StructType userSchema, Transform[] givenPartitioning) {
        this.session = session;
        this.options = options;
        this.readOptions = readOptions;
        this.listing = listing;
        this.userSchema = userSchema;
        this.givenPartitioning = givenPartitioning;
        this.caseSensitive = org.apache.spark.sql.internal.SQLConf.get().caseSensitiveAnalysis();
        if (userSchema != null && listing != null) {
            this.dataSchema = withoutPartitionColumns(userSchema);
        }
    }

    /** Lists the files {@code options} name; footers are read when the schema or a scan needs them. */
    public static QuiverTable resolve(SparkSession session, CaseInsensitiveStringMap options, StructType userSchema) {
        QuiverReadOptions readOptions = QuiverReadOptions.parse(options);
        QuiverFileListing listing = QuiverFileListing.list(session, options, userSchema);
        return new QuiverTable(session, options, readOptions, listing, userSchema);
    }

    /**
     * The table of {@code schema} partitioned by {@code partitioning}, as
     * given, over the folder {@code options} names, which is not listed
     * (nor required to exist) until a read needs it.
     */
    public static QuiverTable unlisted(SparkSession session, CaseInsensitiveStringMap options, StructType schema,
            Transform[] partitioning) {
        return new QuiverTable(session, options, QuiverReadOptions.parse(options), null, schema,
                partitioning == null ? new Transform[0] : partitioning.clone());
    }

    @Override
    public String name() {
        QuiverFileListing l;
        synchronized (this) {
            l = listing;
        }
        if (l == null) {
            return "quiver " + String.join(", ", QuiverFileListing.paths(options));
        }
        return "quiver " + String.join(", ", l.rootPaths());
    }

    /** Deprecated in Spark 4 for columns(), whose default derives from it. */
    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return fullSchema();
    }

    /** Data columns then partition columns. */
    public StructType fullSchema() {
        if (givenPartitioning != null) {
            return userSchema;
        }
        StructType data = dataSchema();
        List<StructField> all = new ArrayList<>(List.of(data.fields()));
        all.addAll(List.of(listing().partitionSchema().fields()));
        return new StructType(all.toArray(new StructField[0]));
    }

    /** The schema if it is known without reading footers (given, or inferred already); else null. */
    synchronized StructType schemaIfInferred() {
        return dataSchema == null ? null : fullSchema();
    }

    @Override
    public Transform[] partitioning() {
        if (givenPartitioning != null) {
            return givenPartitioning.clone();
        }
        StructField[] p = listing().partitionSchema().fields();
        Transform[] out = new Transform[p.length];
        for (int i = 0; i < p.length; i++) {
            // Quoted: Expressions.identity parses its argument, and a Hive directory's column name may hold
            // dots, slashes or spaces ("a.b=1" is the top-level column "a.b", not a field of a struct).
            out[i] = Expressions.identity("`" + p[i].name().replace("`", "``") + "`");
        }
        return out;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new QuiverWriteBuilder(this, info);
    }

    /** The options the table was made with (path included). */
    public CaseInsensitiveStringMap options() {
        return options;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
        return new QuiverScanBuilder(this, QuiverReadOptions.parse(merged(scanOptions)));
    }

    private CaseInsensitiveStringMap merged(CaseInsensitiveStringMap scanOptions) {
        java.util.Map<String, String> m = new java.util.HashMap<>(options.asCaseSensitiveMap());
        if (scanOptions != null) {
            m.putAll(scanOptions.asCaseSensitiveMap());
        }
        return new CaseInsensitiveStringMap(m);
    }

    public SparkSession session() {
        return session;
    }

    /** The listing of the table's folder (listed now if it was not yet: an unlisted table's). */
    public synchronized QuiverFileListing listing() {
        if (listing == null) {
            listing = QuiverFileListing.list(session, options, userSchema);
        }
        return listing;
    }

    public QuiverReadOptions readOptions() {
        return readOptions;
    }

    public boolean caseSensitive() {
        return caseSensitive;
    }

    public StructType partitionSchema() {
        return listing().partitionSchema();
    }

    /** The data columns (without partition columns): the user's, or merged from the footers. */
    public synchronized StructType dataSchema() {
        if (dataSchema == null && userSchema != null) {
            dataSchema = withoutPartitionColumns(userSchema);
        }
        if (dataSchema == null) {
            List<FileFooter> f = footers();
            if (f.isEmpty()) {
                // Spark's file sources cannot infer a schema from no files either.
                throw new IllegalArgumentException("quiver: unable to infer the schema of "
                        + String.join(", ", listing().rootPaths())
                        + ": no Quiver files there; give the schema with .schema(...)");
            }
            dataSchema = withoutPartitionColumns(SchemaMerger.combine(f, readOptions.mergeSchema(), caseSensitive));
        }
        return dataSchema;
    }

    /** The footers of every listed file, read once (bounded parallelism), in path order. */
    public synchronized List<FileFooter> footers() {
        if (footers == null) {
            List<String> paths = new ArrayList<>();
            for (QuiverFileListing.ListedFile f : listing().allFiles()) {
                paths.add(f.path());
            }
            footers = List.copyOf(FileFooter.readAll(paths));
        }
        return footers;
    }

    private StructType withoutPartitionColumns(StructType s) {
        Set<String> names = new HashSet<>();
        for (StructField f : listing().partitionSchema().fields()) {
            names.add(caseSensitive ? f.name() : f.name().toLowerCase(Locale.ROOT));
        }
        List<StructField> out = new ArrayList<>();
        for (StructField f : s.fields()) {
            if (!names.contains(caseSensitive ? f.name() : f.name().toLowerCase(Locale.ROOT))) {
                out.add(f);
            }
        }
        return new StructType(out.toArray(new StructField[0]));
    }
}
