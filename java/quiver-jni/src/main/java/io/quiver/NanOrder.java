package io.quiver;

/**
 * How a scan's filter orders float NaN ({@code enum qv_nan_order} of
 * quiver/scan.h). The order applies to every comparison of a float column
 * in the filter, and to the statistics-based skipping of row groups.
 */
public enum NanOrder {
    /** IEEE 754 (the default): NaN is unordered and equals nothing, itself included. */
    IEEE(0),
    /**
     * Spark SQL's order: -Infinity &lt; ... &lt; -0.0 = 0.0 &lt; ... &lt; +Infinity &lt; NaN,
     * and NaN = NaN.
     */
    LARGEST(1);

    private final int code;

    NanOrder(int code) {
        this.code = code;
    }

    /** The value of {@code qv_scan_options.nan_order}. */
    int code() {
        return code;
    }
}
