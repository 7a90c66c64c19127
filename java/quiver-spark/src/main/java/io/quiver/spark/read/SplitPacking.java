package io.quiver.spark.read;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * How file slices become Spark tasks, with the rules Spark's own file
 * sources use (FilePartition): the target size {@link #maxSplitBytes} and a
 * packing that opens a new partition when the next slice would take the
 * current one over it, counting {@code spark.sql.files.openCostInBytes} for
 * every slice as the price of opening it (so many small files share a task,
 * while a large file, already cut by row groups, spreads over many).
 */
public final class SplitPacking {
    private SplitPacking() {}

    /**
     * {@code min(maxPartitionBytes, max(openCostInBytes, totalBytes / minPartitions))}
     * where {@code totalBytes} sums each file's bytes (the driver passes the
     * bytes of the projected columns, which is what the tasks read) plus the
     * open cost, and
     * {@code minPartitions} is {@code spark.sql.files.minPartitionNum} or
     * else the default parallelism.
     */
    public static long maxSplitBytes(long maxPartitionBytes, long openCostInBytes, int minPartitions,
            List<Long> fileLengths) {
        long total = 0;
        for (long len : fileLengths) {
            total += len + openCostInBytes;
        }
        long perCore = total / Math.max(1, minPartitions);
        return Math.min(maxPartitionBytes, Math.max(openCostInBytes, perCore));
    }

    /**
     * Joins consecutive row-group slices of one file ({@code rowGroups}, in
     * row-group order) into slices of at most {@code maxSplitBytes} projected
     * bytes each (a row group larger than that stays a slice of its own).
     */
    public static List<FileSlice> coalesce(List<FileSlice> rowGroups, long maxSplitBytes) {
        List<FileSlice> out = new ArrayList<>();
        FileSlice cur = null;
        for (FileSlice s : rowGroups) {
            if (cur != null && cur.rowGroupEnd() == s.rowGroupBegin() && cur.bytes() + s.bytes() <= maxSplitBytes) {
                cur = new FileSlice(cur.path(), cur.identity(), cur.rowGroupBegin(), s.rowGroupEnd(),
                        cur.rows() + s.rows(), cur.bytes() + s.bytes(), cur.partitionValues());
            } else {
                if (cur != null) {
                    out.add(cur);
                }
                cur = s;
            }
        }
        if (cur != null) {
            out.add(cur);
        }
        return out;
    }

    /**
     * Packs {@code slices} into partitions. Slices are taken largest first
     * (ties by path, then row group, so the plan does not depend on the
     * order footers were read in), which keeps the packing deterministic.
     */
    public static List<QuiverInputPartition> pack(List<FileSlice> slices, long maxSplitBytes, long openCostInBytes) {
        List<FileSlice> sorted = new ArrayList<>(slices);
        sorted.sort(Comparator.comparingLong(FileSlice::bytes).reversed()
                .thenComparing(FileSlice::path)
                .thenComparingLong(FileSlice::rowGroupBegin));
        List<QuiverInputPartition> out = new ArrayList<>();
        List<FileSlice> current = new ArrayList<>();
        long size = 0;
        for (FileSlice s : sorted) {
            if (!current.isEmpty() && size + s.bytes() > maxSplitBytes) {
                out.add(new QuiverInputPartition(out.size(), current));
                current = new ArrayList<>();
                size = 0;
            }
            size += s.bytes() + openCostInBytes;
            current.add(s);
        }
        if (!current.isEmpty()) {
            out.add(new QuiverInputPartition(out.size(), current));
        }
        return out;
    }
}
