package io.quiver.spark.write;

import io.quiver.spark.QuiverTable;
import io.quiver.spark.read.QuiverFileListing;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.AtomicType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Checks a write on the driver, before any task runs, and plans it:
 * append, or overwrite ({@link #truncate}: SaveMode.Overwrite).
 *
 * <p>Refused, each with a message naming what is wrong: no path or several
 * paths; a path that is not a local file path; a path that is a file, not a
 * folder; partition columns that are not columns of the DataFrame, appear
 * twice, are all the columns, or are not of an atomic type (struct, array,
 * map); a partitioning other than plain columns; {@code __partition_columns}
 * disagreeing with the table's partitioning; a column type Quiver cannot
 * store; and appending to a folder whose files are partitioned by other
 * columns than the write's (with none when partitionBy is missing), naming
 * both.
 */
public final class QuiverWriteBuilder implements WriteBuilder, SupportsTruncate {
    private final QuiverTable table;
    private final LogicalWriteInfo info;
    private boolean truncate;

    public QuiverWriteBuilder(QuiverTable table, LogicalWriteInfo info) {
        this.table = table;
        this.info = info;
    }

    @Override
    public WriteBuilder truncate() {
        truncate = true;
        return this;
    }

    @Override
    public Write build() {
        Map<String, String> all = new HashMap<>(table.options().asCaseSensitiveMap());
        all.putAll(info.options().asCaseSensitiveMap());
        CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(all);
        QuiverWriteOptions parsed = QuiverWriteOptions.parse(options);
        Path target = target(options);
        StructType schema = info.schema();
        boolean caseSensitive = SQLConf.get().caseSensitiveAnalysis();
        checkNoDuplicateNames(schema, "", caseSensitive);
        List<String> partitionBy = partitionColumns(table.partitioning(), parsed.partitionColumns(), schema,
                caseSensitive);
        int[] ordinals = ordinals(schema, partitionBy, caseSensitive);
        List<String> names = new ArrayList<>();
        for (int o : ordinals) {
            names.add(schema.fields()[o].name());
        }
        // Refuses a type Quiver cannot store now, naming the column, rather than in every task.
        ArrowRowWriter.arrowSchema(PartitionedDataWriter.dataSchema(schema, ordinals));
        if (Files.exists(target) && !Files.isDirectory(target)) {
            throw new IllegalArgumentException("quiver: cannot write to '" + target
                    + "': it is a file; Quiver writes a folder of files");
        }
        if (!truncate) {
            checkExistingPartitioning(target, names, caseSensitive, options);
        }
        return new QuiverWrite(target.toString(), schema, ordinals, parsed, SQLConf.get().sessionLocalTimeZone(),
                truncate);
    }

    /** The folder written: {@code path}, local, absolute. */
    static Path target(CaseInsensitiveStringMap options) {
        if (options.get("paths") != null) {
            throw new IllegalArgumentException("quiver: a write takes one path (save(path)), not several");
        }
        String p = options.get("path");
        if (p == null || p.isEmpty()) {
            throw new IllegalArgumentException("quiver: no path to write to: use save(path)");
        }
        java.net.URI u = new org.apache.hadoop.fs.Path(p).toUri();
        if (u.getScheme() != null && !"file".equals(u.getScheme())) {
            throw new UnsupportedOperationException("quiver: cannot write to '" + p + "': Quiver writes files of "
                    + "the local file system (scheme file:) only");
        }
        return Paths.get(u.getPath()).toAbsolutePath().normalize();
    }

    /**
     * Refuses two fields of one struct (the top level or a nested one) whose
     * names are equal, ignoring case unless the session is case-sensitive:
     * Spark could not tell them apart when it reads the files back (Parquet
     * refuses the same write).
     */
    static void checkNoDuplicateNames(DataType type, String path, boolean caseSensitive) {
        if (type instanceof StructType st) {
            Map<String, String> seen = new HashMap<>();
            for (StructField f : st.fields()) {
                String key = caseSensitive ? f.name() : f.name().toLowerCase(Locale.ROOT);
                String other = seen.putIfAbsent(key, f.name());
                if (other != null) {
                    throw new IllegalArgumentException("quiver: cannot write the columns '" + path + other + "' and '"
                            + path + f.name() + "': their names are the same"
                            + (caseSensitive ? "" : " ignoring case (spark.sql.caseSensitive is false)")
                            + "; rename one of them");
                }
                checkNoDuplicateNames(f.dataType(), path + f.name() + ".", caseSensitive);
            }
        } else if (type instanceof ArrayType at) {
            checkNoDuplicateNames(at.elementType(), path + "element.", caseSensitive);
        } else if (type instanceof MapType mt) {
            checkNoDuplicateNames(mt.keyType(), path + "key.", caseSensitive);
            checkNoDuplicateNames(mt.valueType(), path + "value.", caseSensitive);
        }
    }

    /**
     * partitionBy's columns, by their names in the DataFrame: the table's
     * identity transforms, checked against {@code __partition_columns} (the
     * strings given to partitionBy) when Spark passes both.
     *
     * <p>Spark parses each partitionBy string into a column reference, so a
     * column whose name holds a dot ({@code "k.k"}) arrives as the nested
     * reference {@code k.k}: when the DataFrame has a top-level column of
     * that name (and the option, if given, says {@code "k.k"}), that column
     * is meant, as Parquet's partitionBy takes it (Quiver partitions by
     * top-level columns only). A name the parser cannot read unquoted
     * ({@code "a/b"}) must be given quoted ({@code "`a/b`"}); an option then
     * holds the quoted form.
     */
    static List<String> partitionColumns(Transform[] partitioning, List<String> fromOption, StructType schema,
            boolean caseSensitive) {
        if (fromOption != null && partitioning.length > 0 && fromOption.size() != partitioning.length) {
            throw new IllegalArgumentException("quiver option '" + QuiverWriteOptions.PARTITION_COLUMNS + "' "
                    + fromOption + " disagrees with the partitioning " + describe(partitioning));
        }
        List<String> names = new ArrayList<>();
        for (int i = 0; i < partitioning.length; i++) {
            Transform t = partitioning[i];
            NamedReference[] refs = t.references();
            if (!"identity".equals(t.name()) || refs.length != 1) {
                throw new UnsupportedOperationException("quiver: cannot write with partitioning " + t.describe()
                        + ": only partitionBy over top-level columns is supported");
            }
            String[] parts = refs[0].fieldNames();
            String given = fromOption == null || fromOption.isEmpty() ? null : fromOption.get(i);
            String name;
            if (parts.length == 1) {
                name = parts[0];
                if (given != null && !given.equals(name) && !given.equals(quoted(name))) {
                    throw new IllegalArgumentException("quiver option '" + QuiverWriteOptions.PARTITION_COLUMNS
                            + "' " + fromOption + " disagrees with the partitioning " + describe(partitioning));
                }
            } else if (given != null ? given.equals(String.join(".", parts))
                    : isColumn(schema, String.join(".", parts), caseSensitive)) {
                name = String.join(".", parts);
            } else {
                throw new UnsupportedOperationException("quiver: cannot write with partitioning " + t.describe()
                        + ": only partitionBy over top-level columns is supported");
            }
            names.add(name);
        }
        if (partitioning.length == 0 && fromOption != null) {
            return fromOption;
        }
        return names;
    }

    private static boolean isColumn(StructType schema, String name, boolean caseSensitive) {
        for (String f : schema.fieldNames()) {
            if (caseSensitive ? f.equals(name) : f.equalsIgnoreCase(name)) {
                return true;
            }
        }
        return false;
    }

    /** A name as Spark's parser reads it back as one identifier: in backticks, backticks doubled. */
    private static String quoted(String name) {
        return "`" + name.replace("`", "``") + "`";
    }

    private static String describe(Transform[] partitioning) {
        List<String> out = new ArrayList<>();
        for (Transform t : partitioning) {
            out.add(t.describe());
        }
        return out.toString();
    }

    static int[] ordinals(StructType schema, List<String> names, boolean caseSensitive) {
        int[] out = new int[names.size()];
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < names.size(); i++) {
            String n = names.get(i);
            int found = -1;
            for (int j = 0; j < schema.length(); j++) {
                String f = schema.fields()[j].name();
                if (caseSensitive ? f.equals(n) : f.equalsIgnoreCase(n)) {
                    found = j;
                    break;
                }
            }
            if (found < 0) {
                throw new IllegalArgumentException("quiver: partition column '" + n + "' is not a column of the "
                        + "data (" + String.join(", ", schema.fieldNames()) + ")");
            }
            if (!seen.add(found)) {
                throw new IllegalArgumentException("quiver: partition column '" + n + "' is given twice");
            }
            StructField f = schema.fields()[found];
            if (!(f.dataType() instanceof AtomicType)) {
                throw new IllegalArgumentException("quiver: cannot partition by '" + f.name() + "' of type "
                        + f.dataType().simpleString() + ": partition columns must be of an atomic type");
            }
            out[i] = found;
        }
        if (out.length > 0 && out.length == schema.length()) {
            throw new IllegalArgumentException("quiver: cannot use all columns (" + String.join(", ", names)
                    + ") as partition columns: no data would be left in the files");
        }
        return out;
    }

    /**
     * An append must lay its files out as the folder's are: the same
     * partition columns in the same order (none for none). A folder without
     * files takes any layout.
     */
    private static void checkExistingPartitioning(Path target, List<String> names, boolean caseSensitive,
            CaseInsensitiveStringMap options) {
        if (!hasData(target)) {
            return;
        }
        Map<String, String> listOptions = new HashMap<>();
        listOptions.put("path", target.toString());
        // The target is a folder name, not a pattern: "out[1]" must list out[1] itself.
        listOptions.put(QuiverFileListing.GLOB_PATHS, "false");
        String glob = options.get("pathGlobFilter");
        if (glob != null) {
            listOptions.put("pathGlobFilter", glob);
        }
        QuiverFileListing listing;
        try {
            listing = QuiverFileListing.list(SparkSession.active(), new CaseInsensitiveStringMap(listOptions), null);
            if (listing.allFiles().isEmpty()) {
                return;
            }
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("quiver: cannot append to '" + target + "': its files could not be "
                    + "listed to check their partitioning: " + e.getMessage(), e);
        }
        List<String> existing = List.of(listing.partitionSchema().fieldNames());
        boolean same = existing.size() == names.size();
        for (int i = 0; same && i < names.size(); i++) {
            same = caseSensitive ? existing.get(i).equals(names.get(i)) : existing.get(i).equalsIgnoreCase(names.get(i));
        }
        if (!same) {
            throw new IllegalArgumentException("quiver: cannot append to '" + target + "': its files are "
                    + (existing.isEmpty() ? "not partitioned" : "partitioned by " + existing) + ", the write is "
                    + (names.isEmpty() ? "not partitioned (no partitionBy)" : "partitioned by " + names)
                    + "; append with " + (existing.isEmpty() ? "no partitionBy"
                            : ".partitionBy(\"" + String.join("\", \"", existing) + "\")")
                    + ", or replace the data with mode(\"overwrite\")");
        }
    }

    /** Whether the folder holds anything a reader would list (names starting with _ or . are not). */
    private static boolean hasData(Path target) {
        if (!Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(target)) {
            return false;
        }
        try (DirectoryStream<Path> s = Files.newDirectoryStream(target)) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                if (!n.startsWith(".") && !(n.startsWith("_") && !n.contains("="))) {
                    return true;
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("quiver: cannot append to '" + target + "': " + e, e);
        }
        return false;
    }

    @Override
    public String toString() {
        return "QuiverWriteBuilder[" + table.name() + (truncate ? ", overwrite" : "") + "]";
    }
}
