package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;

/** Arrow schemas of Quiver files as the Spark schema a Cast.SPARK scan delivers. */
class SparkSchemaConverterTest {
    private static Field f(String name, ArrowType t, Field... children) {
        return new Field(name, FieldType.nullable(t), children.length == 0 ? null : List.of(children));
    }

    @Test
    void typesAreWhatTheSparkCastDelivers() {
        Schema s = new Schema(List.of(
                f("i8", new ArrowType.Int(8, true)),
                f("u8", new ArrowType.Int(8, false)),
                f("u16", new ArrowType.Int(16, false)),
                f("u32", new ArrowType.Int(32, false)),
                f("u64", new ArrowType.Int(64, false)),
                f("h", new ArrowType.FloatingPoint(FloatingPointPrecision.HALF)),
                f("d", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
                f("ts_ns_utc", new ArrowType.Timestamp(TimeUnit.NANOSECOND, "UTC")),
                f("ts_s", new ArrowType.Timestamp(TimeUnit.SECOND, null)),
                f("day", new ArrowType.Date(DateUnit.DAY)),
                f("dec", new ArrowType.Decimal(12, 3, 128)),
                f("ls", new ArrowType.LargeUtf8()),
                f("ll", ArrowType.LargeList.INSTANCE, f("item", new ArrowType.Int(32, false))),
                f("st", ArrowType.Struct.INSTANCE, f("a", new ArrowType.Binary()))));
        StructType expected = new StructType()
                .add("i8", DataTypes.ByteType)
                .add("u8", DataTypes.ShortType)
                .add("u16", DataTypes.IntegerType)
                .add("u32", DataTypes.LongType)
                .add("u64", DataTypes.createDecimalType(20, 0))
                .add("h", DataTypes.FloatType)
                .add("d", DataTypes.DoubleType)
                .add("ts_ns_utc", DataTypes.TimestampType)
                .add("ts_s", DataTypes.TimestampNTZType)
                .add("day", DataTypes.DateType)
                .add("dec", DataTypes.createDecimalType(12, 3))
                .add("ls", DataTypes.StringType)
                .add("ll", DataTypes.createArrayType(DataTypes.LongType, true))
                .add("st", new StructType().add("a", DataTypes.BinaryType));
        assertEquals(expected, SparkSchemaConverter.convert(s, "/x/f.qvr"));
    }

    @Test
    void aTypeSparkCannotReadIsRefusedNamingColumnAndFile() {
        Schema s = new Schema(List.of(f("ok", new ArrowType.Int(32, true)),
                f("st", ArrowType.Struct.INSTANCE, f("t", new ArrowType.Time(TimeUnit.MICROSECOND, 64)))));
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> SparkSchemaConverter.convert(s, "/x/f.qvr"));
        assertTrue(e.getMessage().contains("'st.t'") && e.getMessage().contains("/x/f.qvr"), e.getMessage());
        Schema d = new Schema(List.of(f("big", new ArrowType.Decimal(40, 0, 256))));
        e = assertThrows(UnsupportedOperationException.class, () -> SparkSchemaConverter.convert(d, "/y.qvr"));
        assertTrue(e.getMessage().contains("'big'") && e.getMessage().contains("/y.qvr"), e.getMessage());
    }
}
