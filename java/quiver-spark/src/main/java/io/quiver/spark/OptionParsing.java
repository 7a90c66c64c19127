package io.quiver.spark;

import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Parsing of the connector's option values, shared by the read and the write
 * options so both refuse a bad value the same way: an
 * {@link IllegalArgumentException} naming the option and the value. Keys are
 * looked up ignoring case, as Spark's own options are.
 */
public final class OptionParsing {
    private OptionParsing() {
    }

    /** {@code options} as a map whose lookups ignore case; null is an empty map. */
    public static CaseInsensitiveStringMap caseInsensitive(Map<String, String> options) {
        return options instanceof CaseInsensitiveStringMap c ? c
                : new CaseInsensitiveStringMap(options == null ? Map.of() : options);
    }

    /** The integer option {@code key}, {@code dflt} when absent; refused outside [min, max]. */
    public static long longOption(CaseInsensitiveStringMap o, String key, long dflt, long min, long max) {
        String v = o.get(key);
        if (v == null) {
            return dflt;
        }
        long n;
        try {
            n = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("quiver option '" + key + "': '" + v + "' is not an integer", e);
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException("quiver option '" + key + "': " + n + " is out of range ["
                    + min + ", " + max + "]");
        }
        return n;
    }

    /** The boolean option {@code key} ({@code true} or {@code false}, any case), {@code dflt} when absent. */
    public static boolean booleanOption(CaseInsensitiveStringMap o, String key, boolean dflt) {
        String v = o.get(key);
        if (v == null) {
            return dflt;
        }
        switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "true":
                return true;
            case "false":
                return false;
            default:
                throw new IllegalArgumentException("quiver option '" + key + "': '" + v
                        + "' is not a boolean (true or false)");
        }
    }
}
