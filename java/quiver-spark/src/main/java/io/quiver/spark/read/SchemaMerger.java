package io.quiver.spark.read;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One Spark schema for files whose footers may differ.
 *
 * <p>Without {@code mergeSchema} every file must have the first file's
 * columns, names and types (nullability may differ: the result is nullable
 * where any file is); otherwise the read is refused naming both files. With
 * it, columns are merged by name, recursively through structs, lists and
 * maps: a column missing from some files is nullable (those rows read as
 * null); a null-typed column takes the other file's type; any other
 * difference of types is a conflict, refused naming the column and both
 * files. Names are matched as Spark's analyzer matches them
 * ({@code spark.sql.caseSensitive}); the first file's spelling is kept.
 */
public final class SchemaMerger {
    private SchemaMerger() {}

    /** The schema of {@code footers} (at least one), merged or checked as said above. */
    public static StructType combine(List<FileFooter> footers, boolean merge, boolean caseSensitive) {
        StructType out = footers.get(0).sparkSchema();
        String outFile = footers.get(0).path();
        // Which file brought each column (path), so a conflict names the
        // file the merged type came from.
        Map<String, String> origin = new HashMap<>();
        record(origin, out, "", outFile, caseSensitive);
        for (int i = 1; i < footers.size(); i++) {
            FileFooter f = footers.get(i);
            if (merge) {
                try {
                    out = mergeStructs(out, f.sparkSchema(), "", outFile, f.path(), caseSensitive, true);
                } catch (Conflict c) {
                    String from = origin.getOrDefault(key(c.path, caseSensitive), outFile);
                    throw new IllegalArgumentException("quiver: cannot merge the schemas of '" + from + "' and '"
                            + f.path() + "': column '" + c.path + "' is " + c.a.simpleString() + " in one and "
                            + c.b.simpleString() + " in the other");
                }
                record(origin, f.sparkSchema(), "", f.path(), caseSensitive);
            } else {
                if (!sameIgnoringNullability(out, f.sparkSchema())) {
                    throw new IllegalArgumentException("quiver: files '" + outFile + "' and '" + f.path()
                            + "' have different schemas (" + footers.get(0).sparkSchema().simpleString()
                            + " vs " + f.sparkSchema().simpleString()
                            + "); read them with option mergeSchema=true to merge columns by name");
                }
                out = (StructType) mergeTypes(out, f.sparkSchema(), "", outFile, f.path(), caseSensitive, false);
            }
        }
        return out;
    }

    private static boolean sameIgnoringNullability(DataType a, DataType b) {
        return DataType.equalsIgnoreNullability(a, b);
    }

    private static String key(String name, boolean caseSensitive) {
        return caseSensitive ? name : name.toLowerCase(Locale.ROOT);
    }

    private static StructType mergeStructs(StructType a, StructType b, String path, String fileA, String fileB,
            boolean caseSensitive, boolean merge) {
        Map<String, StructField> bs = new LinkedHashMap<>();
        for (StructField f : b.fields()) {
            bs.put(key(f.name(), caseSensitive), f);
        }
        List<StructField> out = new ArrayList<>();
        for (StructField fa : a.fields()) {
            StructField fb = bs.remove(key(fa.name(), caseSensitive));
            String p = path.isEmpty() ? fa.name() : path + "." + fa.name();
            if (fb == null) {
                out.add(fa.copy(fa.name(), fa.dataType(), true, fa.metadata()));
            } else {
                out.add(fa.copy(fa.name(), mergeTypes(fa.dataType(), fb.dataType(), p, fileA, fileB, caseSensitive,
                        merge), fa.nullable() || fb.nullable(), fa.metadata()));
            }
        }
        for (StructField fb : bs.values()) {
            out.add(fb.copy(fb.name(), fb.dataType(), true, fb.metadata()));
        }
        return new StructType(out.toArray(new StructField[0]));
    }

    private static DataType mergeTypes(DataType a, DataType b, String path, String fileA, String fileB,
            boolean caseSensitive, boolean merge) {
        if (a instanceof StructType sa && b instanceof StructType sb) {
            return mergeStructs(sa, sb, path, fileA, fileB, caseSensitive, merge);
        }
        if (a instanceof ArrayType aa && b instanceof ArrayType ab) {
            return DataTypes.createArrayType(mergeTypes(aa.elementType(), ab.elementType(), path + ".element",
                    fileA, fileB, caseSensitive, merge), aa.containsNull() || ab.containsNull());
        }
        if (a instanceof MapType ma && b instanceof MapType mb) {
            return DataTypes.createMapType(
                    mergeTypes(ma.keyType(), mb.keyType(), path + ".key", fileA, fileB, caseSensitive, merge),
                    mergeTypes(ma.valueType(), mb.valueType(), path + ".value", fileA, fileB, caseSensitive, merge),
                    ma.valueContainsNull() || mb.valueContainsNull());
        }
        if (a.equals(b)) {
            return a;
        }
        if (merge && a instanceof NullType) {
            return b;
        }
        if (merge && b instanceof NullType) {
            return a;
        }
        throw new Conflict(path, a, b);
    }

    private static void record(Map<String, String> origin, DataType t, String path, String file,
            boolean caseSensitive) {
        if (!path.isEmpty()) {
            origin.putIfAbsent(key(path, caseSensitive), file);
        }
        if (t instanceof StructType st) {
            for (StructField f : st.fields()) {
                record(origin, f.dataType(), path.isEmpty() ? f.name() : path + "." + f.name(), file,
                        caseSensitive);
            }
        } else if (t instanceof ArrayType at) {
            record(origin, at.elementType(), path + ".element", file, caseSensitive);
        } else if (t instanceof MapType mt) {
            record(origin, mt.keyType(), path + ".key", file, caseSensitive);
            record(origin, mt.valueType(), path + ".value", file, caseSensitive);
        }
    }

    /** Two types that do not merge, at {@code path}. */
    private static final class Conflict extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String path;
        final transient DataType a;
        final transient DataType b;

        Conflict(String path, DataType a, DataType b) {
            super(path, null, false, false);
            this.path = path;
            this.a = a;
            this.b = b;
        }
    }
}
