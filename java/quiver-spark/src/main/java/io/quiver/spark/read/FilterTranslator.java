package io.quiver.spark.read;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.expressions.Cast;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NoConstraint$;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Turns a Spark DataSource V2 {@link Predicate} into the text of Quiver's
 * predicate language (quiver/scan.h), or says it cannot.
 *
 * <p>The contract is exactness: a translated filter selects a row exactly when
 * Spark's own evaluation of the predicate is TRUE on it (SQL three-valued
 * logic), when the scan binds it with NaN ordered as Spark orders it
 * ({@code NanOrder.LARGEST}: NaN = NaN, NaN above +Infinity, -0.0 = 0.0).
 * Anything whose meaning could differ in the slightest (collations, casts
 * that round, functions, references into arrays or maps, columns whose
 * native values are not what Spark sees) yields null, and the predicate
 * stays with Spark. A translation is therefore all or nothing: one part of an
 * AND, OR or NOT that cannot be translated makes the whole predicate
 * untranslatable (Spark hands top-level conjuncts over one by one, so each of
 * them is decided on its own).
 *
 * <p>docs/spark.md, "Filter pushdown", lists what is translated and why the
 * rest is not.
 */
public final class FilterTranslator {
    private FilterTranslator() {}

    /**
     * The Quiver filter text equivalent to {@code p}, or null when there is no
     * exact one.
     *
     * @param p           a predicate Spark offers for pushdown
     * @param dataSchema  the file's columns as Spark sees them (after the
     *                    scan's casts); column references resolve here
     * @param exactColumn whether the native values at a column path (top-level
     *                    name first, then struct fields) are exactly the values
     *                    Spark sees; a predicate touching a path for which it
     *                    is false is not translated
     */
    public static String translate(Predicate p, StructType dataSchema,
            java.util.function.Predicate<List<String>> exactColumn) {
        if (p == null || dataSchema == null || exactColumn == null) return null;
        try {
            return new FilterTranslator.Run(dataSchema, exactColumn).predicate(p, 0);
        } catch (NotExact e) {
            return null;
        } catch (RuntimeException e) {
            // A predicate of a shape this code did not foresee (a literal of an
            // unexpected class, a malformed tree) must never fail the query:
            // Spark evaluates it itself.
            return null;
        }
    }

    /** Thrown inside a translation that has no exact result; never escapes. */
    private static final class NotExact extends RuntimeException {
        private static final long serialVersionUID = 1L;
        static final NotExact INSTANCE = new NotExact();

        private NotExact() {
            super("not exactly translatable", null, false, false);
        }
    }

    private static NotExact notExact() {
        return NotExact.INSTANCE;
    }

    /** Quiver's parser refuses nesting deeper than QV_EXPR_MAX_DEPTH (200); stop well before. */
    private static final int MAX_DEPTH = 150;

    /** A resolved column: its rendered path, its type in the schema, and the type Spark compares it as. */
    private record Column(String text, List<String> path, DataType stored, DataType compared) {}

    /** One translation: the schema and the exactness test. */
    private static final class Run {
        private final StructType schema;
        private final java.util.function.Predicate<List<String>> exact;

        Run(StructType schema, java.util.function.Predicate<List<String>> exact) {
            this.schema = schema;
            this.exact = exact;
        }

        String predicate(Predicate p, int depth) {
            if (depth > MAX_DEPTH) throw notExact();
            Expression[] c = p.children();
            switch (p.name()) {
                case "ALWAYS_TRUE":
                    return "TRUE";
                case "ALWAYS_FALSE":
                    return "FALSE";
                case "AND":
                case "OR": {
                    if (c.length != 2) throw notExact();
                    return "(" + predicate(asPredicate(c[0]), depth + 1) + ") " + p.name() + " ("
                            + predicate(asPredicate(c[1]), depth + 1) + ")";
                }
                case "NOT":
                    if (c.length != 1) throw notExact();
                    return "NOT (" + predicate(asPredicate(c[0]), depth + 1) + ")";
                case "IS_NULL":
                case "IS_NOT_NULL": {
                    if (c.length != 1) throw notExact();
                    Column col = column(c[0], true);
                    return col.text + (p.name().equals("IS_NULL") ? " IS NULL" : " IS NOT NULL");
                }
                case "=":
                case "<>":
                case "<":
                case "<=":
                case ">":
                case ">=":
                case "<=>":
                    if (c.length != 2) throw notExact();
                    return compare(p.name(), c[0], c[1]);
                case "IN":
                    return in(c);
                case "STARTS_WITH":
                    return startsWith(c);
                default:
                    // ENDS_WITH, CONTAINS, LIKE, BOOLEAN_EXPRESSION, CASE_WHEN,
                    // functions: Quiver has no exact counterpart.
                    throw notExact();
            }
        }

        private static Predicate asPredicate(Expression e) {
            if (e instanceof Predicate p) return p;
            throw notExact();
        }

        // ---- Comparisons ----

        private String compare(String op, Expression left, Expression right) {
            boolean lLit = left instanceof Literal<?>;
            boolean rLit = right instanceof Literal<?>;
            if (lLit && rLit) throw notExact(); // Spark folds constants; nothing to read
            if (lLit) return compare(flip(op), right, left);
            Column a = column(left, false);
            if (rLit) return compareLiteral(op, a, (Literal<?>) right);
            Column b = column(right, false);
            return compareColumns(op, a, b);
        }

        private static String flip(String op) {
            switch (op) {
                case "<": return ">";
                case "<=": return ">=";
                case ">": return "<";
                case ">=": return "<=";
                default: return op; // = <> <=> are symmetric
            }
        }

        private String compareLiteral(String op, Column a, Literal<?> lit) {
            if (lit.value() == null) {
                // a <=> NULL is whether a is NULL; any other comparison with
                // NULL is NULL on every row.
                if (op.equals("<=>")) return a.text + " IS NULL";
                literalType(a, lit.dataType()); // still refuse a literal of a foreign type
                return "NULL";
            }
            String v = literal(a, lit);
            if (op.equals("<=>")) {
                // Never NULL: FALSE for a NULL a (FALSE AND NULL is FALSE).
                return "(" + a.text + " IS NOT NULL AND " + a.text + " = " + v + ")";
            }
            return a.text + " " + quiverOp(op) + " " + v;
        }

        private static String quiverOp(String op) {
            return op.equals("<>") ? "!=" : op;
        }

        private String compareColumns(String op, Column a, Column b) {
            if (!sameComparisonKind(a, b)) throw notExact();
            if (op.equals("<=>")) {
                return "((" + a.text + " IS NULL AND " + b.text + " IS NULL) OR (" + a.text + " IS NOT NULL AND "
                        + b.text + " IS NOT NULL AND " + a.text + " = " + b.text + "))";
            }
            return a.text + " " + quiverOp(op) + " " + b.text;
        }

        /**
         * Whether Quiver compares the two stored columns as Spark compares them:
         * Quiver accepts column pairs of one kind only (integers and decimals of
         * one scale, two floats, two strings, two binaries, two bools, two
         * dates). Timestamps are left out: their native units may differ while
         * Spark sees both in microseconds, and Quiver compares columns of one
         * unit only.
         */
        private static boolean sameComparisonKind(Column a, Column b) {
            int ka = kind(a.compared), kb = kind(b.compared);
            if (ka != kb) return false;
            int sa = kind(a.stored), sb = kind(b.stored);
            if (sa != ka || sb != kb) return false;
            switch (ka) {
                case K_EXACT_NUMBER:
                    return scale(a.stored) == scale(b.stored);
                case K_FLOAT:
                case K_STRING:
                case K_BINARY:
                case K_BOOL:
                case K_DATE:
                    return true;
                default:
                    return false;
            }
        }

        // ---- IN and STARTS WITH ----

        private String in(Expression[] c) {
            // Spark's IN of no values is FALSE even for a NULL value (since 4.0,
            // unless a legacy flag says otherwise); Spark never pushes one, and
            // translating it would depend on that flag.
            if (c.length < 2) throw notExact();
            if (c[0] instanceof Literal<?>) throw notExact();
            Column a = column(c[0], false);
            StringBuilder sb = new StringBuilder(a.text).append(" IN (");
            for (int i = 1; i < c.length; i++) {
                if (!(c[i] instanceof Literal<?> lit)) throw notExact();
                if (i > 1) sb.append(", ");
                if (lit.value() == null) {
                    literalType(a, lit.dataType());
                    sb.append("NULL");
                } else {
                    sb.append(literal(a, lit));
                }
            }
            return sb.append(")").toString();
        }

        private String startsWith(Expression[] c) {
            if (c.length != 2 || !(c[1] instanceof Literal<?> lit)) throw notExact();
            Column a = column(c[0], false);
            if (!(a.stored instanceof StringType) || !(a.compared instanceof StringType)) throw notExact();
            if (!(lit.dataType() instanceof StringType st) || !plainString(st)) throw notExact();
            if (lit.value() == null) return "NULL";
            byte[] prefix = stringBytes(lit.value());
            // Quiver's STARTS WITH takes a string literal; a prefix that is not
            // UTF-8 could only be written as X'..', so leave it to Spark.
            if (!validUtf8(prefix) || hasNul(prefix)) throw notExact();
            return a.text + " STARTS WITH " + quoted(prefix);
        }

        // ---- Columns ----

        /**
         * Resolves a column reference, possibly under exact widening casts.
         * {@code anyType} admits every type (IS NULL); otherwise the stored
         * type must be one Quiver compares as Spark does.
         */
        private Column column(Expression e, boolean anyType) {
            if (e instanceof NamedReference ref) {
                Column col = reference(ref);
                if (!anyType && kind(col.stored) == K_NONE) throw notExact();
                return col;
            }
            if (e instanceof Cast cast) {
                Column inner = column(cast.expression(), false);
                DataType from = cast.expressionDataType();
                if (from != null && !from.equals(inner.compared)) throw notExact();
                DataType to = cast.dataType();
                if (!exactWidening(inner.compared, to)) throw notExact();
                return new Column(inner.text, inner.path, inner.stored, to);
            }
            throw notExact();
        }

        private Column reference(NamedReference ref) {
            String[] names = ref.fieldNames();
            if (names == null || names.length == 0) throw notExact();
            StructType struct = schema;
            StructField field = null;
            List<String> path = new ArrayList<>(names.length);
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < names.length; i++) {
                if (struct == null) throw notExact(); // a field of an array, map or scalar
                field = field(struct, names[i]);
                if (field.metadata().contains("__CHAR_VARCHAR_TYPE_STRING")) throw notExact();
                path.add(field.name());
                if (i > 0) text.append('.');
                text.append(quotedName(field.name()));
                struct = field.dataType() instanceof StructType s ? s : null;
            }
            List<String> fixed = List.copyOf(path);
            if (!exact.test(fixed)) throw notExact();
            return new Column(text.toString(), fixed, field.dataType(), field.dataType());
        }

        /** The field named `name` exactly, or else the only one named so ignoring case. */
        private static StructField field(StructType struct, String name) {
            StructField[] fields = struct.fields();
            StructField found = null;
            int exactCount = 0;
            for (StructField f : fields) {
                if (f.name().equals(name)) {
                    found = f;
                    exactCount++;
                }
            }
            if (exactCount == 1) return found;
            if (exactCount > 1) throw notExact();
            for (StructField f : fields) {
                if (f.name().equalsIgnoreCase(name)) {
                    if (found != null) throw notExact();
                    found = f;
                }
            }
            if (found == null) throw notExact(); // a partition column, or unknown
            return found;
        }

        // ---- Literals ----

        /** Checks that a literal of type `t` compares with column `a` exactly as Spark would. */
        private static void literalType(Column a, DataType t) {
            int kc = kind(a.compared), kl = kind(t);
            if (kc == K_NONE || kl == K_NONE) throw notExact();
            if (kc != kl) throw notExact();
            if (t instanceof StringType st && !plainString(st)) throw notExact();
            // The two kinds of timestamp mean different things (an instant and a wall clock).
            if (kc == K_TIMESTAMP && (a.compared instanceof TimestampType) != (t instanceof TimestampType)) throw notExact();
        }

        private String literal(Column a, Literal<?> lit) {
            DataType t = lit.dataType();
            literalType(a, t);
            Object v = lit.value();
            switch (kind(t)) {
                case K_BOOL:
                    return ((Boolean) v) ? "TRUE" : "FALSE";
                case K_EXACT_NUMBER:
                    return exactNumber(t, v);
                case K_FLOAT:
                    return floating(t, v);
                case K_STRING: {
                    byte[] b = stringBytes(v);
                    return validUtf8(b) && !hasNul(b) ? quoted(b) : hex(b);
                }
                case K_BINARY:
                    return hex(binaryBytes(v));
                case K_DATE:
                    return "DATE '" + date(days(v)) + "'";
                case K_TIMESTAMP:
                    return "TIMESTAMP '" + timestamp(micros(t, v)) + (t instanceof TimestampType ? "Z'" : "'");
                default:
                    throw notExact();
            }
        }
    }

    // ---- Types ----

    private static final int K_NONE = 0;
    private static final int K_BOOL = 1;
    private static final int K_EXACT_NUMBER = 2; // integers and decimals
    private static final int K_FLOAT = 3;
    private static final int K_STRING = 4;
    private static final int K_BINARY = 5;
    private static final int K_DATE = 6;
    private static final int K_TIMESTAMP = 7;

    /** How Quiver compares values of a Spark type; K_NONE for types it does not compare like Spark. */
    private static int kind(DataType t) {
        if (t instanceof BooleanType) return K_BOOL;
        if (t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType || t instanceof LongType
                || t instanceof DecimalType) return K_EXACT_NUMBER;
        if (t instanceof FloatType || t instanceof DoubleType) return K_FLOAT;
        if (t instanceof StringType st) return plainString(st) ? K_STRING : K_NONE;
        if (t instanceof BinaryType) return K_BINARY;
        if (t instanceof DateType) return K_DATE;
        if (t instanceof TimestampType || t instanceof TimestampNTZType) return K_TIMESTAMP;
        return K_NONE;
    }

    /**
     * Strings compared bytewise: UTF8_BINARY without a length constraint
     * (other collations compare case- or accent-insensitively or trim; CHAR
     * pads).
     */
    private static boolean plainString(StringType st) {
        return st.isUTF8BinaryCollation() && st.constraint() == NoConstraint$.MODULE$;
    }

    private static int scale(DataType t) {
        return t instanceof DecimalType d ? d.scale() : 0;
    }

    /** Decimal digits an integral type needs (its integer part, as a decimal precision). */
    private static int integralDigits(DataType t) {
        if (t instanceof ByteType) return 3;
        if (t instanceof ShortType) return 5;
        if (t instanceof IntegerType) return 10;
        if (t instanceof LongType) return 19;
        return -1;
    }

    private static int integralRank(DataType t) {
        if (t instanceof ByteType) return 1;
        if (t instanceof ShortType) return 2;
        if (t instanceof IntegerType) return 3;
        if (t instanceof LongType) return 4;
        return -1;
    }

    /**
     * Whether every value of `from` becomes exactly the same number in `to`,
     * with order kept, so that comparing the cast value equals comparing the
     * stored one by value (which is how Quiver compares numbers).
     */
    static boolean exactWidening(DataType from, DataType to) {
        if (from.equals(to)) return kind(from) != K_NONE;
        int rf = integralRank(from);
        if (rf > 0) {
            int rt = integralRank(to);
            if (rt > 0) return rt >= rf;
            if (to instanceof DecimalType d) return d.precision() - d.scale() >= integralDigits(from);
            // float has a 24-bit significand, double 53 bits
            if (to instanceof FloatType) return rf <= 2;
            if (to instanceof DoubleType) return rf <= 3;
            return false;
        }
        if (from instanceof FloatType) return to instanceof DoubleType;
        if (from instanceof DecimalType f && to instanceof DecimalType t) {
            return t.scale() >= f.scale() && t.precision() - t.scale() >= f.precision() - f.scale();
        }
        return false;
    }

    // ---- Literal values (Catalyst's internal classes, or the external ones) ----

    private static String exactNumber(DataType t, Object v) {
        if (t instanceof DecimalType) {
            BigDecimal d;
            if (v instanceof Decimal dec) d = dec.toJavaBigDecimal();
            else if (v instanceof BigDecimal bd) d = bd;
            else if (v instanceof scala.math.BigDecimal sbd) d = sbd.bigDecimal();
            else throw notExact();
            return d.toPlainString();
        }
        if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
            return Long.toString(((Number) v).longValue());
        }
        throw notExact();
    }

    private static String floating(DataType t, Object v) {
        double d;
        if (t instanceof FloatType && v instanceof Float f) d = f; // widening is exact
        else if (t instanceof DoubleType && v instanceof Double x) d = x;
        else throw notExact();
        return number(d);
    }

    /** A double's exact value: NaN, Infinity, -Infinity, -0.0, or its exact decimal expansion. */
    static String number(double d) {
        if (Double.isNaN(d)) return "NaN";
        if (d == Double.POSITIVE_INFINITY) return "Infinity";
        if (d == Double.NEGATIVE_INFINITY) return "-Infinity";
        if (d == 0) return (Double.doubleToRawLongBits(d) < 0) ? "-0.0" : "0.0";
        // BigDecimal(double) is the exact binary value; without its trailing
        // zeros, toString keeps every other digit and writes an exponent
        // where that is shorter (1.5E+10), which Quiver's parser reads exactly.
        return new BigDecimal(d).stripTrailingZeros().toString();
    }

    private static byte[] stringBytes(Object v) {
        if (v instanceof UTF8String u) return u.getBytes();
        if (v instanceof String s) {
            // An unpaired surrogate has no UTF-8 form; the literal would be
            // another string.
            try {
                ByteBuffer b = StandardCharsets.UTF_8.newEncoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .encode(java.nio.CharBuffer.wrap(s));
                byte[] out = new byte[b.remaining()];
                b.get(out);
                return out;
            } catch (CharacterCodingException e) {
                throw notExact();
            }
        }
        throw notExact();
    }

    private static byte[] binaryBytes(Object v) {
        if (v instanceof byte[] b) return b;
        throw notExact();
    }

    private static int days(Object v) {
        if (v instanceof Integer i) return i;
        if (v instanceof LocalDate d) return Math.toIntExact(d.toEpochDay());
        throw notExact();
    }

    private static long micros(DataType t, Object v) {
        if (v instanceof Long l) return l;
        if (t instanceof TimestampType && v instanceof Instant i) {
            return Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000L), exactMicros(i.getNano()));
        }
        if (t instanceof TimestampNTZType && v instanceof LocalDateTime l) {
            return Math.addExact(Math.multiplyExact(l.toEpochSecond(ZoneOffset.UTC), 1_000_000L),
                    exactMicros(l.getNano()));
        }
        throw notExact();
    }

    private static long exactMicros(int nanos) {
        if (nanos % 1000 != 0) throw notExact();
        return nanos / 1000;
    }

    /** Quiver's date text: YYYY-MM-DD, a year outside 0000..9999 signed and of at least four digits. */
    static String date(long days) {
        LocalDate d = LocalDate.ofEpochDay(days);
        int y = d.getYear();
        String year = (y >= 0 && y <= 9999) ? String.format("%04d", y)
                : (y < 0 ? "-" : "+") + String.format("%04d", Math.abs((long) y));
        return year + String.format("-%02d-%02d", d.getMonthValue(), d.getDayOfMonth());
    }

    /** Microseconds since the epoch as Quiver's timestamp text, to the microsecond, without a zone. */
    static String timestamp(long micros) {
        long days = Math.floorDiv(micros, 86_400_000_000L);
        long rem = Math.floorMod(micros, 86_400_000_000L);
        long secs = rem / 1_000_000L;
        long frac = rem % 1_000_000L;
        return date(days) + String.format("T%02d:%02d:%02d.%06d", secs / 3600, (secs / 60) % 60, secs % 60, frac);
    }

    // ---- Text ----

    /** "name" with embedded quotes doubled; a NUL (which names cannot hold) is refused. */
    static String quotedName(String name) {
        if (name.indexOf('\0') >= 0) throw notExact();
        for (int i = 0; i < name.length(); i++) {
            char ch = name.charAt(i);
            if (Character.isSurrogate(ch)) {
                boolean paired = Character.isHighSurrogate(ch) && i + 1 < name.length()
                        && Character.isLowSurrogate(name.charAt(i + 1));
                if (!paired) throw notExact();
                i++;
            }
        }
        return "\"" + name.replace("\"", "\"\"") + "\"";
    }

    private static String quoted(byte[] utf8) {
        return "'" + new String(utf8, StandardCharsets.UTF_8).replace("'", "''") + "'";
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(3 + 2 * b.length).append("X'");
        for (byte x : b) sb.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        return sb.append('\'').toString().toUpperCase(java.util.Locale.ROOT);
    }

    private static boolean hasNul(byte[] b) {
        for (byte x : b) if (x == 0) return true;
        return false;
    }

    private static boolean validUtf8(byte[] b) {
        try {
            StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }
}
