package io.quiver;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What a scan of a {@link QuiverFile} reads: columns by name, a filter, a
 * range of row groups or rows, and how (batch size, decode workers,
 * prefetch, casts, validation). Immutable; made by {@link #builder()}. The
 * defaults read every column of every row in batches of 65,536 rows with up
 * to four decode workers, each column fully validated.
 *
 * <p>Names follow Quiver's one name rule (docs/file.md): a path of field
 * names separated by dots ({@code a.b.c}), a name holding a dot or a double
 * quote written in double quotes ({@code "a.b".c}); an unquoted name without
 * an exact match may match one field ignoring ASCII case. An unknown name is
 * a {@link QuiverNotFoundException} naming it and the closest field.
 */
public final class ScanOptions {
    private static final int EINVAL = 22;

    /** {@link Builder#threads(int)}: decode on the reading thread, no workers. */
    public static final int SYNC = -1;

    private static final ScanOptions DEFAULTS = builder().build();

    final List<String> columns; // null = every column
    final String filter;        // null = every row
    final long rowGroupBegin, rowGroupEnd, rowBegin, rowEnd;
    final long batchRows, limit;
    final int threads, prefetch, cast;
    final Validation validation;
    final NanOrder nanOrder;

    private ScanOptions(Builder b) {
        this.columns = b.columns == null ? null : Collections.unmodifiableList(new ArrayList<>(b.columns));
        this.filter = b.filter;
        this.rowGroupBegin = b.rowGroupBegin;
        this.rowGroupEnd = b.rowGroupEnd;
        this.rowBegin = b.rowBegin;
        this.rowEnd = b.rowEnd;
        this.batchRows = b.batchRows;
        this.limit = b.limit;
        this.threads = b.threads;
        this.prefetch = b.prefetch;
        int flags = 0;
        for (Cast c : b.casts) flags |= c.flags();
        this.cast = flags;
        this.validation = b.validation;
        this.nanOrder = b.nanOrder;
    }

    /** Every column, every row, the default settings. */
    public static ScanOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The columns asked for, or null for every column. */
    public List<String> columns() {
        return columns;
    }

    /** The filter text, or null. */
    public String filter() {
        return filter;
    }

    /** How the filter orders float NaN. */
    public NanOrder nanOrder() {
        return nanOrder;
    }

    /** Builds {@link ScanOptions}; each setter checks its argument at once. */
    public static final class Builder {
        private List<String> columns;
        private String filter;
        private long rowGroupBegin, rowGroupEnd, rowBegin, rowEnd;
        private long batchRows, limit;
        private int threads, prefetch;
        private final Set<Cast> casts = EnumSet.noneOf(Cast.class);
        private Validation validation = Validation.FULL;
        private NanOrder nanOrder = NanOrder.IEEE;

        private Builder() {}

        /**
         * The columns or nested fields to read, by name, in this order (a
         * struct keeps only the fields named, in schema order). An empty
         * list reads no column: batches carry only their row counts.
         */
        public Builder columns(List<String> names) {
            Objects.requireNonNull(names, "names");
            for (String n : names) Objects.requireNonNull(n, "a column name is null");
            this.columns = new ArrayList<>(names);
            return this;
        }

        public Builder columns(String... names) {
            return columns(List.of(names));
        }

        /**
         * A filter in Quiver's predicate language (quiver/scan.h), for example
         * {@code "x > 5 AND name STARTS WITH 'a'"}; rows for which it is not
         * TRUE are left out. A filter that does not parse or bind is a
         * {@link QuiverInvalidArgumentException} with the position and a
         * caret under the text. Null removes the filter.
         */
        public Builder filter(String text) {
            this.filter = text;
            return this;
        }

        /** Only row groups {@code [begin, end)} (a split); end 0 = to the last. */
        public Builder rowGroups(long begin, long end) {
            if (begin < 0 || end < 0 || (end != 0 && end < begin))
                throw new QuiverInvalidArgumentException(EINVAL, "row groups [" + begin + ", " + end + ") is not a range");
            this.rowGroupBegin = begin;
            this.rowGroupEnd = end;
            return this;
        }

        /** Only global rows {@code [begin, end)}; end 0 = to the end. */
        public Builder rows(long begin, long end) {
            if (begin < 0 || end < 0 || (end != 0 && end < begin))
                throw new QuiverInvalidArgumentException(EINVAL, "rows [" + begin + ", " + end + ") is not a range");
            this.rowBegin = begin;
            this.rowEnd = end;
            return this;
        }

        /** Rows per batch before filtering; 0 = 65,536. */
        public Builder batchRows(long rows) {
            if (rows < 0) throw new QuiverInvalidArgumentException(EINVAL, "batchRows " + rows + " is negative");
            this.batchRows = rows;
            return this;
        }

        /** Stops after this many output rows; 0 = no limit. */
        public Builder limit(long rows) {
            if (rows < 0) throw new QuiverInvalidArgumentException(EINVAL, "limit " + rows + " is negative");
            this.limit = rows;
            return this;
        }

        /**
         * Decode workers: 0 = one per core, at most 4; {@link #SYNC} = none
         * (decode on the thread that calls {@code loadNextBatch}).
         */
        public Builder threads(int n) {
            if (n < SYNC) throw new QuiverInvalidArgumentException(EINVAL, "threads " + n + " is below SYNC (-1)");
            this.threads = n;
            return this;
        }

        /** Completed batches waiting at most (with workers); 0 = 1; at most 1,024 (more is QuiverInvalidArgumentException from the scan). */
        public Builder prefetch(int batches) {
            if (batches < 0) throw new QuiverInvalidArgumentException(EINVAL, "prefetch " + batches + " is negative");
            this.prefetch = batches;
            return this;
        }

        /** Adds casts applied to the output columns. */
        public Builder cast(Cast... c) {
            for (Cast x : c) casts.add(Objects.requireNonNull(x, "cast"));
            return this;
        }

        /** How each output column is checked; {@link Validation#FULL} by default. */
        public Builder validation(Validation v) {
            this.validation = Objects.requireNonNull(v, "validation");
            return this;
        }

        /**
         * How the filter's float comparisons order NaN: {@link NanOrder#IEEE}
         * by default; {@link NanOrder#LARGEST} for Spark's semantics (NaN
         * above every number, NaN = NaN), which row-group skipping follows too.
         */
        public Builder nanOrder(NanOrder order) {
            this.nanOrder = Objects.requireNonNull(order, "nanOrder");
            return this;
        }

        public ScanOptions build() {
            return new ScanOptions(this);
        }
    }
}
