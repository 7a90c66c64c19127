package io.quiver.spark.read;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The data columns a scan reads, from the schema Spark asks for
 * ({@code pruneColumns}): the Quiver column names to scan and the Spark
 * schema the scan then delivers.
 *
 * <p>Struct fields are pruned to the kept leaves: asking for {@code s.a}
 * of a struct {@code s} scans {@code "s"."a"} and delivers {@code s} as a
 * struct holding only {@code a}. Pruning inside a list or a map is not
 * passed down (the file layer's names step through structs); such a column
 * is read whole and delivered with its full type, which Spark allows a scan
 * to do (it projects what it asked for on top). Every name is quoted
 * ({@code "name"}, {@code ""} for a quote inside), so it matches exactly the
 * file's column whatever characters it holds.
 */
public record ColumnProjection(StructType schema, List<String> columns, List<List<String>> paths) {

    /**
     * @param schema  what the scan delivers for the data columns
     * @param columns the Quiver names to scan, quoted
     * @param paths   the same columns as unquoted name paths
     */
    public ColumnProjection {
        columns = List.copyOf(columns);
        paths = List.copyOf(paths);
    }

    /** The projection of {@code required} (a pruned subset of {@code full}) onto {@code full}. */
    public static ColumnProjection of(StructType full, StructType required) {
        List<List<String>> paths = new ArrayList<>();
        List<StructField> out = new ArrayList<>();
        for (StructField r : required.fields()) {
            StructField f = find(full, r.name());
            if (f == null) {
                // Not a column of the table (Spark asks only for table columns): keep it as asked.
                paths.add(List.of(r.name()));
                out.add(r);
                continue;
            }
            DataType t = prune(f.dataType(), r.dataType(), List.of(f.name()), paths);
            out.add(f.copy(f.name(), t, f.nullable(), f.metadata()));
        }
        List<String> names = new ArrayList<>();
        for (List<String> p : paths) {
            names.add(name(p));
        }
        return new ColumnProjection(new StructType(out.toArray(new StructField[0])), names, paths);
    }

    /** The Quiver name of a path: each name quoted, joined by dots. */
    public static String name(List<String> path) {
        StringBuilder b = new StringBuilder();
        for (String n : path) {
            if (b.length() > 0) {
                b.append('.');
            }
            b.append(quote(n));
        }
        return b.toString();
    }

    private static DataType prune(DataType full, DataType required, List<String> path, List<List<String>> names) {
        if (full instanceof StructType fs && required instanceof StructType rs
                && !DataType.equalsIgnoreNullability(fs, rs)) {
            List<StructField> kept = new ArrayList<>();
            for (StructField r : rs.fields()) {
                StructField f = find(fs, r.name());
                if (f == null) {
                    continue;
                }
                List<String> child = new ArrayList<>(path);
                child.add(f.name());
                DataType t = prune(f.dataType(), r.dataType(), List.copyOf(child), names);
                kept.add(f.copy(f.name(), t, f.nullable(), f.metadata()));
            }
            if (!kept.isEmpty()) {
                return new StructType(kept.toArray(new StructField[0]));
            }
        }
        names.add(path);
        return full;
    }

    private static StructField find(StructType s, String name) {
        for (StructField f : s.fields()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        for (StructField f : s.fields()) {
            if (f.name().equalsIgnoreCase(name)) {
                return f;
            }
        }
        return null;
    }

    /** {@code name} in double quotes, a quote inside doubled (the file layer's one name rule). */
    public static String quote(String name) {
        return '"' + name.replace("\"", "\"\"") + '"';
    }
}
