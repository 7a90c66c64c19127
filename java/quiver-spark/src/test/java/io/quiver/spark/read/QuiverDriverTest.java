package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quiver.QuiverFile;
import io.quiver.spark.QuiverDataSource;
import io.quiver.spark.QuiverTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.colstats.ColumnStatistics;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The driver side of format("quiver"): listing, partitions, schemas,
 * pushdown reporting, split planning, description and statistics, checked
 * on the scan Spark's optimizer builds (and on the scan builder directly for
 * pushdown).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class QuiverDriverTest {
    private static SparkSession spark;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkTestSession.start("QuiverDriverTest", "256m");
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    @AfterEach
    void resetConf() {
        spark.conf().unset("spark.sql.files.maxPartitionBytes");
        spark.conf().unset("spark.sql.files.openCostInBytes");
        spark.conf().unset("spark.sql.sources.partitionColumnTypeInference.enabled");
    }

    private static final List<org.apache.arrow.vector.types.pojo.Field> ID_X =
            List.of(ReadTestFiles.ID, ReadTestFiles.X);

    /** The QuiverScan the optimizer made for {@code df}. */
    private static QuiverScan scanOf(Dataset<Row> df) {
        LogicalPlan plan = df.queryExecution().optimizedPlan();
        List<QuiverScan> found = new ArrayList<>();
        plan.foreach(node -> {
            if (node instanceof DataSourceV2ScanRelation r && r.scan() instanceof QuiverScan s) {
                found.add(s);
            }
            return null;
        });
        assertEquals(1, found.size(), "one Quiver scan in " + plan);
        return found.get(0);
    }

    private static List<String> fileNames(QuiverScan s) {
        List<String> out = new ArrayList<>();
        for (String f : s.plan().files()) {
            out.add(f.substring(f.lastIndexOf('/') + 1));
        }
        out.sort(null);
        return out;
    }

    @Test
    void listsAFileADirectoryAGlobAndSeveralPaths() throws IOException {
        ReadTestFiles.write(dir.resolve("t/a.qvr"), ID_X, 0, 100, 1000);
        ReadTestFiles.write(dir.resolve("t/sub/b.qvr"), ID_X, 100, 50, 1000);
        // Hidden and underscore files are skipped as Spark skips them: these
        // have another schema and would fail the read if listed.
        ReadTestFiles.write(dir.resolve("t/_c.qvr"), List.of(ReadTestFiles.NAME), 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("t/.d.qvr"), List.of(ReadTestFiles.NAME), 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("t/_hidden/e.qvr"), List.of(ReadTestFiles.NAME), 0, 10, 1000);

        Dataset<Row> file = spark.read().format("quiver").load(dir.resolve("t/a.qvr").toString());
        assertEquals(List.of("a.qvr"), fileNames(scanOf(file)));
        assertEquals(100, scanOf(file).plan().rows());
        StructType expected = new StructType().add("id", DataTypes.LongType).add("x", DataTypes.DoubleType);
        assertEquals(expected, file.schema());

        // As for Parquet: a folder that is not key=value is read only with recursiveFileLookup.
        Dataset<Row> top = spark.read().format("quiver").load(dir.resolve("t").toString());
        assertEquals(List.of("a.qvr"), fileNames(scanOf(top)));
        Dataset<Row> tree = spark.read().format("quiver").option("recursiveFileLookup", "true")
                .load(dir.resolve("t").toString());
        assertEquals(List.of("a.qvr", "b.qvr"), fileNames(scanOf(tree)));
        assertEquals(150, scanOf(tree).plan().rows());

        Dataset<Row> glob = spark.read().format("quiver").load(dir.resolve("t").toString() + "/*.qvr");
        assertEquals(List.of("a.qvr"), fileNames(scanOf(glob)));

        Dataset<Row> two = spark.read().format("quiver").load(dir.resolve("t/a.qvr").toString(),
                dir.resolve("t/sub/b.qvr").toString());
        assertEquals(List.of("a.qvr", "b.qvr"), fileNames(scanOf(two)));
    }

    @Test
    void aMissingPathFailsAsParquetDoes() {
        String missing = dir.resolve("nothing-here").toString();
        AnalysisException e = assertThrows(AnalysisException.class,
                () -> spark.read().format("quiver").load(missing));
        assertEquals("PATH_NOT_FOUND", e.getCondition());
        AnalysisException p = assertThrows(AnalysisException.class,
                () -> spark.read().format("parquet").load(missing));
        assertEquals(p.getCondition(), e.getCondition());
    }

    @Test
    void hivePartitionsAreColumnsAndPrunedOnTheDriver() throws IOException {
        ReadTestFiles.write(dir.resolve("p/k=1/a.qvr"), ID_X, 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("p/k=2/b.qvr"), ID_X, 10, 10, 1000);
        ReadTestFiles.write(dir.resolve("p/k=__HIVE_DEFAULT_PARTITION__/c.qvr"), ID_X, 20, 10, 1000);
        String root = dir.resolve("p").toString();

        Dataset<Row> df = spark.read().format("quiver").load(root);
        assertEquals(new StructType().add("id", DataTypes.LongType).add("x", DataTypes.DoubleType)
                .add("k", DataTypes.IntegerType), df.schema());
        assertEquals(List.of("a.qvr", "b.qvr", "c.qvr"), fileNames(scanOf(df)));

        QuiverScan eq = scanOf(df.filter("k = 2"));
        assertEquals(List.of("b.qvr"), fileNames(eq));
        assertTrue(eq.description().contains("partitionFilters=["), eq.description());
        // Spark's semantics: k = 2 is not true for the null partition, IS NULL is.
        assertEquals(List.of("c.qvr"), fileNames(scanOf(df.filter("k IS NULL"))));
        assertEquals(List.of("a.qvr", "b.qvr"), fileNames(scanOf(df.filter("k <> 3"))));
        // Only the needed partition column is read, after the data columns.
        QuiverScan projected = scanOf(df.select("k", "id"));
        assertEquals(new StructType().add("id", DataTypes.LongType).add("k", DataTypes.IntegerType),
                projected.readSchema());
        for (QuiverInputPartition part : partitions(projected)) {
            for (FileSlice s : part.slices()) {
                assertEquals(1, s.partitionValues().numFields());
                String name = s.path().substring(s.path().lastIndexOf('/') + 1);
                if (name.equals("c.qvr")) {
                    assertTrue(s.partitionValues().isNullAt(0));
                } else {
                    assertEquals(name.equals("a.qvr") ? 1 : 2, s.partitionValues().getInt(0));
                }
            }
        }

        spark.conf().set("spark.sql.sources.partitionColumnTypeInference.enabled", "false");
        Dataset<Row> strings = spark.read().format("quiver").load(root);
        assertEquals(DataTypes.StringType, strings.schema().apply("k").dataType());

        // basePath: a leaf folder read with its partition column.
        Dataset<Row> leaf = spark.read().format("quiver").option("basePath", root)
                .load(dir.resolve("p/k=1").toString());
        assertEquals(DataTypes.StringType, leaf.schema().apply("k").dataType());
        assertEquals(List.of("a.qvr"), fileNames(scanOf(leaf)));
    }

    private static List<QuiverInputPartition> partitions(QuiverScan s) {
        List<QuiverInputPartition> out = new ArrayList<>();
        for (var p : s.planInputPartitions()) {
            out.add((QuiverInputPartition) p);
        }
        return out;
    }

    @Test
    void mergeSchemaMergesByNameOrRefusesNamingBothFiles() throws IOException {
        ReadTestFiles.write(dir.resolve("m/a.qvr"), ID_X, 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("m/b.qvr"), List.of(ReadTestFiles.ID, ReadTestFiles.NAME), 10, 10, 1000);
        String root = dir.resolve("m").toString();

        IllegalArgumentException off = assertThrows(IllegalArgumentException.class,
                () -> spark.read().format("quiver").load(root).schema());
        assertTrue(off.getMessage().contains("a.qvr") && off.getMessage().contains("b.qvr"), off.getMessage());
        assertTrue(off.getMessage().contains("mergeSchema"), off.getMessage());

        Dataset<Row> merged = spark.read().format("quiver").option("MERGESCHEMA", "true").load(root);
        assertEquals(new StructType().add("id", DataTypes.LongType).add("x", DataTypes.DoubleType, true)
                .add("name", DataTypes.StringType, true), merged.schema());
        // Splits weigh only the columns a file has.
        assertEquals(20, scanOf(merged.select("name")).plan().rows());

        ReadTestFiles.write(dir.resolve("c/a.qvr"), ID_X, 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("c/b.qvr"),
                List.of(new org.apache.arrow.vector.types.pojo.Field("id",
                        org.apache.arrow.vector.types.pojo.FieldType.nullable(
                                new org.apache.arrow.vector.types.pojo.ArrowType.Utf8()), null)), 0, 10, 1000);
        IllegalArgumentException conflict = assertThrows(IllegalArgumentException.class,
                () -> spark.read().format("quiver").option("mergeSchema", "true")
                        .load(dir.resolve("c").toString()).schema());
        String m = conflict.getMessage();
        assertTrue(m.contains("a.qvr") && m.contains("b.qvr") && m.contains("'id'"), m);

        // The conflict names the file the merged column came from.
        ReadTestFiles.write(dir.resolve("m3/a.qvr"), List.of(ReadTestFiles.ID), 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("m3/b.qvr"), List.of(ReadTestFiles.ID, ReadTestFiles.NAME), 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("m3/c.qvr"), List.of(new org.apache.arrow.vector.types.pojo.Field("name",
                org.apache.arrow.vector.types.pojo.FieldType.nullable(
                        new org.apache.arrow.vector.types.pojo.ArrowType.Int(64, true)), null)), 0, 10, 1000);
        String m3 = assertThrows(IllegalArgumentException.class,
                () -> spark.read().format("quiver").option("mergeSchema", "true")
                        .load(dir.resolve("m3").toString()).schema()).getMessage();
        assertTrue(m3.contains("b.qvr") && m3.contains("c.qvr") && !m3.contains("a.qvr") && m3.contains("'name'"), m3);

        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> spark.read().format("quiver").option("mergeSchema", "yes").load(root).schema());
        assertTrue(bad.getMessage().contains("mergeSchema"), bad.getMessage());
    }

    /**
     * The split size follows Spark's rule over the bytes the query reads,
     * not the file's length: the one projected column of this file is a few
     * KiB of a 5 MiB file, and local[2] still gets a task per core (sized by
     * the file's length, half of it per core, it was one task).
     */
    @Test
    void aFewProjectedColumnsStillGiveATaskPerCore() throws IOException {
        Path f = ReadTestFiles.write(dir.resolve("cores/a.qvr"), ID_X, 0, 2_000_000, 100_000);
        spark.conf().unset("spark.sql.files.maxPartitionBytes");
        spark.conf().set("spark.sql.files.openCostInBytes", "1");
        try {
            QuiverScan s = scanOf(spark.read().format("quiver").load(f.toString()).select("id"));
            assertTrue(partitions(s).size() >= 2, "partitions: " + partitions(s));
        } finally {
            spark.conf().unset("spark.sql.files.openCostInBytes");
        }
    }

    @Test
    void aLargeFileSpreadsOverPartitionsAndSmallFilesArePacked() throws IOException {
        Path big = ReadTestFiles.write(dir.resolve("big/a.qvr"), ID_X, 0, 20000, 1000);
        long rowGroups;
        try (QuiverFile f = QuiverFile.open(big)) {
            rowGroups = f.numRowGroups();
        }
        assertEquals(20, rowGroups);
        long size = Files.size(big);
        spark.conf().set("spark.sql.files.maxPartitionBytes", Long.toString(size / 5));
        spark.conf().set("spark.sql.files.openCostInBytes", "1");
        QuiverScan s = scanOf(spark.read().format("quiver").load(big.toString()));
        List<QuiverInputPartition> parts = partitions(s);
        assertTrue(parts.size() >= 4, "several partitions: " + parts.size());
        // Every row group exactly once.
        int[] seen = new int[(int) rowGroups];
        long rows = 0;
        for (QuiverInputPartition p : parts) {
            for (FileSlice slice : p.slices()) {
                for (long g = slice.rowGroupBegin(); g < slice.rowGroupEnd(); g++) {
                    seen[(int) g]++;
                }
                rows += slice.rows();
            }
        }
        for (int g = 0; g < rowGroups; g++) {
            assertEquals(1, seen[g], "row group " + g);
        }
        assertEquals(20000, rows);
        // Deterministic: planning again gives the same partitions.
        QuiverScan again = scanOf(spark.read().format("quiver").load(big.toString()));
        assertEquals(parts, partitions(again));
        for (int i = 0; i < parts.size(); i++) {
            assertEquals(i, parts.get(i).index());
        }
        // Projecting one column weighs less, so fewer partitions.
        QuiverScan one = scanOf(spark.read().format("quiver").load(big.toString()).select("id"));
        assertTrue(one.plan().bytes() < s.plan().bytes(), one.plan().bytes() + " vs " + s.plan().bytes());

        resetConf();
        for (int i = 0; i < 6; i++) {
            ReadTestFiles.write(dir.resolve("small/f" + i + ".qvr"), ID_X, i * 10, 10, 1000);
        }
        QuiverScan small = scanOf(spark.read().format("quiver").load(dir.resolve("small").toString()));
        List<QuiverInputPartition> packed = partitions(small);
        int slices = 0;
        for (QuiverInputPartition p : packed) {
            slices += p.slices().size();
        }
        assertEquals(6, slices);
        assertTrue(packed.size() < 6, "small files share partitions: " + packed.size());
    }

    private QuiverScanBuilder builder(String path, Map<String, String> extra) {
        Map<String, String> o = new HashMap<>(extra);
        o.put("path", path);
        QuiverDataSource source = new QuiverDataSource();
        CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(o);
        StructType schema = source.inferSchema(options);
        QuiverTable t = (QuiverTable) source.getTable(schema, source.inferPartitioning(options), o);
        return (QuiverScanBuilder) t.newScanBuilder(options);
    }

    private static Predicate cmp(String op, String column, Object value, org.apache.spark.sql.types.DataType type) {
        return new Predicate(op, new Expression[] {Expressions.column(column), new LiteralValue<>(value, type)});
    }

    @Test
    void pushedAndNotPushedPredicatesAreReported() throws IOException {
        ReadTestFiles.write(dir.resolve("f/k=1/a.qvr"), ID_X, 0, 100, 1000);
        ReadTestFiles.write(dir.resolve("f/k=2/b.qvr"), ID_X, 100, 100, 1000);
        QuiverScanBuilder b = builder(dir.resolve("f").toString(), Map.of());
        Predicate data = cmp(">", "id", 5L, DataTypes.LongType);
        Predicate part = cmp("=", "k", 2, DataTypes.IntegerType);
        Predicate mixed = new Predicate(">", new Expression[] {Expressions.column("id"), Expressions.column("k")});
        Predicate[] back = b.pushPredicates(new Predicate[] {data, part, mixed});
        // The data predicate leaves Spark; the partition one is also returned; the mixed one stays.
        assertEquals(List.of(part, mixed), Arrays.asList(back));
        assertEquals(List.of(data, part), Arrays.asList(b.pushedPredicates()));
        assertTrue(b.pushLimit(7));
        QuiverScan s = (QuiverScan) b.build();
        ReadConfig c = s.readConfig();
        assertNotNull(c.filter());
        assertTrue(c.filter().contains("id"), c.filter());
        assertEquals(7, c.limit());
        assertEquals(List.of("b.qvr"), fileNames(s));
        String d = s.description();
        for (String want : List.of("paths=", "files=1", "b.qvr", "partitions=", "columns=[\"id\", \"x\"]",
                "pushedFilters=[id > 5]", "quiverFilter=(" + c.filter().substring(1), "partitionFilters=[k = 2]",
                "limit=7")) {
            assertTrue(d.contains(want), want + " in " + d);
        }

        QuiverScanBuilder none = builder(dir.resolve("f").toString(), Map.of());
        QuiverScan plain = (QuiverScan) none.build();
        assertNull(plain.readConfig().filter());
        assertEquals(0, plain.readConfig().limit());
        assertEquals(0, none.pushedPredicates().length);
        assertTrue(plain.description().contains("limit=none"), plain.description());
    }

    @Test
    void theOptimizerPushesThroughTheBuilder() throws IOException {
        ReadTestFiles.write(dir.resolve("o/a.qvr"), ID_X, 0, 100, 1000);
        Dataset<Row> df = spark.read().format("quiver").load(dir.resolve("o").toString());
        QuiverScan s = scanOf(df.filter("id > 50").select("x"));
        assertNotNull(s.readConfig().filter());
        assertEquals(List.of("\"x\""), s.readConfig().columns());
        assertEquals(new StructType().add("x", DataTypes.DoubleType), s.readSchema());
        assertTrue(s.description().contains("pushedFilters=["), s.description());
    }

    @Test
    void statisticsComeFromTheFooters() throws IOException {
        ReadTestFiles.write(dir.resolve("s/a.qvr"), ID_X, 0, 100, 1000);
        ReadTestFiles.write(dir.resolve("s/b.qvr"), ID_X, 100, 50, 1000);
        QuiverScan s = scanOf(spark.read().format("quiver").load(dir.resolve("s").toString()));
        Statistics st = s.estimateStatistics();
        assertEquals(150, st.numRows().getAsLong());
        assertTrue(st.sizeInBytes().getAsLong() > 0);
        Map<NamedReference, ColumnStatistics> cs = st.columnStats();
        ColumnStatistics id = cs.get(Expressions.column("id"));
        assertEquals(0L, id.nullCount().getAsLong());
        assertEquals(0L, id.min().get());
        assertEquals(149L, id.max().get());
        ColumnStatistics x = cs.get(Expressions.column("x"));
        assertEquals(15L, x.nullCount().getAsLong());
        assertEquals(0.0, x.min().get());
        assertEquals(74.0, x.max().get());
        QuiverScan onlyId = scanOf(spark.read().format("quiver").load(dir.resolve("s").toString()).select("id"));
        assertTrue(onlyId.estimateStatistics().sizeInBytes().getAsLong() < st.sizeInBytes().getAsLong());
        assertFalse(onlyId.estimateStatistics().columnStats().containsKey(Expressions.column("x")));
    }

    @Test
    void badOptionsAreRefusedByName() throws IOException {
        ReadTestFiles.write(dir.resolve("b/a.qvr"), ID_X, 0, 10, 1000);
        for (String[] kv : new String[][] {{"threads", "many"}, {"PREFETCH", "0"}, {"batchRows", "-1"}}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> spark.read().format("quiver").option(kv[0], kv[1]).load(dir.resolve("b").toString()));
            assertTrue(e.getMessage().toLowerCase().contains(kv[0].toLowerCase()), e.getMessage());
        }
        ReadConfig c = ((QuiverScan) builder(dir.resolve("b").toString(),
                Map.of("THREADS", "2", "prefetch", "3", "batchrows", "100")).build()).readConfig();
        assertEquals(2, c.threads());
        assertEquals(3, c.prefetch());
        assertEquals(100, c.batchRows());
    }

    @Test
    void readsEndToEnd() throws IOException {
        ReadTestFiles.write(dir.resolve("e/k=1/a.qvr"), ID_X, 0, 100, 30);
        ReadTestFiles.write(dir.resolve("e/k=2/b.qvr"), ID_X, 100, 50, 30);
        Dataset<Row> df = spark.read().format("quiver").load(dir.resolve("e").toString());
        assertEquals(150, df.count());
        Row sums = df.selectExpr("sum(id)", "count(x)", "sum(k)").first();
        assertEquals(149L * 150 / 2, sums.getLong(0));
        assertEquals(135L, sums.getLong(1));
        assertEquals(100L + 2 * 50, sums.getLong(2));
        assertEquals(49, df.filter("id > 100").count());
        assertEquals(50, df.filter("k = 2").count());
        List<Row> rows = df.filter("id >= 98 AND id <= 101").select("id", "k").orderBy("id").collectAsList();
        assertEquals(List.of(98L, 99L, 100L, 101L), rows.stream().map(r -> r.getLong(0)).toList());
        assertEquals(List.of(1, 1, 2, 2), rows.stream().map(r -> r.getInt(1)).toList());
        assertEquals(5, df.limit(5).collectAsList().size());
    }

    @Test
    void structFieldsArePrunedAndNanosecondTimestampsAreNotPushed() throws IOException {
        ReadTestFiles.writeNested(dir.resolve("n/a.qvr"), 20);
        Dataset<Row> df = spark.read().format("quiver").load(dir.resolve("n").toString());
        assertEquals(new StructType().add("id", DataTypes.LongType)
                .add("s", new StructType().add("a", DataTypes.LongType).add("b", DataTypes.StringType))
                .add("ts", DataTypes.TimestampNTZType), df.schema());
        QuiverScan s = scanOf(df.select("s.a"));
        assertEquals(List.of("\"s\".\"a\""), s.readConfig().columns());
        assertEquals(new StructType().add("s", new StructType().add("a", DataTypes.LongType)), s.readSchema());
        assertEquals(List.of(0L, 10L, 190L), List.of(df.selectExpr("min(s.a)").first().getLong(0),
                df.filter("id = 1").select("s.a").first().getLong(0), df.selectExpr("max(s.a)").first().getLong(0)));

        QuiverScanBuilder b = builder(dir.resolve("n").toString(), Map.of());
        Predicate onTs = new Predicate("IS_NOT_NULL", new Expression[] {Expressions.column("ts")});
        Predicate onId = cmp(">", "id", 3L, DataTypes.LongType);
        Predicate[] back = b.pushPredicates(new Predicate[] {onTs, onId});
        assertEquals(List.of(onTs), Arrays.asList(back), "a nanosecond column's values are not what Spark sees");
        assertEquals(List.of(onId), Arrays.asList(b.pushedPredicates()));
    }

    @Test
    void corruptFilesAreSkippedOnTheDriverOnlyWhenSparkSaysSo() throws IOException {
        ReadTestFiles.write(dir.resolve("x/a.qvr"), ID_X, 0, 10, 1000);
        Files.write(dir.resolve("x/b.qvr"), "not a quiver file at all, just some bytes".getBytes(
                java.nio.charset.StandardCharsets.UTF_8));
        String root = dir.resolve("x").toString();
        Exception e = assertThrows(Exception.class, () -> spark.read().format("quiver").load(root).schema());
        assertTrue(e.getMessage().contains("b.qvr"), e.getMessage());
        spark.conf().set("spark.sql.files.ignoreCorruptFiles", "true");
        try {
            Dataset<Row> df = spark.read().format("quiver").load(root);
            assertEquals(List.of("a.qvr"), fileNames(scanOf(df)));
            assertEquals(10, df.count());
        } finally {
            spark.conf().unset("spark.sql.files.ignoreCorruptFiles");
        }
    }

    @Test
    void aUserSchemaIsTakenAsGivenAndTypesThePartitionColumns() throws IOException {
        ReadTestFiles.write(dir.resolve("u/k=1/a.qvr"), ID_X, 0, 10, 1000);
        ReadTestFiles.write(dir.resolve("u/k=2/b.qvr"), ID_X, 10, 10, 1000);
        Dataset<Row> df = spark.read().format("quiver").schema("id long, k string")
                .load(dir.resolve("u").toString());
        assertEquals(new StructType().add("id", DataTypes.LongType).add("k", DataTypes.StringType), df.schema());
        QuiverScan s = scanOf(df.filter("k = '2'"));
        assertEquals(List.of("b.qvr"), fileNames(s));
        assertEquals(List.of("\"id\""), s.readConfig().columns());
        assertEquals(List.of(10L, 19L), List.of(df.filter("k = '2'").selectExpr("min(id)").first().getLong(0),
                df.filter("k = '2'").selectExpr("max(id)").first().getLong(0)));
    }
}
