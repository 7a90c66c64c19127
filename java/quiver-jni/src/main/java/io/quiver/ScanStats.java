package io.quiver;

/**
 * What a scan has done so far ({@code struct qv_scan_stats}): row groups in
 * its range and those skipped by the filter's statistics, rows of filter
 * columns decoded, rows handed out, batches, the most completed batches ever
 * waiting, the decode workers it runs, rows the filter rejected (FALSE or
 * NULL; with a filter and no limit, {@code rowsFiltered + rowsOutput ==
 * rowsDecoded} once the scan has ended), and the encoded bytes of the column
 * segments it read (row groups pruned, and projected columns of row groups
 * the filter rejected whole, are not read).
 */
public record ScanStats(long rowGroupsTotal, long rowGroupsPruned, long rowsDecoded, long rowsOutput,
        long batches, int maxQueued, int threads, long rowsFiltered, long bytesRead) {}
