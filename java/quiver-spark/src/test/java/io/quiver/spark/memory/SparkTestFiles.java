package io.quiver.spark.memory;

import io.quiver.FileOptions;
import io.quiver.QuiverFile;
import io.quiver.QuiverScanReader;
import io.quiver.QuiverWriter;
import io.quiver.ScanOptions;
import io.quiver.WriterOptions;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.SparkSession;

/**
 * What the Spark tests share: a session on loopback (also the end-to-end tests', io.quiver.spark), files of
 * int64 columns, a scan inside a task.
 */
public final class SparkTestFiles {
    private SparkTestFiles() {}

    public static SparkSession session(String app, boolean offHeap) {
        SparkSession.Builder b = SparkSession.builder()
                .master("local[2]")
                .appName(app)
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.unsafe.exceptionOnMemoryLeak", "true")
                .config("spark.task.maxFailures", "1");
        if (offHeap) {
            b.config("spark.memory.offHeap.enabled", "true").config("spark.memory.offHeap.size", "64m");
        }
        return b.getOrCreate();
    }

    /** `columns` int64 columns c0.. of `rows` rows; c_k of row r holds r * (k + 1). */
    public static void writeLongs(BufferAllocator a, Path p, int columns, int rows) {
        writeLongs(a, p, columns, rows, 16384);
    }

    /** The same with row groups of `groupRows` rows. */
    public static void writeLongs(BufferAllocator a, Path p, int columns, int rows, long groupRows) {
        List<Field> fields = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            fields.add(new Field("c" + c, FieldType.notNullable(new ArrowType.Int(64, true)), null));
        }
        Schema schema = new Schema(fields);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema, WriterOptions.builder().rowGroupRows(groupRows).build())) {
            for (int start = 0; start < rows; start += 8192) {
                int n = Math.min(8192, rows - start);
                root.allocateNew();
                for (int c = 0; c < columns; c++) {
                    BigIntVector v = (BigIntVector) root.getVector(c);
                    for (int i = 0; i < n; i++) {
                        v.setSafe(i, (long) (start + i) * (c + 1));
                    }
                }
                root.setRowCount(n);
                w.write(root);
            }
            w.finish();
        }
    }

    /** Scans `file` under the task's memory, checks column c1, returns the rows. */
    static long scan(TaskMemory m, String file, int threads) throws Exception {
        long row = 0;
        try (QuiverFile f = QuiverFile.open(Path.of(file), FileOptions.defaults().pool(m.pool()));
                QuiverScanReader r = f.scan(m.importAllocator(),
                        ScanOptions.builder().batchRows(4096).threads(threads).build())) {
            while (r.loadNextBatch()) {
                BigIntVector c1 = (BigIntVector) r.getVectorSchemaRoot().getVector("c1");
                for (int i = 0; i < c1.getValueCount(); i++) {
                    if (c1.get(i) != (row + i) * 2) {
                        throw new AssertionError("row " + (row + i) + ": " + c1.get(i));
                    }
                }
                row += c1.getValueCount();
            }
        }
        return row;
    }
}
