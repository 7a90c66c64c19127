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
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
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
 */
public class QuiverTable implements SupportsRead {
    private final SparkSession session;
    private final CaseInsensitiveStringMap options;
    private final QuiverReadOptions readOptions;
    private final QuiverFileListing listing;
    private final StructType userSchema;
    private final boolean caseSensitive;
    private List<FileFooter> footers;   // read on first need
    private StructType dataSchema;      // inferred on first need unless the user gave a schema

    protected QuiverTable(SparkSession session, CaseInsensitiveStringMap options, QuiverReadOptions readOptions,
            QuiverFileListing listing, StructType userSchema) {
        this.session = session;
        this.options = options;
        this.readOptions = readOptions;
        this.listing = listing;
        this.userSchema = userSchema;
        this.caseSensitive = org.apache.spark.sql.internal.SQLConf.get().caseSensitiveAnalysis();
        if (userSchema != null) {
            this.dataSchema = withoutPartitionColumns(userSchema);
        }
    }

    /** Lists the files {@code options} name; footers are read when the schema or a scan needs them. */
    public static QuiverTable resolve(SparkSession session, CaseInsensitiveStringMap options, StructType userSchema) {
        QuiverReadOptions readOptions = QuiverReadOptions.parse(options);
        QuiverFileListing listing = QuiverFileListing.list(session, options, userSchema);
        return new QuiverTable(session, options, readOptions, listing, userSchema);
    }

    @Override
    public String name() {
        return "quiver " + String.join(", ", listing.rootPaths());
    }

    /** Deprecated in Spark 4 for columns(), whose default derives from it. */
    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return fullSchema();
    }

    /** Data columns then partition columns. */
    public StructType fullSchema() {
        StructType data = dataSchema();
        List<StructField> all = new ArrayList<>(List.of(data.fields()));
        all.addAll(List.of(listing.partitionSchema().fields()));
        return new StructType(all.toArray(new StructField[0]));
    }

    /** The schema if it is known without reading footers (given, or inferred already); else null. */
    synchronized StructType schemaIfInferred() {
        return dataSchema == null ? null : fullSchema();
    }

    @Override
    public Transform[] partitioning() {
        StructField[] p = listing.partitionSchema().fields();
        Transform[] out = new Transform[p.length];
        for (int i = 0; i < p.length; i++) {
            out[i] = Expressions.identity(p[i].name());
        }
        return out;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
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

    public QuiverFileListing listing() {
        return listing;
    }

    public QuiverReadOptions readOptions() {
        return readOptions;
    }

    public boolean caseSensitive() {
        return caseSensitive;
    }

    public StructType partitionSchema() {
        return listing.partitionSchema();
    }

    /** The data columns (without partition columns): the user's, or merged from the footers. */
    public synchronized StructType dataSchema() {
        if (dataSchema == null) {
            List<FileFooter> f = footers();
            if (f.isEmpty()) {
                // Spark's file sources cannot infer a schema from no files either.
                throw new IllegalArgumentException("quiver: unable to infer the schema of "
                        + String.join(", ", listing.rootPaths())
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
            for (QuiverFileListing.ListedFile f : listing.allFiles()) {
                paths.add(f.path());
            }
            footers = List.copyOf(FileFooter.readAll(paths));
        }
        return footers;
    }

    private StructType withoutPartitionColumns(StructType s) {
        Set<String> names = new HashSet<>();
        for (StructField f : listing.partitionSchema().fields()) {
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
