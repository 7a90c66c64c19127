package io.quiver.memory;

import io.quiver.QuiverWriter;
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

/** Files for the pool tests: `columns` int64 columns c0.. of `rows` rows, value = row * (column + 1). */
final class PoolFixtures {
    private PoolFixtures() {}

    static void writeLongs(BufferAllocator a, Path p, int columns, int rows, int rowGroupRows) {
        List<Field> fields = new ArrayList<>();
        for (int c = 0; c < columns; c++) {
            fields.add(new Field("c" + c, FieldType.notNullable(new ArrowType.Int(64, true)), null));
        }
        Schema schema = new Schema(fields);
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                QuiverWriter w = QuiverWriter.open(a, p, schema, WriterOptions.builder().rowGroupRows(rowGroupRows).build())) {
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
}
