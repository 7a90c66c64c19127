package io.quiver.spark.read;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.DataSource$;
import org.apache.spark.sql.execution.datasources.FileStatusCache$;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The files a {@code load(...)} names, listed by Spark's own file source
 * machinery so that Quiver behaves as Parquet does: paths from {@code path}
 * and {@code paths}, globs expanded and missing paths refused
 * ({@code PATH_NOT_FOUND}) by {@code DataSource.checkAndGlobPathIfNecessary};
 * directories listed recursively, names starting with {@code _} or {@code .}
 * skipped, Hive {@code key=value} folders inferred as partition columns
 * (honouring {@code basePath}, {@code recursiveFileLookup},
 * {@code pathGlobFilter},
 * {@code spark.sql.sources.partitionColumnTypeInference.enabled}, a user
 * schema's types, {@code __HIVE_DEFAULT_PARTITION__} as null) and partition
 * pruning by Spark's evaluation of catalyst predicates, all by
 * {@code InMemoryFileIndex}.
 */
public final class QuiverFileListing {
    /** Spark's option that turns globbing of the paths off ({@code "false"}). */
    public static final String GLOB_PATHS = "__globPaths__";

    private final InMemoryFileIndex index;
    private final List<String> rootPaths;

    private QuiverFileListing(InMemoryFileIndex index, List<String> rootPaths) {
        this.index = index;
        this.rootPaths = rootPaths;
    }

    /** Lists what {@code options} names; {@code userSchema} may be null. */
    public static QuiverFileListing list(SparkSession session, CaseInsensitiveStringMap options, StructType userSchema) {
        List<String> paths = paths(options);
        if (paths.isEmpty()) {
            throw new IllegalArgumentException("quiver: no path given: use load(path) or option(\"path\", ...)");
        }
        Map<String, String> rest = new HashMap<>(options.asCaseSensitiveMap());
        rest.remove("path");
        rest.remove("paths");
        scala.collection.immutable.Map<String, String> scalaOptions = scalaMap(rest);
        org.apache.spark.sql.classic.SparkSession classic = (org.apache.spark.sql.classic.SparkSession) session;
        Configuration hadoop = classic.sessionState().newHadoopConfWithOptions(scalaOptions);
        // Spark's own key (DataSource.GLOB_PATHS_KEY): "false" takes the paths literally, as a write's
        // target is taken (a folder named "a[1]" is not the glob a[1]).
        boolean glob = !"false".equalsIgnoreCase(options.get(GLOB_PATHS));
        scala.collection.immutable.Seq<Path> roots = DataSource$.MODULE$.checkAndGlobPathIfNecessary(
                CollectionConverters.asScala(paths).toList(), hadoop, true, true,
                DataSource$.MODULE$.checkAndGlobPathIfNecessary$default$5(), glob);
        InMemoryFileIndex index = new InMemoryFileIndex(classic, roots, scalaOptions,
                Option.apply(userSchema), FileStatusCache$.MODULE$.getOrCreate(classic), Option.empty(),
                Option.empty());
        List<String> shown = new ArrayList<>();
        for (Path p : CollectionConverters.asJava(roots)) {
            shown.add(p.toString());
        }
        return new QuiverFileListing(index, List.copyOf(shown));
    }

    /** The paths given, as Spark's file sources read them ({@code paths} then {@code path}). */
    public static List<String> paths(CaseInsensitiveStringMap options) {
        List<String> out = new ArrayList<>();
        String many = options.get("paths");
        if (many != null) {
            try {
                for (String p : new ObjectMapper().readValue(many, String[].class)) {
                    out.add(p);
                }
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("quiver option 'paths': not a JSON array of strings: " + many, e);
            }
        }
        String one = options.get("path");
        if (one != null) {
            out.add(one);
        }
        return out;
    }

    private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> m) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(m));
    }

    /** The partition columns inferred from the folders (empty: none). */
    public StructType partitionSchema() {
        return index.partitionSchema();
    }

    /** The root paths after glob expansion, for the scan's description. */
    public List<String> rootPaths() {
        return rootPaths;
    }

    /**
     * The files of the partitions {@code partitionFilters} (catalyst
     * predicates over partition columns; empty: all) keeps, ordered by
     * path: the file system lists in no particular order, and the merged
     * schema's column order and the plan must not depend on it.
     */
    public List<ListedFile> files(List<Expression> partitionFilters) {
        scala.collection.immutable.Seq<PartitionDirectory> dirs = index.listFiles(
                CollectionConverters.asScala(partitionFilters).toList(),
                scala.collection.immutable.List$.MODULE$.empty());
        List<ListedFile> out = new ArrayList<>();
        for (PartitionDirectory d : CollectionConverters.asJava(dirs)) {
            InternalRow values = d.values().copy();
            for (FileStatusWithMetadata f : CollectionConverters.asJava(d.files())) {
                FileStatus s = f.fileStatus();
                out.add(new ListedFile(localPath(s.getPath()), s.getPath().toString(), s.getLen(), values));
            }
        }
        out.sort(java.util.Comparator.comparing(ListedFile::uri));
        return out;
    }

    /** Every listed file, no partition pruning. */
    public List<ListedFile> allFiles() {
        return files(List.of());
    }

    /**
     * The path Quiver opens: the file layer reads local files (a shared
     * mount on a cluster), so only the {@code file} scheme is accepted.
     */
    static String localPath(Path p) {
        java.net.URI u = p.toUri();
        if (u.getScheme() != null && !"file".equals(u.getScheme())) {
            throw new UnsupportedOperationException("quiver: '" + p + "' is not a local file: Quiver reads "
                    + "files of the local file system (scheme file:) only");
        }
        return u.getPath();
    }

    /**
     * One listed file.
     *
     * @param path            the local path Quiver opens
     * @param uri             the path as Spark names it (shown in descriptions)
     * @param length          its size in bytes
     * @param partitionValues its folder's partition values
     */
    public record ListedFile(String path, String uri, long length, InternalRow partitionValues) {}
}
