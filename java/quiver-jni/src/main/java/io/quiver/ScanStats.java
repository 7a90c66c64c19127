package io.quiver;

/**
 * What a scan has done so far ({@code struct qv_scan_stats}): row groups in
 * its range and those skipped by the filter's statistics, rows of filter
 * columns decoded, rows handed out, batches, the most completed batches ever
 * waiting, and the decode workers it runs.
 */
public record ScanStats(long rowGroupsTotal, long rowGroupsPruned, long rowsDecoded, long rowsOutput,
        long batches, int maxQueued, int threads) {}
