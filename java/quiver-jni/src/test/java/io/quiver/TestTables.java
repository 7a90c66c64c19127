package io.quiver;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Tables the tests write and read back: every row's values follow from its
 * global row number, so a reader can check any row it gets.
 */
final class TestTables {
    private TestTables() {}

    static Field field(String name, ArrowType type, boolean nullable, Field... children) {
        return new Field(name, new FieldType(nullable, type, null), List.of(children));
    }

    /** id int64, i32 int32?, f64 double, s utf8?, b bool, d date32, ts timestamp[us, UTC], st struct?{x int32, y utf8?}, l list?<int32>. */
    static Schema mixedSchema() {
        return new Schema(List.of(
                field("id", new ArrowType.Int(64, true), false),
                field("i32", new ArrowType.Int(32, true), true),
                field("f64", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), false),
                field("s", ArrowType.Utf8.INSTANCE, true),
                field("b", ArrowType.Bool.INSTANCE, false),
                field("d", new ArrowType.Date(DateUnit.DAY), false),
                field("ts", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC"), false),
                field("st", ArrowType.Struct.INSTANCE, true,
                        field("x", new ArrowType.Int(32, true), false),
                        field("y", ArrowType.Utf8.INSTANCE, true)),
                field("l", ArrowType.List.INSTANCE, true,
                        field("item", new ArrowType.Int(32, true), true))));
    }

    static String str(long r) {
        return r % 3 == 0 ? "s" + r + "-ünï" : "s" + r;
    }

    /** Fills `root` (of mixedSchema) with rows start .. start+n-1. */
    static void fillMixed(VectorSchemaRoot root, long start, int n) {
        root.allocateNew();
        BigIntVector id = (BigIntVector) root.getVector("id");
        IntVector i32 = (IntVector) root.getVector("i32");
        Float8Vector f64 = (Float8Vector) root.getVector("f64");
        VarCharVector s = (VarCharVector) root.getVector("s");
        BitVector b = (BitVector) root.getVector("b");
        DateDayVector d = (DateDayVector) root.getVector("d");
        TimeStampMicroTZVector ts = (TimeStampMicroTZVector) root.getVector("ts");
        StructVector st = (StructVector) root.getVector("st");
        IntVector stx = st.getChild("x", IntVector.class);
        VarCharVector sty = st.getChild("y", VarCharVector.class);
        ListVector l = (ListVector) root.getVector("l");
        UnionListWriter lw = l.getWriter();
        for (int i = 0; i < n; i++) {
            long r = start + i;
            id.setSafe(i, r);
            if (r % 7 == 0) i32.setNull(i);
            else i32.setSafe(i, (int) (r * 3 - 1000));
            f64.setSafe(i, r * 0.5);
            if (r % 5 == 0) s.setNull(i);
            else s.setSafe(i, str(r).getBytes(StandardCharsets.UTF_8));
            b.setSafe(i, r % 2 == 0 ? 1 : 0);
            d.setSafe(i, (int) (r - 100));
            ts.setSafe(i, r * 1_000_000L);
            if (r % 11 == 0) {
                st.setNull(i);
                stx.setSafe(i, 0); // a value under the null, as producers leave
                sty.setNull(i);
            } else {
                st.setIndexDefined(i);
                stx.setSafe(i, (int) r);
                if (r % 4 == 0) sty.setNull(i);
                else sty.setSafe(i, ("y" + r).getBytes(StandardCharsets.UTF_8));
            }
            lw.setPosition(i);
            if (r % 13 == 0) {
                lw.writeNull();
            } else {
                lw.startList();
                for (int k = 0; k < r % 4; k++) {
                    if (k == 2) lw.writeNull();
                    else lw.integer().writeInt((int) (r + k));
                }
                lw.endList();
            }
        }
        lw.setValueCount(n);
        root.setRowCount(n);
    }

    /** Each column's values as strings, row by row, appended to cols (one list per column). */
    static void collect(VectorSchemaRoot root, List<List<String>> cols) {
        List<FieldVector> vs = root.getFieldVectors();
        while (cols.size() < vs.size()) cols.add(new ArrayList<>());
        for (int c = 0; c < vs.size(); c++)
            for (int i = 0; i < root.getRowCount(); i++) cols.get(c).add(String.valueOf(vs.get(c).getObject(i)));
    }

    /** Writes `rows` rows of mixedSchema in roots of `chunk` rows. Returns each column's strings. */
    static List<List<String>> writeMixed(BufferAllocator a, Path p, long rows, int chunk, WriterOptions o) {
        List<List<String>> cols = new ArrayList<>();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(mixedSchema(), a);
                QuiverWriter w = QuiverWriter.open(a, p, root.getSchema(), o)) {
            for (long start = 0; start < rows; start += chunk) {
                int n = (int) Math.min(chunk, rows - start);
                fillMixed(root, start, n);
                w.write(root);
                collect(root, cols);
            }
            WriteResult r = w.finish();
            if (r.rows() != rows) throw new AssertionError("wrote " + r.rows() + " rows, expected " + rows);
        }
        return cols;
    }

    /** One int64 column "v" of random values (incompressible), in row groups of `rowGroup` rows. */
    static void writeRandomLongs(BufferAllocator a, Path p, int rows, int rowGroup, long seed) {
        Schema schema = new Schema(List.of(field("v", new ArrowType.Int(64, true), false)));
        Random rnd = new Random(seed);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema, WriterOptions.builder().rowGroupRows(rowGroup).build())) {
            BigIntVector v = (BigIntVector) root.getVector("v");
            for (int start = 0; start < rows; start += 8192) {
                int n = Math.min(8192, rows - start);
                root.allocateNew();
                for (int i = 0; i < n; i++) v.setSafe(i, rnd.nextLong());
                root.setRowCount(n);
                w.write(root);
            }
            w.finish();
        }
    }
}
