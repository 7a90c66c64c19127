package io.quiver.spark.read;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A Quiver file's Arrow schema as the Spark schema its scans deliver: the
 * scan reads with {@code Cast.SPARK}, so each type is mapped to what that
 * cast makes of it (timestamps to microseconds, unsigned integers widened,
 * float16 to float, large lists to lists) and then as Spark's
 * {@code ArrowColumnVector} reads it. A type neither covers (time of day,
 * intervals, date64, fixed-size lists, decimal256, ...) is refused with an
 * {@link UnsupportedOperationException} naming the column path and the file,
 * rather than failing later inside a task.
 */
public final class SparkSchemaConverter {
    private SparkSchemaConverter() {}

    /** The Spark schema of {@code schema}, the schema of file {@code file}. */
    public static StructType convert(Schema schema, String file) {
        List<StructField> out = new ArrayList<>();
        for (Field f : schema.getFields()) {
            out.add(field(f, f.getName(), file));
        }
        return new StructType(out.toArray(new StructField[0]));
    }

    private static StructField field(Field f, String path, String file) {
        return new StructField(f.getName(), type(f, path, file), f.isNullable(), Metadata.empty());
    }

    private static DataType type(Field f, String path, String file) {
        ArrowType t = f.getType();
        switch (t.getTypeID()) {
            case Null:
                return DataTypes.NullType;
            case Bool:
                return DataTypes.BooleanType;
            case Int: {
                ArrowType.Int i = (ArrowType.Int) t;
                if (i.getIsSigned()) {
                    switch (i.getBitWidth()) {
                        case 8: return DataTypes.ByteType;
                        case 16: return DataTypes.ShortType;
                        case 32: return DataTypes.IntegerType;
                        default: return DataTypes.LongType;
                    }
                }
                // Cast.UNSIGNED_WIDEN: each unsigned type to the next wider
                // signed one, uint64 to decimal(20, 0).
                switch (i.getBitWidth()) {
                    case 8: return DataTypes.ShortType;
                    case 16: return DataTypes.IntegerType;
                    case 32: return DataTypes.LongType;
                    default: return DataTypes.createDecimalType(20, 0);
                }
            }
            case FloatingPoint: {
                FloatingPointPrecision p = ((ArrowType.FloatingPoint) t).getPrecision();
                return p == FloatingPointPrecision.DOUBLE ? DataTypes.DoubleType : DataTypes.FloatType;
            }
            case Decimal: {
                ArrowType.Decimal d = (ArrowType.Decimal) t;
                if (d.getBitWidth() != 128 || d.getPrecision() > DecimalType.MAX_PRECISION()) {
                    throw unsupported(f, path, file);
                }
                return DataTypes.createDecimalType(d.getPrecision(), d.getScale());
            }
            case Utf8:
            case LargeUtf8:
                return DataTypes.StringType;
            case Binary:
            case LargeBinary:
                return DataTypes.BinaryType;
            case Date:
                if (((ArrowType.Date) t).getUnit() == DateUnit.DAY) {
                    return DataTypes.DateType;
                }
                throw unsupported(f, path, file);
            case Timestamp: {
                // Cast.TIMESTAMP_US makes every unit microseconds and keeps the zone.
                ArrowType.Timestamp ts = (ArrowType.Timestamp) t;
                return ts.getTimezone() == null ? DataTypes.TimestampNTZType : DataTypes.TimestampType;
            }
            case List:
            case LargeList: {
                Field item = f.getChildren().get(0);
                return DataTypes.createArrayType(type(item, path + "." + item.getName(), file), item.isNullable());
            }
            case Map: {
                Field entries = f.getChildren().get(0);
                Field key = entries.getChildren().get(0);
                Field value = entries.getChildren().get(1);
                return DataTypes.createMapType(type(key, path + ".key", file),
                        type(value, path + ".value", file), value.isNullable());
            }
            case Struct: {
                List<StructField> children = new ArrayList<>();
                for (Field c : f.getChildren()) {
                    children.add(field(c, path + "." + c.getName(), file));
                }
                return new StructType(children.toArray(new StructField[0]));
            }
            default:
                throw unsupported(f, path, file);
        }
    }

    private static UnsupportedOperationException unsupported(Field f, String path, String file) {
        return new UnsupportedOperationException("quiver: column '" + path + "' of file '" + file
                + "' has type " + f.getType() + ", which Spark cannot read");
    }
}
