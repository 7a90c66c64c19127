package io.quiver;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * How {@link QuiverFile#take} reads rows by index: the columns (by the same
 * name rule as {@link ScanOptions}), batch size, workers, casts and
 * validation. A take has no filter and no ranges: its rows are the indices
 * given. Immutable; made by {@link #builder()}.
 */
public final class TakeOptions {
    private static final int EINVAL = 22;

    private static final TakeOptions DEFAULTS = builder().build();

    final List<String> columns;
    final long batchRows;
    final int threads, prefetch, cast;
    final Validation validation;

    private TakeOptions(Builder b) {
        this.columns = b.columns == null ? null : Collections.unmodifiableList(new ArrayList<>(b.columns));
        this.batchRows = b.batchRows;
        this.threads = b.threads;
        this.prefetch = b.prefetch;
        int flags = 0;
        for (Cast c : b.casts) flags |= c.flags();
        this.cast = flags;
        this.validation = b.validation;
    }

    public static TakeOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        private List<String> columns;
        private long batchRows;
        private int threads, prefetch;
        private final Set<Cast> casts = EnumSet.noneOf(Cast.class);
        private Validation validation = Validation.FULL;

        private Builder() {}

        /** The columns or nested fields to read; see {@link ScanOptions.Builder#columns(List)}. */
        public Builder columns(List<String> names) {
            Objects.requireNonNull(names, "names");
            for (String n : names) Objects.requireNonNull(n, "a column name is null");
            this.columns = new ArrayList<>(names);
            return this;
        }

        public Builder columns(String... names) {
            return columns(List.of(names));
        }

        /** Rows per output batch; 0 = 65,536. */
        public Builder batchRows(long rows) {
            if (rows < 0) throw new QuiverInvalidArgumentException(EINVAL, "batchRows " + rows + " is negative");
            this.batchRows = rows;
            return this;
        }

        /** Decode workers, as in {@link ScanOptions.Builder#threads(int)}. */
        public Builder threads(int n) {
            if (n < ScanOptions.SYNC) throw new QuiverInvalidArgumentException(EINVAL, "threads " + n + " is below SYNC (-1)");
            this.threads = n;
            return this;
        }

        public Builder prefetch(int batches) {
            if (batches < 0) throw new QuiverInvalidArgumentException(EINVAL, "prefetch " + batches + " is negative");
            this.prefetch = batches;
            return this;
        }

        public Builder cast(Cast... c) {
            for (Cast x : c) casts.add(Objects.requireNonNull(x, "cast"));
            return this;
        }

        public Builder validation(Validation v) {
            this.validation = Objects.requireNonNull(v, "validation");
            return this;
        }

        public TakeOptions build() {
            return new TakeOptions(this);
        }
    }
}
