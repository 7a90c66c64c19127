package io.quiver;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How a {@link QuiverWriter} lays out its file: rows and bytes per row group,
 * whether zstd / lz4 may win where they are smaller, the file's key-value
 * metadata, and the memory limit of the writer's buffering. Immutable; made
 * by {@link #builder()}.
 */
public final class WriterOptions {
    private static final int EINVAL = 22;

    /** {@link Builder#maxInFlight(int)}: encode on the calling thread, no worker thread. */
    public static final int INLINE = -1;

    private static final WriterOptions DEFAULTS = builder().build();

    final long rowGroupRows, rowGroupBytes, memoryLimit;
    final boolean compact, randomAccess;
    final Map<String, String> metadata;
    final io.quiver.memory.NativePool pool;
    final int maxInFlight;

    private WriterOptions(Builder b) {
        this.maxInFlight = b.maxInFlight;
        this.rowGroupRows = b.rowGroupRows;
        this.rowGroupBytes = b.rowGroupBytes;
        this.memoryLimit = b.memoryLimit;
        this.compact = b.compact;
        this.randomAccess = b.randomAccess;
        this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(b.metadata));
        this.pool = b.pool;
    }

    public static WriterOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Map<String, String> metadata() {
        return metadata;
    }

    public static final class Builder {
        private long rowGroupRows, rowGroupBytes, memoryLimit;
        private boolean compact, randomAccess;
        private final Map<String, String> metadata = new LinkedHashMap<>();
        private io.quiver.memory.NativePool pool;
        private int maxInFlight;

        private Builder() {}

        /**
         * Row groups encoded in the background, at most: full row groups are
         * handed to the native writer's worker thread (started at the first
         * full row group), and a write waits while this many are sealed and
         * not yet written and released. 0 = 2; {@link #INLINE} (-1) encodes
         * on the calling thread. Arrays moved in by
         * {@link QuiverWriter#writeOwned} are held until written, so this
         * bounds the Arrow memory the writer holds as well.
         */
        public Builder maxInFlight(int rowGroups) {
            if (rowGroups < INLINE)
                throw new QuiverInvalidArgumentException(EINVAL,
                        "maxInFlight " + rowGroups + " is below -1 (0 = 2, -1 = encode on the calling thread)");
            this.maxInFlight = rowGroups;
            return this;
        }

        /** Rows per row group, exactly (the last holds the rest); 0 = 131,072. Multiples of 1,024 compress best. */
        public Builder rowGroupRows(long rows) {
            if (rows < 0) throw new QuiverInvalidArgumentException(EINVAL, "rowGroupRows " + rows + " is negative");
            this.rowGroupRows = rows;
            return this;
        }

        /** Ends a row group early once this many bytes are buffered; 0 = 256 MiB. */
        public Builder rowGroupBytes(long bytes) {
            if (bytes < 0) throw new QuiverInvalidArgumentException(EINVAL, "rowGroupBytes " + bytes + " is negative");
            this.rowGroupBytes = bytes;
            return this;
        }

        /** Lets zstd / lz4 win where they are smaller than Quiver's own encodings. */
        public Builder compact(boolean on) {
            this.compact = on;
            return this;
        }

        /**
         * Files for point lookups: no frame encodings (zstd, lz4, ans), so a
         * take decodes the 1,024-value vector of each row, not frames; files are
         * larger where entropy coding paid. Opening a writer with this and
         * {@link #compact(boolean)} both on fails with
         * {@link QuiverInvalidArgumentException}.
         */
        public Builder randomAccess(boolean on) {
            this.randomAccess = on;
            return this;
        }

        /** Adds key-value metadata to the file (UTF-8 bytes on disk). */
        public Builder metadata(Map<String, String> kv) {
            for (Map.Entry<String, String> e : kv.entrySet())
                metadata.put(Objects.requireNonNull(e.getKey(), "metadata key"),
                        Objects.requireNonNull(e.getValue(), "metadata value"));
            return this;
        }

        public Builder metadata(String key, String value) {
            metadata.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Limit of the writer's buffering (its own native pool); 0 = unlimited. */
        public Builder memoryLimit(long bytes) {
            if (bytes < 0) throw new QuiverInvalidArgumentException(EINVAL, "memoryLimit " + bytes + " is negative");
            this.memoryLimit = bytes;
            return this;
        }

        /**
         * Charges the writer's buffering to {@code pool} (a Spark task's
         * {@code TaskMemory.pool()}) instead of a pool of its own; the
         * writer keeps the native pool alive until it is closed.
         * {@code memoryLimit} is then ignored: the pool's budget applies.
         */
        public Builder pool(io.quiver.memory.NativePool pool) {
            this.pool = pool;
            return this;
        }

        public WriterOptions build() {
            return new WriterOptions(this);
        }
    }
}
