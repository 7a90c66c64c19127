package io.quiver;

/**
 * How a scan checks what it hands out ({@code enum qv_scan_validate}).
 * Checksums prove the bytes are the ones written, not that they decode to
 * valid Arrow: a crafted file can hold invalid UTF-8 or out-of-range offsets
 * under correct checksums, and Arrow Java trusts the buffers it imports. A
 * column that fails the check fails the scan with a
 * {@link QuiverCorruptException} naming the column and row group.
 */
public enum Validation {
    /** No check (trusted files only). */
    NONE(0),
    /** Lengths, offsets at the ends, buffer counts: O(1) per column. */
    CHEAP(1),
    /** Every offset, every UTF-8 value, decimals in their precision: O(data). The default. */
    FULL(2);

    private final int level;

    Validation(int level) {
        this.level = level;
    }

    int level() {
        return level;
    }
}
