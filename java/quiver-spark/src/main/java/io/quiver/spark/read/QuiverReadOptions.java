package io.quiver.spark.read;

import io.quiver.spark.OptionParsing;
import java.util.Map;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The read options of {@code spark.read.format("quiver")}, parsed in one
 * place. Keys are case-insensitive as Spark's own options are; a value that
 * does not parse, or is out of range, is refused with an
 * {@link IllegalArgumentException} naming the option and the value, before
 * any file is opened.
 *
 * <ul>
 * <li>{@code threads}: native decode workers per task; {@code -1} (the
 *     default) decodes on the task thread, {@code 0} runs one per core (at
 *     most 4).</li>
 * <li>{@code prefetch}: decoded batches that may wait per task (default 1).</li>
 * <li>{@code batchRows}: rows per Arrow batch (default 32768).</li>
 * <li>{@code mergeSchema}: {@code true} merges files of different schemas by
 *     name; {@code false} (the default) refuses them.</li>
 * </ul>
 *
 * <p>The defaults are measured ({@code bench/run spark}, lineitem SF1,
 * {@code local[2]}, Q6 and a two-column scan): Spark already runs a task per
 * core, so decoding on the task thread was as fast as one worker per task
 * (within the machine's noise) and holds less memory, and more workers only
 * contend; batches of 32,768 rows instead of Spark's usual 4,096 cut the
 * per-batch costs (a native call, an import, a Spark batch) eightfold and
 * made Q6 about 1.3x as fast, for a few MiB more per task; a second waiting
 * batch gained nothing measurable and costs a batch of memory per task.
 */
public final class QuiverReadOptions {
    public static final String THREADS = "threads";
    public static final String PREFETCH = "prefetch";
    public static final String BATCH_ROWS = "batchRows";
    public static final String MERGE_SCHEMA = "mergeSchema";

    public static final int DEFAULT_THREADS = -1;
    public static final int DEFAULT_PREFETCH = 1;
    public static final long DEFAULT_BATCH_ROWS = 32768;

    /** The file layer refuses deeper prefetch queues (QV_SCAN_MAX_PREFETCH). */
    private static final int MAX_PREFETCH = 1024;
    /** A batch of more rows than an int holds could not be a Spark batch. */
    private static final long MAX_BATCH_ROWS = Integer.MAX_VALUE;

    private final int threads;
    private final int prefetch;
    private final long batchRows;
    private final boolean mergeSchema;

    private QuiverReadOptions(int threads, int prefetch, long batchRows, boolean mergeSchema) {
        this.threads = threads;
        this.prefetch = prefetch;
        this.batchRows = batchRows;
        this.mergeSchema = mergeSchema;
    }

    /** Parses {@code options} (a Spark options map; lookups ignore case). */
    public static QuiverReadOptions parse(Map<String, String> options) {
        CaseInsensitiveStringMap o = OptionParsing.caseInsensitive(options);
        int threads = (int) OptionParsing.longOption(o, THREADS, DEFAULT_THREADS, -1, 1024);
        int prefetch = (int) OptionParsing.longOption(o, PREFETCH, DEFAULT_PREFETCH, 1, MAX_PREFETCH);
        long batchRows = OptionParsing.longOption(o, BATCH_ROWS, DEFAULT_BATCH_ROWS, 1, MAX_BATCH_ROWS);
        boolean merge = OptionParsing.booleanOption(o, MERGE_SCHEMA, false);
        return new QuiverReadOptions(threads, prefetch, batchRows, merge);
    }

    public int threads() {
        return threads;
    }

    public int prefetch() {
        return prefetch;
    }

    public long batchRows() {
        return batchRows;
    }

    public boolean mergeSchema() {
        return mergeSchema;
    }
}
