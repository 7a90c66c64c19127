package io.quiver.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.quiver.FileIdentity;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.junit.jupiter.api.Test;

/** Spark's file packing rules applied to Quiver slices. */
class SplitPackingTest {
    private static final InternalRow NONE = new GenericInternalRow(new Object[0]);

    private static FileSlice slice(String path, long group, long bytes) {
        return new FileSlice(path, new FileIdentity(1, 2), group, group + 1, 10, bytes, NONE);
    }

    @Test
    void maxSplitBytesIsSparks() {
        // min(maxPartitionBytes, max(openCost, total / parallelism))
        assertEquals(128, SplitPacking.maxSplitBytes(128, 4, 2, List.of(1000L)));
        assertEquals((1000 + 4 + 2000 + 4) / 2, SplitPacking.maxSplitBytes(10_000, 4, 2, List.of(1000L, 2000L)));
        assertEquals(400, SplitPacking.maxSplitBytes(10_000, 400, 8, List.of(10L)));
        assertEquals(4, SplitPacking.maxSplitBytes(10_000, 4, 2, List.of()));
    }

    @Test
    void packsLargestFirstWithTheOpenCost() {
        List<FileSlice> in = new ArrayList<>();
        in.add(slice("b", 0, 30));
        in.add(slice("a", 0, 60));
        in.add(slice("c", 0, 30));
        in.add(slice("d", 0, 10));
        List<QuiverInputPartition> out = SplitPacking.pack(in, 100, 5);
        // a (60 + 5); b would make 95 > 100? 65 + 30 = 95 <= 100: joins, size 100;
        // c: 100 + 30 > 100: new; d: 35 + 10 <= 100: joins.
        assertEquals(2, out.size());
        assertEquals(List.of("a", "b"), out.get(0).slices().stream().map(FileSlice::path).toList());
        assertEquals(List.of("c", "d"), out.get(1).slices().stream().map(FileSlice::path).toList());
        assertEquals(0, out.get(0).index());
        assertEquals(1, out.get(1).index());
        // The input order does not matter.
        List<FileSlice> reversed = new ArrayList<>(in);
        java.util.Collections.reverse(reversed);
        assertEquals(out, SplitPacking.pack(reversed, 100, 5));
    }

    @Test
    void aSliceLargerThanTheTargetIsAlone() {
        List<QuiverInputPartition> out = SplitPacking.pack(List.of(slice("a", 0, 500), slice("a", 1, 500),
                slice("b", 0, 1)), 100, 0);
        assertEquals(3, out.size());
        assertEquals(List.of(), SplitPacking.pack(List.of(), 100, 0));
    }

    @Test
    void coalescesConsecutiveRowGroupsOfAFileUpToTheTarget() {
        List<FileSlice> groups = List.of(slice("a", 0, 40), slice("a", 1, 40), slice("a", 2, 40),
                slice("a", 3, 150), slice("a", 4, 10));
        List<FileSlice> out = SplitPacking.coalesce(groups, 100);
        assertEquals(4, out.size(), out.toString());
        assertEquals(0, out.get(0).rowGroupBegin());
        assertEquals(2, out.get(0).rowGroupEnd());
        assertEquals(80, out.get(0).bytes());
        assertEquals(20, out.get(0).rows());
        assertEquals(2, out.get(1).rowGroupBegin());
        assertEquals(3, out.get(1).rowGroupEnd());
        assertEquals(3, out.get(2).rowGroupBegin(), "a row group over the target stays alone");
        assertEquals(4, out.get(2).rowGroupEnd());
        assertEquals(4, out.get(3).rowGroupBegin());
        assertEquals(1, SplitPacking.coalesce(List.of(slice("a", 0, 0), slice("a", 1, 0)), 100).size());
    }
}
