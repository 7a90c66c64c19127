package io.quiver.spark.read;

import java.util.List;
import java.util.Locale;

import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.complex.BaseListVector;
import org.apache.arrow.vector.complex.LargeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A scan's Arrow vector as a Spark column of the type the read schema
 * declares. Spark reads struct fields by position, but a file's struct may
 * hold the merged schema's fields in another order, or lack some (a merged
 * schema, a user schema): read by position, the values of one field would
 * be delivered as another's, silently. So a struct whose fields differ from
 * the declared ones is delivered through a column whose children are the
 * file's fields picked by name, in the declared order, and a null constant
 * for a field the file lacks; arrays of such structs likewise. Any other
 * difference between the file's type and the declared one (a user schema
 * saying int for a long column) cannot be read as declared and is refused
 * naming the column and the file, instead of failing later in a Spark
 * accessor or reinterpreting the values.
 */
final class ConformedColumns {
    private ConformedColumns() {}

    /**
     * The column for {@code v} (of {@code rows} values) as {@code want};
     * {@code path} (the column's dotted name) and {@code file} name it in
     * the error.
     *
     * @throws IllegalArgumentException when the file's type cannot be read as {@code want}
     */
    static ColumnVector of(ValueVector v, DataType want, String path, String file) {
        DataType have = SparkSchemaConverter.convert(new Schema(List.of(v.getField())), file).fields()[0].dataType();
        if (DataType.equalsIgnoreNullability(have, want)) {
            if (v instanceof DecimalVector d && want instanceof DecimalType dt
                    && dt.precision() <= DecimalColumnVector.MAX_LONG_PRECISION) {
                return new DecimalColumnVector(d, dt);
            }
            return new BorrowedArrowColumnVector(v);
        }
        if (v instanceof StructVector s && want instanceof StructType st) {
            StructField[] fields = st.fields();
            ColumnVector[] children = new ColumnVector[fields.length];
            int n = s.getValueCount();
            for (int i = 0; i < fields.length; i++) {
                ValueVector child = child(s, fields[i].name());
                String childPath = path + "." + fields[i].name();
                if (child == null) {
                    ConstantColumnVector c = new ConstantColumnVector(n, fields[i].dataType());
                    c.setNull();
                    children[i] = c;
                } else {
                    children[i] = of(child, fields[i].dataType(), childPath, file);
                }
            }
            return new Struct(st, new BorrowedArrowColumnVector(v), children);
        }
        if ((v instanceof ListVector || v instanceof LargeListVector) && want instanceof ArrayType at) {
            BaseListVector l = (BaseListVector) v;
            ValueVector data = v instanceof ListVector lv ? lv.getDataVector() : ((LargeListVector) v).getDataVector();
            ColumnVector elements = of(data, at.elementType(), path + ".element", file);
            return new Array(at, new BorrowedArrowColumnVector(v), l, elements);
        }
        throw new IllegalArgumentException("column '" + path + "' of " + file + " is " + have.simpleString()
                + " in the file, which cannot be read as the schema's " + want.simpleString());
    }

    /** The field of {@code s} named {@code name}: exactly, else the only one equal ignoring case. */
    private static ValueVector child(StructVector s, String name) {
        ValueVector exact = s.getChild(name);
        if (exact != null) {
            return exact;
        }
        ValueVector found = null;
        for (String n : s.getChildFieldNames()) {
            if (n.toLowerCase(Locale.ROOT).equals(name.toLowerCase(Locale.ROOT))) {
                if (found != null) {
                    return null;
                }
                found = s.getChild(n);
            }
        }
        return found;
    }

    /**
     * Base of the wrappers: nulls come from the Arrow vector itself; values
     * only through children (structs) or arrays. Closing frees only what the
     * wrapper made (null constants); the Arrow vectors are the reader's.
     */
    private abstract static class Wrapper extends ColumnVector {
        final ColumnVector nulls;

        Wrapper(DataType type, ColumnVector nulls) {
            super(type);
            this.nulls = nulls;
        }

        @Override public boolean hasNull() { return nulls.hasNull(); }
        @Override public int numNulls() { return nulls.numNulls(); }
        @Override public boolean isNullAt(int rowId) { return nulls.isNullAt(rowId); }
        @Override public boolean getBoolean(int rowId) { throw unsupported(); }
        @Override public byte getByte(int rowId) { throw unsupported(); }
        @Override public short getShort(int rowId) { throw unsupported(); }
        @Override public int getInt(int rowId) { throw unsupported(); }
        @Override public long getLong(int rowId) { throw unsupported(); }
        @Override public float getFloat(int rowId) { throw unsupported(); }
        @Override public double getDouble(int rowId) { throw unsupported(); }
        @Override public ColumnarArray getArray(int rowId) { throw unsupported(); }
        @Override public ColumnarMap getMap(int ordinal) { throw unsupported(); }
        @Override public Decimal getDecimal(int rowId, int precision, int scale) { throw unsupported(); }
        @Override public UTF8String getUTF8String(int rowId) { throw unsupported(); }
        @Override public byte[] getBinary(int rowId) { throw unsupported(); }
        @Override public ColumnVector getChild(int ordinal) { throw unsupported(); }

        private UnsupportedOperationException unsupported() {
            return new UnsupportedOperationException("a Quiver column of type " + dataType().simpleString());
        }
    }

    private static final class Struct extends Wrapper {
        private final ColumnVector[] children;

        Struct(StructType type, ColumnVector nulls, ColumnVector[] children) {
            super(type, nulls);
            this.children = children;
        }

        @Override
        public ColumnVector getChild(int ordinal) {
            return children[ordinal];
        }

        @Override
        public void close() {
            for (ColumnVector c : children) {
                c.close();
            }
        }
    }

    private static final class Array extends Wrapper {
        private final BaseListVector list;
        private final ColumnVector elements;

        Array(ArrayType type, ColumnVector nulls, BaseListVector list, ColumnVector elements) {
            super(type, nulls);
            this.list = list;
            this.elements = elements;
        }

        @Override
        public ColumnarArray getArray(int rowId) {
            long start = list.getElementStartIndex(rowId);
            long end = list.getElementEndIndex(rowId);
            return new ColumnarArray(elements, (int) start, (int) (end - start));
        }

        @Override
        public void close() {
            elements.close();
        }
    }
}
