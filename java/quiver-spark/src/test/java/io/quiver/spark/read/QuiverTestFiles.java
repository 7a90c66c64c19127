package io.quiver.spark.read;

import io.quiver.QuiverWriter;
import io.quiver.WriterOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.SparkSession;

/** What the driver-side tests share: a Spark session on loopback and small Quiver files. */
final class QuiverTestFiles {
    private QuiverTestFiles() {}

    static SparkSession session(String app) {
        return SparkSession.builder()
                .master("local[2]")
                .appName(app)
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.unsafe.exceptionOnMemoryLeak", "true")
                .config("spark.memory.offHeap.enabled", "true")
                .config("spark.memory.offHeap.size", "256m")
                .config("spark.task.maxFailures", "1")
                .getOrCreate();
    }

    static final Field ID = new Field("id", FieldType.nullable(new ArrowType.Int(64, true)), null);
    static final Field X = new Field("x", FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
            null);
    static final Field NAME = new Field("name", FieldType.nullable(new ArrowType.Utf8()), null);

    /**
     * Writes {@code rows} rows of {@code fields} (each an int64, float64 or
     * utf8 column) to {@code path}, rows {@code first..first+rows-1}: id = r,
     * x = r / 2.0 (null when r % 10 == 9), name = "n" + r; row groups of
     * {@code rowGroupRows} rows.
     */
    static Path write(Path path, List<Field> fields, long first, int rows, long rowGroupRows) throws IOException {
        Files.createDirectories(path.getParent());
        Schema schema = new Schema(fields);
        try (BufferAllocator a = new RootAllocator(Long.MAX_VALUE);
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, path, schema,
                        WriterOptions.builder().rowGroupRows(rowGroupRows).build())) {
            for (int start = 0; start < rows; start += 1000) {
                int n = Math.min(1000, rows - start);
                root.allocateNew();
                for (int c = 0; c < fields.size(); c++) {
                    Object v = root.getVector(c);
                    for (int i = 0; i < n; i++) {
                        long r = first + start + i;
                        if (v instanceof BigIntVector b) {
                            b.setSafe(i, r);
                        } else if (v instanceof Float8Vector d) {
                            if (r % 10 == 9) {
                                d.setNull(i);
                            } else {
                                d.setSafe(i, r / 2.0);
                            }
                        } else if (v instanceof VarCharVector s) {
                            s.setSafe(i, ("n" + r).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                        }
                    }
                }
                root.setRowCount(n);
                w.write(root);
            }
            w.finish();
        }
        return path;
    }

    /**
     * {@code rows} rows of id int64 (= r), s struct{a int64 (= 10 r), b utf8
     * ("b" + r)} and ts timestamp[ns] without zone (r seconds + 1 ns), in
     * one row group.
     */
    static Path writeNested(Path path, int rows) throws IOException {
        Files.createDirectories(path.getParent());
        Field a = new Field("a", FieldType.nullable(new ArrowType.Int(64, true)), null);
        Field b = new Field("b", FieldType.nullable(new ArrowType.Utf8()), null);
        Field st = new Field("s", FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(a, b));
        Field ts = new Field("ts", FieldType.nullable(
                new ArrowType.Timestamp(org.apache.arrow.vector.types.TimeUnit.NANOSECOND, null)), null);
        Schema schema = new Schema(List.of(ID, st, ts));
        try (BufferAllocator al = new RootAllocator(Long.MAX_VALUE);
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, al);
                QuiverWriter w = QuiverWriter.open(al, path, schema, WriterOptions.defaults())) {
            root.allocateNew();
            BigIntVector id = (BigIntVector) root.getVector("id");
            org.apache.arrow.vector.complex.StructVector sv =
                    (org.apache.arrow.vector.complex.StructVector) root.getVector("s");
            BigIntVector av = (BigIntVector) sv.getChild("a");
            VarCharVector bv = (VarCharVector) sv.getChild("b");
            org.apache.arrow.vector.TimeStampNanoVector tv =
                    (org.apache.arrow.vector.TimeStampNanoVector) root.getVector("ts");
            for (int r = 0; r < rows; r++) {
                id.setSafe(r, r);
                sv.setIndexDefined(r);
                av.setSafe(r, 10L * r);
                bv.setSafe(r, ("b" + r).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                tv.setSafe(r, r * 1_000_000_000L + 1);
            }
            root.setRowCount(rows);
            w.write(root);
            w.finish();
        }
        return path;
    }
}
