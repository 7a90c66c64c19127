package io.quiver.spark.write;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.quiver.spark.OptionParsing;
import java.io.Serializable;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The write options of {@code df.write.format("quiver")}, parsed in one
 * place on the driver, before any task runs. Keys are case-insensitive as
 * Spark's own options are; a value that does not parse, or is out of range,
 * is refused with an {@link IllegalArgumentException} naming the option and
 * the value.
 *
 * <ul>
 * <li>{@code rowGroupRows}: rows per row group of each file; {@code 0} (the
 *     default) is the native writer's default.</li>
 * <li>{@code batchRows}: rows gathered into one Arrow batch before it is
 *     handed to the native writer (default {@value #DEFAULT_BATCH_ROWS}).</li>
 * <li>{@code compact}: {@code true} writes the smallest files, text
 *     more slowly (zstd level 15 frames; docs/format.md 5.7; default
 *     false).</li>
 * <li>{@code randomAccess}: {@code true} writes files for point lookups:
 *     no frame encodings, so a take decodes a 1,024-value vector
 *     per row, in larger files (default false; not with {@code compact}).</li>
 * <li>{@code maxInFlight}: row groups each file's background encoder may
 *     hold; {@code 0} (the default) is the native default, {@code -1}
 *     encodes on the task thread.</li>
 * <li>{@code maxOpenFiles}: partition writers a task keeps open at once
 *     (default {@value #DEFAULT_MAX_OPEN_FILES}); beyond it the least
 *     recently used is finished and a later row of its partition starts a
 *     new file.</li>
 * <li>{@code __partition_columns}: the columns of {@code partitionBy}, a
 *     JSON array of names, as Spark passes them to V1 sources (Spark 4's V2
 *     path passes the table's partitioning instead; both are accepted and
 *     must agree).</li>
 * </ul>
 *
 * <p>The default batch is {@value #DEFAULT_BATCH_ROWS} rows, measured:
 * {@code df.write} of 2,000,000 cached rows (4 longs and a string,
 * {@code local[2]}, a shared 2-core machine, third of three repeats) took
 * 1,969 / 1,179 / 906 / 642 / 774 ms with batches of 1,024 / 4,096 / 8,192
 * / 16,384 / 32,768 rows (the earlier repeats, noisier, also put 16,384 at
 * or near the front): larger batches spread the per-batch costs (an export
 * through the C Data interface, a native call) thinner, and past 16,384 a
 * batch's vectors only hold more memory. Vectors start at 64 slots and
 * grow, so a writer of few rows never holds a batch's worth.
 */
public final class QuiverWriteOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String ROW_GROUP_ROWS = "rowGroupRows";
    public static final String BATCH_ROWS = "batchRows";
    public static final String COMPACT = "compact";
    public static final String RANDOM_ACCESS = "randomAccess";
    public static final String MAX_IN_FLIGHT = "maxInFlight";
    public static final String MAX_OPEN_FILES = "maxOpenFiles";
    /** Spark's key for partitionBy's columns (DataSourceUtils.PARTITIONING_COLUMNS_KEY). */
    public static final String PARTITION_COLUMNS = "__partition_columns";

    public static final int DEFAULT_BATCH_ROWS = 16384;
    public static final int DEFAULT_MAX_OPEN_FILES = 256;
    /** The native writer's bound on sealed row groups waiting for its encoder; more only holds memory. */
    private static final int MAX_IN_FLIGHT_LIMIT = 64;
    private static final int MAX_OPEN_FILES_LIMIT = 100_000;
    /**
     * The native writer's most rows per row group (QV_WRITER_MAX_ROW_GROUP_ROWS in format.h): refused
     * here, on the driver and naming the option, rather than by every task's writer.
     */
    static final long MAX_ROW_GROUP_ROWS = (1L << 30) - 1;

    private final long rowGroupRows;
    private final int batchRows;
    private final boolean compact, randomAccess;
    private final int maxInFlight;
    private final int maxOpenFiles;
    private final List<String> partitionColumns; // null: the option was not given

    private QuiverWriteOptions(long rowGroupRows, int batchRows, boolean compact, boolean randomAccess,
            int maxInFlight, int maxOpenFiles, List<String> partitionColumns) {
        this.rowGroupRows = rowGroupRows;
        this.batchRows = batchRows;
        this.compact = compact;
        this.randomAccess = randomAccess;
        this.maxInFlight = maxInFlight;
        this.maxOpenFiles = maxOpenFiles;
        this.partitionColumns = partitionColumns;
    }

    /** Parses {@code options} (a Spark options map; lookups ignore case). */
    public static QuiverWriteOptions parse(Map<String, String> options) {
        CaseInsensitiveStringMap o = OptionParsing.caseInsensitive(options);
        long rowGroupRows = OptionParsing.longOption(o, ROW_GROUP_ROWS, 0, 0, MAX_ROW_GROUP_ROWS);
        int batchRows = (int) OptionParsing.longOption(o, BATCH_ROWS, DEFAULT_BATCH_ROWS, 1, Integer.MAX_VALUE);
        boolean compact = OptionParsing.booleanOption(o, COMPACT, false);
        boolean randomAccess = OptionParsing.booleanOption(o, RANDOM_ACCESS, false);
        if (compact && randomAccess) {
            throw new IllegalArgumentException("quiver options '" + COMPACT + "' and '" + RANDOM_ACCESS
                    + "' exclude each other (compact files are small by their frames, which randomAccess leaves out)");
        }
        int maxInFlight = (int) OptionParsing.longOption(o, MAX_IN_FLIGHT, 0, -1, MAX_IN_FLIGHT_LIMIT);
        int maxOpenFiles = (int) OptionParsing.longOption(o, MAX_OPEN_FILES, DEFAULT_MAX_OPEN_FILES, 1,
                MAX_OPEN_FILES_LIMIT);
        return new QuiverWriteOptions(rowGroupRows, batchRows, compact, randomAccess, maxInFlight, maxOpenFiles,
                partitionColumns(o.get(PARTITION_COLUMNS)));
    }

    private static List<String> partitionColumns(String json) {
        if (json == null) {
            return null;
        }
        String[] names;
        try {
            names = new ObjectMapper().readValue(json, String[].class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("quiver option '" + PARTITION_COLUMNS
                    + "': not a JSON array of column names: " + json, e);
        }
        if (names == null) {
            throw new IllegalArgumentException("quiver option '" + PARTITION_COLUMNS
                    + "': not a JSON array of column names: " + json);
        }
        for (String n : names) {
            if (n == null || n.isEmpty()) {
                throw new IllegalArgumentException("quiver option '" + PARTITION_COLUMNS
                        + "': a column name is empty or null: " + json);
            }
        }
        return List.of(names);
    }

    public long rowGroupRows() {
        return rowGroupRows;
    }

    public int batchRows() {
        return batchRows;
    }

    public boolean compact() {
        return compact;
    }

    public boolean randomAccess() {
        return randomAccess;
    }

    public int maxInFlight() {
        return maxInFlight;
    }

    public int maxOpenFiles() {
        return maxOpenFiles;
    }

    /** The names {@code __partition_columns} gave, or null when it was not given. */
    public List<String> partitionColumns() {
        return partitionColumns;
    }
}
