package io.quiver.spark.read;

import java.math.BigDecimal;
import java.util.Arrays;
import org.apache.spark.sql.connector.expressions.Cast;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.FieldReference;
import org.apache.spark.sql.connector.expressions.LiteralValue;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.And;
import org.apache.spark.sql.connector.expressions.filter.Not;
import org.apache.spark.sql.connector.expressions.filter.Or;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.UTF8String;
import scala.jdk.javaapi.CollectionConverters;

/** Builds V2 predicates the way Spark's V2ExpressionBuilder does: literals hold Catalyst's internal values. */
final class V2 {
    private V2() {}

    static NamedReference col(String... names) {
        return new FieldReference(CollectionConverters.asScala(Arrays.asList(names)).toList());
    }

    static Expression lit(Object v) {
        if (v instanceof Integer) return rawLit(v, DataTypes.IntegerType);
        if (v instanceof Long) return rawLit(v, DataTypes.LongType);
        if (v instanceof Short) return rawLit(v, DataTypes.ShortType);
        if (v instanceof Byte) return rawLit(v, DataTypes.ByteType);
        if (v instanceof Double) return rawLit(v, DataTypes.DoubleType);
        if (v instanceof Float) return rawLit(v, DataTypes.FloatType);
        if (v instanceof Boolean) return rawLit(v, DataTypes.BooleanType);
        if (v instanceof String s) return rawLit(UTF8String.fromString(s), DataTypes.StringType);
        throw new IllegalArgumentException(String.valueOf(v));
    }

    static Expression rawLit(Object v, DataType t) {
        return new LiteralValue<>(v, t);
    }

    static Expression nullLit(DataType t) {
        return new LiteralValue<>(null, t);
    }

    static Expression decLit(String v, int precision, int scale) {
        return new LiteralValue<>(Decimal.apply(new BigDecimal(v)), DataTypes.createDecimalType(precision, scale));
    }

    static Expression cast(Expression e, DataType from, DataType to) {
        return new Cast(e, from, to);
    }

    static Predicate pred(String name, Expression... children) {
        return new Predicate(name, children);
    }

    static Predicate and(Predicate a, Predicate b) {
        return new And(a, b);
    }

    static Predicate or(Predicate a, Predicate b) {
        return new Or(a, b);
    }

    static Predicate not(Predicate a) {
        return new Not(a);
    }
}
