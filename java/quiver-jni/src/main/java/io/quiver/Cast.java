package io.quiver;

/**
 * Casts a scan applies to its output columns, for consumers that accept
 * fewer Arrow types than Quiver stores; the flags of the C library's
 * {@code enum qv_cast} (quiver/scan.h). A value that does not fit its target
 * type fails the scan with a {@link QuiverInvalidArgumentException} naming
 * the column, row group and row; it is never wrapped or clipped.
 */
public enum Cast {
    /** timestamp(s|ms|ns) to timestamp(us), the time zone kept. */
    TIMESTAMP_US(1),
    /** uint8/16/32 to int16/32/64, uint64 to decimal128(20, 0). */
    UNSIGNED_WIDEN(1 << 1),
    /** float16 to float32. */
    FLOAT16_TO_32(1 << 2),
    /** large_list to list (32-bit offsets). */
    LARGE_LIST(1 << 3),
    /** Every cast above: exactly the types Spark's {@code ArrowColumnVector} accepts. */
    SPARK(0xF);

    private final int flags;

    Cast(int flags) {
        this.flags = flags;
    }

    /** The bits of {@code enum qv_cast} this cast stands for. */
    int flags() {
        return flags;
    }
}
