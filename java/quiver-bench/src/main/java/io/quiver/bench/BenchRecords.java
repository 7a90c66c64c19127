package io.quiver.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The figures of one JVM benchmark as DESIGN.md's flat JSON records
 * ({@code bench, case, variant, metric, stat, value, unit}), and the
 * statistics every benchmark here reports (min, median).
 */
final class BenchRecords {
    private final String bench;
    private final List<String> records = new ArrayList<>();

    BenchRecords(String bench) {
        this.bench = bench;
    }

    void add(String kase, String variant, String metric, String stat, double value, String unit) {
        records.add(String.format(Locale.ROOT,
                "{\"bench\": \"%s\", \"case\": \"%s\", \"variant\": \"%s\", \"metric\": \"%s\", \"stat\": \"%s\","
                        + " \"value\": %s, \"unit\": \"%s\"}",
                bench, kase, variant, metric, stat,
                Double.isFinite(value) ? String.format(Locale.ROOT, "%.6g", value) : "null", unit));
    }

    int size() {
        return records.size();
    }

    /** Writes the records as a JSON array to {@code out}, replacing it. */
    void write(Path out) throws IOException {
        Files.writeString(out, "[\n  " + String.join(",\n  ", records) + "\n]\n", StandardCharsets.UTF_8);
    }

    /** Appends the records to the JSON array in {@code out} (created when missing or empty). */
    void append(Path out) throws IOException {
        String body = String.join(",\n  ", records);
        String text = Files.exists(out) ? Files.readString(out, StandardCharsets.UTF_8).strip() : "";
        String result;
        if (text.isEmpty() || text.equals("[]")) {
            result = "[\n  " + body + "\n]\n";
        } else if (text.startsWith("[") && text.endsWith("]")) {
            result = text.substring(0, text.length() - 1).stripTrailing() + ",\n  " + body + "\n]\n";
        } else {
            throw new IOException(out + " does not hold a JSON array; not appending to it");
        }
        Files.writeString(out, result, StandardCharsets.UTF_8);
    }

    static double median(double[] v) {
        if (v.length == 0) {
            return Double.NaN;
        }
        double[] c = v.clone();
        Arrays.sort(c);
        return c.length % 2 == 1 ? c[c.length / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
    }

    static double median(List<Double> v) {
        return median(v.stream().mapToDouble(Double::doubleValue).toArray());
    }

    static double min(double[] v) {
        return Arrays.stream(v).min().orElse(Double.NaN);
    }

    static double min(List<Double> v) {
        return min(v.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** /proc/loadavg, to print beside figures taken on a shared machine. */
    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "unknown (" + e.getMessage() + ")";
        }
    }
}
