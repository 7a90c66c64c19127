package io.quiver.spark.read;

import static io.quiver.spark.read.V2.and;
import static io.quiver.spark.read.V2.cast;
import static io.quiver.spark.read.V2.col;
import static io.quiver.spark.read.V2.lit;
import static io.quiver.spark.read.V2.not;
import static io.quiver.spark.read.V2.or;
import static io.quiver.spark.read.V2.pred;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.filter.AlwaysFalse;
import org.apache.spark.sql.connector.expressions.filter.AlwaysTrue;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** The texts FilterTranslator renders, and what it refuses; no Spark session, no file. */
class FilterTranslatorTest {
    static final StructType SCHEMA = new StructType(new StructField[] {
        field("i", DataTypes.IntegerType),
        field("sh", DataTypes.ShortType),
        field("l", DataTypes.LongType),
        field("f", DataTypes.FloatType),
        field("d", DataTypes.DoubleType),
        field("dec", DataTypes.createDecimalType(10, 2)),
        field("s", DataTypes.StringType),
        field("bin", DataTypes.BinaryType),
        field("b", DataTypes.BooleanType),
        field("dt", DataTypes.DateType),
        field("ts", DataTypes.TimestampType),
        field("ntz", DataTypes.TimestampNTZType),
        field("a\"b", DataTypes.IntegerType),
        field("st", new StructType(new StructField[] {
            field("x", DataTypes.IntegerType), field("y.z", DataTypes.StringType)})),
        field("arr", DataTypes.createArrayType(new StructType(new StructField[] {field("x", DataTypes.IntegerType)}))),
        field("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.IntegerType)),
        field("lc", StringType.apply("UTF8_LCASE")),
        new StructField("ch", DataTypes.StringType, true,
                new MetadataBuilder().putString("__CHAR_VARCHAR_TYPE_STRING", "char(3)").build()),
        field("ns", DataTypes.TimestampType),
    });

    static StructField field(String name, org.apache.spark.sql.types.DataType t) {
        return new StructField(name, t, true, Metadata.empty());
    }

    static String tr(Predicate p) {
        return FilterTranslator.translate(p, SCHEMA, path -> !path.equals(List.of("ns")));
    }

    @Test
    void comparisonsAndLogic() {
        assertEquals("\"i\" = 5", tr(pred("=", col("i"), lit(5))));
        assertEquals("\"i\" != 5", tr(pred("<>", col("i"), lit(5))));
        assertEquals("\"i\" > 5", tr(pred("<", lit(5), col("i"))));
        assertEquals("\"i\" <= -2147483648", tr(pred(">=", lit(Integer.MIN_VALUE), col("i"))));
        assertEquals("\"l\" < 9223372036854775807", tr(pred("<", col("l"), lit(Long.MAX_VALUE))));
        assertEquals("(\"i\" > 1) AND ((\"l\" < 2) OR (NOT (\"b\" = TRUE)))",
                tr(and(pred(">", col("i"), lit(1)), or(pred("<", col("l"), lit(2L)),
                        not(pred("=", col("b"), lit(true)))))));
        assertEquals("TRUE", tr(new AlwaysTrue()));
        assertEquals("FALSE", tr(new AlwaysFalse()));
        assertEquals("\"i\" IS NULL", tr(pred("IS_NULL", col("i"))));
        assertEquals("\"st\" IS NOT NULL", tr(pred("IS_NOT_NULL", col("st"))));
        assertEquals("\"arr\" IS NULL", tr(pred("IS_NULL", col("arr"))));
        assertEquals("\"st\".\"x\" >= 3", tr(pred(">=", col("st", "x"), lit(3))));
        assertEquals("\"st\".\"y.z\" = 'q'", tr(pred("=", col("st", "y.z"), lit("q"))));
        assertEquals("\"a\"\"b\" = 1", tr(pred("=", col("a\"b"), lit(1))));
        assertEquals("\"i\" = \"sh\"", tr(pred("=", col("i"), cast(col("sh"), DataTypes.ShortType, DataTypes.IntegerType))));
    }

    @Test
    void nullSafeEquality() {
        assertEquals("(\"i\" IS NOT NULL AND \"i\" = 3)", tr(pred("<=>", col("i"), lit(3))));
        assertEquals("(\"i\" IS NOT NULL AND \"i\" = 3)", tr(pred("<=>", lit(3), col("i"))));
        assertEquals("\"i\" IS NULL", tr(pred("<=>", col("i"), V2.nullLit(DataTypes.IntegerType))));
        assertEquals("((\"i\" IS NULL AND \"l\" IS NULL) OR (\"i\" IS NOT NULL AND \"l\" IS NOT NULL AND \"i\" = \"l\"))",
                tr(pred("<=>", cast(col("i"), DataTypes.IntegerType, DataTypes.LongType), col("l"))));
        assertEquals("NULL", tr(pred("=", col("i"), V2.nullLit(DataTypes.IntegerType))));
    }

    @Test
    void numbers() {
        assertEquals("\"d\" = NaN", tr(pred("=", col("d"), lit(Double.NaN))));
        assertEquals("\"d\" < Infinity", tr(pred("<", col("d"), lit(Double.POSITIVE_INFINITY))));
        assertEquals("\"d\" > -Infinity", tr(pred(">", col("d"), lit(Double.NEGATIVE_INFINITY))));
        assertEquals("\"d\" = -0.0", tr(pred("=", col("d"), lit(-0.0))));
        assertEquals("\"d\" = 0.0", tr(pred("=", col("d"), lit(0.0))));
        assertEquals("\"d\" = 0.1000000000000000055511151231257827021181583404541015625",
                tr(pred("=", col("d"), lit(0.1))));
        // a float literal is the float's own value, not the decimal it was written as
        assertEquals("\"f\" = 0.100000001490116119384765625", tr(pred("=", col("f"), lit(0.1f))));
        assertEquals("\"f\" > 0.1000000000000000055511151231257827021181583404541015625",
                tr(pred(">", cast(col("f"), DataTypes.FloatType, DataTypes.DoubleType), lit(0.1))));
        assertEquals("\"d\" = 1.5E+10", tr(pred("=", col("d"), lit(1.5e10))));
        // the smallest subnormal, all 751 significant digits of it
        String tiny = tr(pred("=", col("d"), lit(Double.MIN_VALUE))).substring("\"d\" = ".length());
        assertTrue(tiny.startsWith("4.9406564584124654") && tiny.endsWith("E-324"), tiny);
        assertEquals(0, new java.math.BigDecimal(tiny).compareTo(new java.math.BigDecimal(Double.MIN_VALUE)));
        assertEquals("\"dec\" = 12.30", tr(pred("=", col("dec"), V2.decLit("12.30", 10, 2))));
        assertEquals("\"dec\" < 0.000000000000000000001",
                tr(pred("<", cast(col("dec"), DataTypes.createDecimalType(10, 2), DataTypes.createDecimalType(38, 21)),
                        V2.decLit("1E-21", 38, 21))));
        assertEquals("\"i\" < 2.5", tr(pred("<", cast(col("i"), DataTypes.IntegerType, DataTypes.createDecimalType(11, 1)),
                V2.decLit("2.5", 11, 1))));
        assertEquals("\"i\" < 2.5", tr(pred("<", cast(col("i"), DataTypes.IntegerType, DataTypes.DoubleType), lit(2.5))));
        assertEquals("\"sh\" = 3", tr(pred("=", cast(col("sh"), DataTypes.ShortType, DataTypes.IntegerType), lit(3))));
        assertEquals("\"i\" IN (1, NULL, 3)", tr(pred("IN", col("i"), lit(1), V2.nullLit(DataTypes.IntegerType), lit(3))));
        assertEquals("\"d\" IN (NaN, -0.0, 1.5)", tr(pred("IN", col("d"), lit(Double.NaN), lit(-0.0), lit(1.5))));
    }

    @Test
    void textBytesAndTime() {
        assertEquals("\"s\" = 'it''s é'", tr(pred("=", col("s"), lit("it's é"))));
        assertEquals("\"s\" = ''", tr(pred("=", col("s"), lit(""))));
        assertEquals("\"s\" = X'61FF'", tr(pred("=", col("s"),
                V2.rawLit(UTF8String.fromBytes(new byte[] {0x61, (byte) 0xFF}), DataTypes.StringType))));
        assertEquals("\"s\" = X'6100'", tr(pred("=", col("s"), lit("a\0"))));
        assertEquals("\"s\" STARTS WITH 'ab''c'", tr(pred("STARTS_WITH", col("s"), lit("ab'c"))));
        assertEquals("\"bin\" = X'00FF10'", tr(pred("=", col("bin"), V2.rawLit(new byte[] {0, -1, 16}, DataTypes.BinaryType))));
        assertEquals("\"bin\" = X''", tr(pred("=", col("bin"), V2.rawLit(new byte[0], DataTypes.BinaryType))));
        assertEquals("\"dt\" = DATE '1970-01-01'", tr(pred("=", col("dt"), V2.rawLit(0, DataTypes.DateType))));
        assertEquals("\"dt\" < DATE '1969-12-31'", tr(pred("<", col("dt"), V2.rawLit(-1, DataTypes.DateType))));
        assertEquals("\"dt\" < DATE '0001-01-01'", tr(pred("<", col("dt"), V2.rawLit(-719162, DataTypes.DateType))));
        assertEquals("\"dt\" < DATE '-0001-12-31'", tr(pred("<", col("dt"), V2.rawLit(-719529, DataTypes.DateType))));
        assertEquals("\"dt\" > DATE '+10000-01-01'", tr(pred(">", col("dt"), V2.rawLit(2932897, DataTypes.DateType))));
        assertEquals("\"ts\" = TIMESTAMP '1970-01-01T00:00:00.000001Z'",
                tr(pred("=", col("ts"), V2.rawLit(1L, DataTypes.TimestampType))));
        assertEquals("\"ts\" = TIMESTAMP '1969-12-31T23:59:59.999999Z'",
                tr(pred("=", col("ts"), V2.rawLit(-1L, DataTypes.TimestampType))));
        assertEquals("\"ntz\" = TIMESTAMP '2024-02-29T13:45:01.250000'",
                tr(pred("=", col("ntz"), V2.rawLit(1709214301250000L, DataTypes.TimestampNTZType))));
        assertEquals("\"ts\" < TIMESTAMP '-290308-12-21T19:59:05.224192Z'",
                tr(pred("<", col("ts"), V2.rawLit(Long.MIN_VALUE, DataTypes.TimestampType))));
        assertEquals("\"b\" = FALSE", tr(pred("=", col("b"), lit(false))));
    }

    @Test
    void untranslatable() {
        // unknown predicates and functions
        assertNull(tr(pred("ENDS_WITH", col("s"), lit("a"))));
        assertNull(tr(pred("CONTAINS", col("s"), lit("a"))));
        assertNull(tr(pred("LIKE", col("s"), lit("a%"))));
        assertNull(tr(pred("=", new org.apache.spark.sql.connector.expressions.GeneralScalarExpression("UPPER",
                new Expression[] {col("s")}), lit("A"))));
        assertNull(tr(pred("IN", col("i"))));
        assertNull(tr(pred("IN", col("i"), col("l"))));
        assertNull(tr(pred("=", lit(1), lit(1))));
        // inside OR / NOT every part must translate
        assertNull(tr(or(pred("=", col("i"), lit(1)), pred("ENDS_WITH", col("s"), lit("a")))));
        assertNull(tr(not(pred("CONTAINS", col("s"), lit("a")))));
        assertNull(tr(and(pred("=", col("i"), lit(1)), pred("CONTAINS", col("s"), lit("a")))));
        // references: into arrays and maps, unknown (a partition column), non-exact
        assertNull(tr(pred("=", col("arr", "x"), lit(1))));
        assertNull(tr(pred("IS_NULL", col("m", "k"))));
        assertNull(tr(pred("=", col("part"), lit(1))));
        assertNull(tr(pred("=", col("ns"), V2.rawLit(1L, DataTypes.TimestampType))));
        assertNull(tr(pred("IS_NULL", col("ns"))));
        assertNull(tr(pred("=", col("st"), lit(1))));
        // collations and CHAR columns
        assertNull(tr(pred("=", col("lc"), V2.rawLit(UTF8String.fromString("a"), StringType.apply("UTF8_LCASE")))));
        assertNull(tr(pred("=", col("lc"), lit("a"))));
        assertNull(tr(pred("STARTS_WITH", col("lc"), lit("a"))));
        assertNull(tr(pred("=", col("ch"), lit("abc"))));
        // casts that are not exact widenings
        assertNull(tr(pred("=", cast(col("l"), DataTypes.LongType, DataTypes.DoubleType), lit(1.0))));
        assertNull(tr(pred("=", cast(col("i"), DataTypes.IntegerType, DataTypes.FloatType), lit(1.0f))));
        assertNull(tr(pred("=", cast(col("d"), DataTypes.DoubleType, DataTypes.FloatType), lit(1.0f))));
        assertNull(tr(pred("=", cast(col("i"), DataTypes.IntegerType, DataTypes.StringType), lit("1"))));
        assertNull(tr(pred("=", cast(col("l"), DataTypes.LongType, DataTypes.IntegerType), lit(1))));
        assertNull(tr(pred("=", cast(col("dec"), DataTypes.createDecimalType(10, 2), DataTypes.createDecimalType(10, 3)),
                V2.decLit("1.000", 10, 3))));
        assertNull(tr(pred("=", cast(col("dt"), DataTypes.DateType, DataTypes.TimestampType),
                V2.rawLit(0L, DataTypes.TimestampType))));
        assertNull(tr(pred("=", cast(col("i"), DataTypes.LongType, DataTypes.LongType), lit(1L)))); // wrong source type
        // literals of another type than the column
        assertNull(tr(pred("=", col("i"), lit("1"))));
        assertNull(tr(pred("=", col("i"), lit(1.0))));
        assertNull(tr(pred("=", col("f"), lit(1))));
        assertNull(tr(pred("=", col("s"), V2.rawLit(new byte[] {1}, DataTypes.BinaryType))));
        assertNull(tr(pred("=", col("ts"), V2.rawLit(1L, DataTypes.TimestampNTZType))));
        assertNull(tr(pred("=", col("dt"), V2.rawLit(1L, DataTypes.TimestampType))));
        assertNull(tr(pred("=", col("i"), V2.nullLit(DataTypes.NullType))));
        assertNull(tr(pred("=", col("i"), V2.rawLit(Decimal.apply(1), DataTypes.IntegerType)))); // a value of the wrong class
        // column pairs Quiver compares otherwise, or not at all
        assertNull(tr(pred("=", col("ts"), col("ts"))));
        assertNull(tr(pred("=", cast(col("i"), DataTypes.IntegerType, DataTypes.DoubleType), col("d"))));
        assertNull(tr(pred("=", cast(col("i"), DataTypes.IntegerType, DataTypes.createDecimalType(12, 2)), col("dec"))));
        assertNull(tr(pred("=", col("s"), col("bin"))));
        // STARTS WITH needs a string literal that is UTF-8
        assertNull(tr(pred("STARTS_WITH", col("s"), col("s"))));
        assertNull(tr(pred("STARTS_WITH", col("bin"), V2.rawLit(new byte[] {1}, DataTypes.BinaryType))));
        assertNull(tr(pred("STARTS_WITH", col("s"),
                V2.rawLit(UTF8String.fromBytes(new byte[] {(byte) 0xFF}), DataTypes.StringType))));
        // a string no UTF-8 can carry
        assertNull(tr(pred("=", col("s"), V2.rawLit("a\uD800", DataTypes.StringType))));
        // nothing to translate
        assertNull(FilterTranslator.translate(null, SCHEMA, path -> true));
    }

    @Test
    void deepNestingIsRefusedNotOverflowed() {
        Predicate p = pred("=", col("i"), lit(1));
        for (int k = 0; k < 100_000; k++) p = not(p);
        assertNull(tr(p));
        Predicate q = pred("=", col("i"), lit(1));
        for (int k = 0; k < 100; k++) q = not(q);
        assertEquals("NOT (".repeat(100) + "\"i\" = 1" + ")".repeat(100), tr(q));
    }

    @Test
    void exactColumnIsAskedForEveryPath() {
        java.util.List<List<String>> asked = new java.util.ArrayList<>();
        String t = FilterTranslator.translate(and(pred("=", col("st", "x"), lit(1)), pred("IS_NULL", col("i"))), SCHEMA,
                path -> asked.add(path));
        assertEquals("(\"st\".\"x\" = 1) AND (\"i\" IS NULL)", t);
        assertEquals(List.of(List.of("st", "x"), List.of("i")), asked);
        // names resolve to the schema's spelling when Spark hands another case
        assertEquals("\"st\".\"x\" = 1", tr(pred("=", col("ST", "X"), lit(1))));
    }
}
