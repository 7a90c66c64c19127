package io.quiver;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.DenseUnionVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;

/**
 * A file's (or a row group's) statistics as Arrow data, in the layout of
 * Arrow's statistics schema (docs/statistics.md): a {@link VectorSchemaRoot}
 * with the columns {@code column: int32} and
 * {@code statistics: map<dictionary<utf8>, dense_union>}; row 0 describes
 * the table, row n + 1 field n of the schema in depth-first pre-order. The
 * map's keys are dictionary-encoded; the dictionary is in
 * {@link #dictionaries()}. {@link #of(int)} reads one row as a Java map.
 *
 * <p>The vectors live in the allocator given to
 * {@link QuiverFile#statistics(org.apache.arrow.memory.BufferAllocator)};
 * close this object to free them.
 */
public final class FileStatistics implements AutoCloseable {
    private final VectorSchemaRoot root;
    private final CDataDictionaryProvider dictionaries;

    FileStatistics(VectorSchemaRoot root, CDataDictionaryProvider dictionaries) {
        this.root = root;
        this.dictionaries = dictionaries;
    }

    /** The statistics as imported (columns {@code column} and {@code statistics}). */
    public VectorSchemaRoot root() {
        return root;
    }

    /** The dictionary of the map's keys (and any other dictionary of the import). */
    public CDataDictionaryProvider dictionaries() {
        return dictionaries;
    }

    /**
     * The statistics of field {@code column} (its number in depth-first
     * pre-order; -1 for the table row) as key to value, for example
     * {@code "ARROW:null_count:exact" -> 0L}; values are what the union
     * member's vector gives ({@code Long}, {@code Double}, {@code Text}, ...).
     * An empty map when the field has no row.
     */
    public Map<String, Object> of(int column) {
        IntVector columns = (IntVector) root.getVector("column");
        MapVector stats = (MapVector) root.getVector("statistics");
        Map<String, Object> out = new LinkedHashMap<>();
        for (int row = 0; row < root.getRowCount(); row++) {
            boolean match = column < 0 ? columns.isNull(row) : !columns.isNull(row) && columns.get(row) == column;
            if (!match) {
                continue;
            }
            StructVector entries = (StructVector) stats.getDataVector();
            FieldVector keys = (FieldVector) entries.getChildByOrdinal(0);
            DenseUnionVector items = (DenseUnionVector) entries.getChildByOrdinal(1);
            int begin = stats.getElementStartIndex(row);
            int end = stats.getElementEndIndex(row);
            for (int i = begin; i < end; i++) {
                out.put(key(keys, i), items.getObject(i));
            }
            break;
        }
        return out;
    }

    private String key(FieldVector keys, int i) {
        DictionaryEncoding encoding = keys.getField().getDictionary();
        if (encoding == null) {
            return String.valueOf(keys.getObject(i));
        }
        Dictionary dictionary = dictionaries.lookup(encoding.getId());
        ValueVector values = dictionary.getVector();
        int index = (int) ((org.apache.arrow.vector.BaseIntVector) keys).getValueAsLong(i);
        return values instanceof VarCharVector ? ((VarCharVector) values).getObject(index).toString()
                : String.valueOf(values.getObject(index));
    }

    @Override
    public void close() {
        try {
            root.close();
        } finally {
            dictionaries.close();
        }
    }
}
