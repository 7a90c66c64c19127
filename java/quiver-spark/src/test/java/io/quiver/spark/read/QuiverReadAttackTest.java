package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.QuiverWriter;
import io.quiver.WriterOptions;
import io.quiver.spark.memory.TaskMemory;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The read path attacked as a hostile user would: schemas that differ
 * between files in ways a merge must not confuse, user schemas that do not
 * match the files, filters whose native evaluation could differ from
 * Spark's, odd directories and options. Each case either reads exactly the
 * rows Spark would (checked against the same rows in a local relation, where
 * nothing is pushed) or fails with an error naming what and where.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class QuiverReadAttackTest {
    @TempDir static Path dir;
    static SparkSession spark;

    @BeforeAll
    static void start() {
        spark = ReadTestFiles.session("QuiverReadAttackTest", "64m");
        spark.conf().set("spark.sql.adaptive.enabled", "false");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    @AfterEach
    void nothingLive() {
        assertEquals(0, TaskMemory.liveCount());
    }

    // ---- helpers ----

    static Field i64(String name) {
        return new Field(name, FieldType.nullable(new ArrowType.Int(64, true)), null);
    }

    static Field struct(String name, Field... children) {
        return new Field(name, FieldType.nullable(ArrowType.Struct.INSTANCE), List.of(children));
    }

    /** Writes one row group of {@code rows} rows of {@code schema}, {@code fill} setting the values. */
    static Path write(Path p, Schema schema, int rows, Consumer<VectorSchemaRoot> fill) throws Exception {
        Files.createDirectories(p.getParent());
        try (BufferAllocator a = new RootAllocator();
                VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema, WriterOptions.defaults())) {
            root.allocateNew();
            fill.accept(root);
            root.setRowCount(rows);
            w.write(root);
            w.finish();
        }
        return p;
    }

    static List<String> sorted(Dataset<Row> df) {
        List<String> out = new ArrayList<>();
        for (Row r : df.collectAsList()) {
            out.add(r.toString());
        }
        out.sort(null);
        return out;
    }

    static String trace(Throwable e) {
        StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    /** {@code cond} through format("quiver") (pushed) and over the same rows in a local relation (not pushed). */
    static void sameAsSpark(Dataset<Row> quiver, String cond) {
        Dataset<Row> local = spark.createDataFrame(quiver.collectAsList(), quiver.schema());
        assertEquals(sorted(local.filter(cond)), sorted(quiver.filter(cond)), cond);
    }

    /** s struct<a, b> in one file and s struct<b, a> in the other: merged by name, values must not swap. */
    @Test
    void mergedStructFieldsInAnotherOrder() throws Exception {
        Path t = dir.resolve("structOrder");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a"), i64("b")))), 3, root -> {
            BigIntVector id = (BigIntVector) root.getVector("id");
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 3; r++) {
                id.setSafe(r, r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 10 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 20 + r);
            }
        });
        write(t.resolve("2.qvr"), new Schema(List.of(i64("id"), struct("s", i64("b"), i64("a")))), 3, root -> {
            BigIntVector id = (BigIntVector) root.getVector("id");
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 3; r++) {
                id.setSafe(r, 100 + r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 110 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 120 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        List<Row> rows = df.select("id", "s.a", "s.b").orderBy("id").collectAsList();
        assertEquals(6, rows.size());
        for (Row r : rows) {
            long id = r.getLong(0);
            assertEquals(id + 10, r.getLong(1), "s.a of id " + id);
            assertEquals(id + 20, r.getLong(2), "s.b of id " + id);
        }
        List<Row> whole = df.select("id", "s").orderBy("id").collectAsList();
        for (Row r : whole) {
            long id = r.getLong(0);
            Row s = r.getStruct(1);
            assertEquals(id + 10, s.getLong(s.fieldIndex("a")), "s.a of id " + id);
            assertEquals(id + 20, s.getLong(s.fieldIndex("b")), "s.b of id " + id);
        }
    }

    /** s struct<a, b> in one file and s struct<a> in the other: s.b is null there. */
    @Test
    void mergedStructFieldMissingFromOneFile() throws Exception {
        Path t = dir.resolve("structMissing");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a"), i64("b")))), 2, root -> {
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 2; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 10 + r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 20 + r);
            }
        });
        write(t.resolve("2.qvr"), new Schema(List.of(i64("id"), struct("s", i64("a")))), 2, root -> {
            StructVector s = (StructVector) root.getVector("s");
            for (int r = 0; r < 2; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, 100 + r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("a")).setSafe(r, 110 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        List<Row> rows = df.select("id", "s.a", "s.b").orderBy("id").collectAsList();
        assertEquals(4, rows.size());
        for (Row r : rows) {
            long id = r.getLong(0);
            assertEquals(id + 10, r.getLong(1));
            if (id < 100) {
                assertEquals(id + 20, r.getLong(2));
            } else {
                assertTrue(r.isNullAt(2), "s.b of id " + id);
            }
        }
        assertEquals(2, df.filter("s.b IS NULL").count());
        sameAsSpark(df.select("id", "s"), "s.b IS NULL OR s.a > 110");
    }

    /** A user schema whose type differs from the file's: an error naming the column, not a crash or wrong values. */
    @Test
    void userSchemaOfAnotherType() throws Exception {
        Path t = dir.resolve("userType");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").schema("id INT").load(t.toString());
        Throwable e = assertThrows(Throwable.class, df::collectAsList);
        String s = trace(e);
        assertTrue(s.contains("id") && s.contains("1.qvr"), s);
    }

    /** A user schema with a column no file has: nulls, also under a filter on it. */
    @Test
    void userSchemaWithAColumnNoFileHas() throws Exception {
        Path t = dir.resolve("userMissing");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("id"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").schema("id BIGINT, extra BIGINT").load(t.toString());
        assertEquals(3, df.filter("extra IS NULL").count());
        assertEquals(0, df.filter("extra = 1").count());
    }

    /** Column names with dots, quotes, spaces and another case. */
    @Test
    void oddColumnNames() throws Exception {
        Path t = dir.resolve("names");
        Schema schema = new Schema(List.of(i64("a.b"), i64("q\"t"), i64("sp ace"), i64("Upper"),
                struct("a", i64("b"))));
        write(t.resolve("1.qvr"), schema, 5, root -> {
            StructVector s = (StructVector) root.getVector("a");
            for (int r = 0; r < 5; r++) {
                ((BigIntVector) root.getVector("a.b")).setSafe(r, r);
                ((BigIntVector) root.getVector("q\"t")).setSafe(r, 10 + r);
                ((BigIntVector) root.getVector("sp ace")).setSafe(r, 20 + r);
                ((BigIntVector) root.getVector("Upper")).setSafe(r, 30 + r);
                s.setIndexDefined(r);
                ((BigIntVector) s.getChild("b")).setSafe(r, 40 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").load(t.toString());
        String[] conds = {"`a.b` = 2", "a.b = 42", "`q\"t` > 12", "`sp ace` < 21", "upper = 31", "UPPER >= 33",
            "`a.b` + 40 = a.b"};
        for (String c : conds) {
            sameAsSpark(df, c);
        }
        assertEquals(List.of("[2,42]"), sorted(df.filter("`a.b` = 2").select("`a.b`", "a.b")));
    }

    /** One file spells the column "ID", the other "id": merged ignoring case, read and filtered in both. */
    @Test
    void columnSpelledDifferentlyInTwoFiles() throws Exception {
        Path t = dir.resolve("caseMerge");
        write(t.resolve("1.qvr"), new Schema(List.of(i64("ID"), i64("v"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("ID")).setSafe(r, r);
                ((BigIntVector) root.getVector("v")).setSafe(r, r);
            }
        });
        write(t.resolve("2.qvr"), new Schema(List.of(i64("id"), i64("v"))), 3, root -> {
            for (int r = 0; r < 3; r++) {
                ((BigIntVector) root.getVector("id")).setSafe(r, 10 + r);
                ((BigIntVector) root.getVector("v")).setSafe(r, 10 + r);
            }
        });
        Dataset<Row> df = spark.read().format("quiver").option("mergeSchema", "true").load(t.toString());
        assertEquals(6, df.filter("id = v").count());
        assertEquals(List.of("[1,1]", "[11,11]"), sorted(df.filter("id IN (1, 11)").select("id", "v")));
        Dataset<Row> user = spark.read().format("quiver").schema("Id BIGINT, V BIGINT").load(t.toString());
        assertEquals(List.of("[2,2]"), sorted(user.filter("id = 2")));
    }

}
