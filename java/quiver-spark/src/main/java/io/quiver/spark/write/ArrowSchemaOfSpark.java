package io.quiver.spark.write;

import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.CharType;
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
import org.apache.spark.sql.types.VarcharType;

/**
 * The Arrow schema a Spark schema is written as. Each type is the one the
 * read path ({@code SparkSchemaConverter}) maps back to the same Spark type,
 * nullability included: a list's element and a map's value are nullable
 * exactly when Spark's {@code containsNull} / {@code valueContainsNull} say
 * so, because those flags are part of the Spark type. Names of the nested
 * fields follow Arrow's conventions ("element", "entries", "key", "value"),
 * which are also the names the column paths in errors use.
 */
final class ArrowSchemaOfSpark {
    /** The name of a list's element field. */
    static final String ELEMENT = "element";
    /** The name of a map's entries struct. */
    static final String ENTRIES = "entries";
    static final String KEY = "key";
    static final String VALUE = "value";
    /** Spark's timestamps are instants: the zone only marks them as such. */
    static final String UTC = "UTC";

    private ArrowSchemaOfSpark() {}

    static Schema schema(StructType schema) {
        List<Field> fields = new ArrayList<>();
        for (StructField f : schema.fields()) {
            fields.add(field(f.name(), f.dataType(), f.nullable(), f.name()));
        }
        return new Schema(fields);
    }

    static Field field(String name, DataType t, boolean nullable, String path) {
        if (t instanceof StructType st) {
            List<Field> children = new ArrayList<>();
            for (StructField c : st.fields()) {
                children.add(field(c.name(), c.dataType(), c.nullable(), path + "." + c.name()));
            }
            return new Field(name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null), children);
        }
        if (t instanceof ArrayType at) {
            Field element = field(ELEMENT, at.elementType(), at.containsNull(), path + "." + ELEMENT);
            return new Field(name, new FieldType(nullable, ArrowType.List.INSTANCE, null), List.of(element));
        }
        if (t instanceof MapType mt) {
            // Spark map keys are never null.
            Field key = field(KEY, mt.keyType(), false, path + "." + KEY);
            Field value = field(VALUE, mt.valueType(), mt.valueContainsNull(), path + "." + VALUE);
            Field entries = new Field(ENTRIES, FieldType.notNullable(ArrowType.Struct.INSTANCE), List.of(key, value));
            return new Field(name, new FieldType(nullable, new ArrowType.Map(false), null), List.of(entries));
        }
        if (t instanceof NullType) {
            // Every value of a null column is null, whatever the flag says.
            return new Field(name, FieldType.nullable(ArrowType.Null.INSTANCE), null);
        }
        return new Field(name, new FieldType(nullable, primitive(t, path), null), null);
    }

    private static ArrowType primitive(DataType t, String path) {
        if (t instanceof BooleanType) {
            return ArrowType.Bool.INSTANCE;
        } else if (t instanceof ByteType) {
            return new ArrowType.Int(8, true);
        } else if (t instanceof ShortType) {
            return new ArrowType.Int(16, true);
        } else if (t instanceof IntegerType) {
            return new ArrowType.Int(32, true);
        } else if (t instanceof LongType) {
            return new ArrowType.Int(64, true);
        } else if (t instanceof FloatType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
        } else if (t instanceof DoubleType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        } else if (t instanceof DecimalType d) {
            return new ArrowType.Decimal(d.precision(), d.scale(), 128);
        } else if (t instanceof StringType || t instanceof CharType || t instanceof VarcharType) {
            // A collated string, a char(n) and a varchar(n) are all UTF-8
            // text; the collation or length is not kept.
            return ArrowType.Utf8.INSTANCE;
        } else if (t instanceof BinaryType) {
            return ArrowType.Binary.INSTANCE;
        } else if (t instanceof DateType) {
            return new ArrowType.Date(DateUnit.DAY);
        } else if (t instanceof TimestampType) {
            return new ArrowType.Timestamp(TimeUnit.MICROSECOND, UTC);
        } else if (t instanceof TimestampNTZType) {
            return new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
        }
        throw new UnsupportedOperationException("quiver: column '" + path + "' has type " + t.sql()
                + ", which Quiver cannot write");
    }
}
