package io.quiver;

import java.util.List;

/**
 * How {@link QuiverFile#take} reads rows by index: the columns (by the same
 * name rule as {@link ScanOptions}), batch size, workers, casts and
 * validation. A take has no filter and no ranges: its rows are the indices
 * given, so this type offers only the settings a take has. They are the
 * scan's own settings (one builder checks them, {@link ScanOptions.Builder}),
 * kept in a {@link ScanOptions} without filter or ranges. Immutable; made by
 * {@link #builder()}.
 */
public final class TakeOptions {
    private static final TakeOptions DEFAULTS = builder().build();

    /** The settings of the take: a scan's, never with a filter, a range or a limit. */
    final ScanOptions read;

    private TakeOptions(ScanOptions read) {
        this.read = read;
    }

    public static TakeOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        private final ScanOptions.Builder read = ScanOptions.builder();

        private Builder() {}

        /** The columns or nested fields to read; see {@link ScanOptions.Builder#columns(List)}. */
        public Builder columns(List<String> names) {
            read.columns(names);
            return this;
        }

        public Builder columns(String... names) {
            read.columns(names);
            return this;
        }

        /** Rows per output batch; 0 = 65,536. */
        public Builder batchRows(long rows) {
            read.batchRows(rows);
            return this;
        }

        /** Decode workers, as in {@link ScanOptions.Builder#threads(int)}. */
        public Builder threads(int n) {
            read.threads(n);
            return this;
        }

        /** As {@link ScanOptions.Builder#prefetch(int)}. */
        public Builder prefetch(int batches) {
            read.prefetch(batches);
            return this;
        }

        public Builder cast(Cast... c) {
            read.cast(c);
            return this;
        }

        public Builder validation(Validation v) {
            read.validation(v);
            return this;
        }

        public TakeOptions build() {
            return new TakeOptions(read.build());
        }
    }
}
