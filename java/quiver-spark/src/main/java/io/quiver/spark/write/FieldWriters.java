package io.quiver.spark.write;

import java.util.List;

import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.NullVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.MapVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * Chooses the writer of a field from its Spark type, once, and pairs it
 * with the vector {@link ArrowSchemaOfSpark} made for that type.
 */
final class FieldWriters {
    private FieldWriters() {}

    static FieldWriter of(DataType t, FieldVector v, String path, boolean nullable) {
        if (t instanceof BooleanType) {
            return new FixedWidthWriters.Bool((BitVector) v, path, nullable);
        } else if (t instanceof ByteType) {
            return new FixedWidthWriters.Int8((BaseFixedWidthVector) v, path, nullable);
        } else if (t instanceof ShortType) {
            return new FixedWidthWriters.Int16((BaseFixedWidthVector) v, path, nullable);
        } else if (t instanceof IntegerType || t instanceof DateType) {
            return new FixedWidthWriters.Int32((BaseFixedWidthVector) v, path, nullable);
        } else if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
            return new FixedWidthWriters.Int64((BaseFixedWidthVector) v, path, nullable);
        } else if (t instanceof FloatType) {
            return new FixedWidthWriters.Float32((BaseFixedWidthVector) v, path, nullable);
        } else if (t instanceof DoubleType) {
            return new FixedWidthWriters.Float64((BaseFixedWidthVector) v, path, nullable);
        } else if (t instanceof DecimalType d) {
            return DecimalWriter.of((DecimalVector) v, path, nullable, d.precision(), d.scale());
        } else if (t instanceof StringType) {
            return new VariableWidthWriter((VarCharVector) v, true, path, nullable);
        } else if (t instanceof BinaryType) {
            return new VariableWidthWriter((VarBinaryVector) v, false, path, nullable);
        } else if (t instanceof NullType) {
            return new NullWriter((NullVector) v, path);
        } else if (t instanceof StructType st) {
            StructVector sv = (StructVector) v;
            StructField[] fields = st.fields();
            List<FieldVector> vectors = sv.getChildrenFromFields();
            FieldWriter[] children = new FieldWriter[fields.length];
            for (int i = 0; i < fields.length; i++) {
                children[i] = of(fields[i].dataType(), vectors.get(i), path + "." + fields[i].name(),
                        fields[i].nullable());
            }
            return new StructWriter(sv, children, path, nullable);
        } else if (t instanceof ArrayType at) {
            ListVector lv = (ListVector) v;
            FieldWriter element = of(at.elementType(), lv.getDataVector(), path + "." + ArrowSchemaOfSpark.ELEMENT,
                    at.containsNull());
            return new ListWriter(lv, element, path, nullable);
        } else if (t instanceof MapType mt) {
            MapVector mv = (MapVector) v;
            List<FieldVector> kv = ((StructVector) mv.getDataVector()).getChildrenFromFields();
            FieldWriter key = of(mt.keyType(), kv.get(0), path + "." + ArrowSchemaOfSpark.KEY, false);
            FieldWriter value = of(mt.valueType(), kv.get(1), path + "." + ArrowSchemaOfSpark.VALUE,
                    mt.valueContainsNull());
            return new MapWriter(mv, key, value, path, nullable);
        }
        // ArrowSchemaOfSpark refused every other type before a vector was made.
        throw new IllegalStateException("quiver: no writer for column '" + path + "' of type " + t.sql());
    }
}
