package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Heap bytes the writer allocates per row (ThreadMXBean's count of the
 * task thread's allocation), on Spark's unsafe rows, for the four schemas
 * of the benchmark; the figures are printed ("allocation: ...").
 * Flat columns make no object per value by construction (what is counted
 * is the per-batch bookkeeping of Arrow's buffers, spread over the rows),
 * so for them a bound is checked; it is a count of bytes, not a time. The
 * nested schema's figure depends on Spark's accessors (an unsafe row's
 * getStruct, getArray and getMap each make a view object) and on the JIT's
 * escape analysis, so it is only printed.
 */
@Timeout(300)
class ArrowRowWriterAllocationTest {
    private static final int BATCH_ROWS = 8192;
    private static final int WARMUP_ROWS = 1_000_000;
    private static final int MEASURED_ROWS = 500_000;

    static StructType fiveLongs() {
        StructType s = new StructType();
        for (int i = 0; i < 5; i++) {
            s = s.add("l" + i, DataTypes.LongType);
        }
        return s;
    }

    static StructType hundredNumeric() {
        DataType[] types = {DataTypes.IntegerType, DataTypes.LongType, DataTypes.FloatType, DataTypes.DoubleType,
            DataTypes.createDecimalType(12, 2)};
        StructType s = new StructType();
        for (int i = 0; i < 100; i++) {
            s = s.add("c" + i, types[i % types.length]);
        }
        return s;
    }

    static StructType longAndFourStrings() {
        return new StructType().add("id", DataTypes.LongType).add("a", DataTypes.StringType)
                .add("b", DataTypes.StringType).add("c", DataTypes.StringType).add("d", DataTypes.StringType);
    }

    static StructType nested() {
        return new StructType().add("id", DataTypes.LongType)
                .add("st", new StructType().add("a", DataTypes.IntegerType).add("b", DataTypes.StringType))
                .add("arr", DataTypes.createArrayType(DataTypes.IntegerType))
                .add("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType));
    }

    /**
     * Bytes per row over {@link #MEASURED_ROWS} rows of {@code schema},
     * after a warm-up; the time per row is printed beside it, for
     * information only (a shared machine's times prove nothing).
     */
    static double bytesPerRow(StructType schema, long seed) {
        List<GenericInternalRow> generic = TestRows.rows(schema, 2048, seed);
        UnsafeProjection p = UnsafeProjection.create(schema);
        List<InternalRow> rows = new ArrayList<>();
        for (GenericInternalRow r : generic) {
            rows.add(p.apply(r).copy());
        }
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (BufferAllocator allocator = new RootAllocator();
                ArrowRowWriter w = new ArrowRowWriter(schema, allocator, BATCH_ROWS)) {
            run(w, rows, WARMUP_ROWS);
            baseline(schema, rows, mx);
            long before = mx.getCurrentThreadAllocatedBytes();
            long t0 = System.nanoTime();
            long c0 = mx.getCurrentThreadCpuTime();
            run(w, rows, MEASURED_ROWS);
            long c1 = mx.getCurrentThreadCpuTime();
            long t1 = System.nanoTime();
            long after = mx.getCurrentThreadAllocatedBytes();
            System.out.printf("time: %d columns, %.1f ns/row wall, %.1f ns/row thread CPU%n", schema.size(),
                    (t1 - t0) / (double) MEASURED_ROWS, (c1 - c0) / (double) MEASURED_ROWS);
            return (after - before) / (double) MEASURED_ROWS;
        }
    }

    /**
     * The least any writer does, for scale: reading every value of the
     * same rows as a long, with the null check (printed as "baseline").
     */
    private static void baseline(StructType schema, List<InternalRow> rows, com.sun.management.ThreadMXBean mx) {
        int n = schema.size();
        long sum = 0;
        for (int pass = 0; pass < 2; pass++) {
            long c0 = mx.getCurrentThreadCpuTime();
            for (int i = 0; i < MEASURED_ROWS; i++) {
                InternalRow r = rows.get(i % rows.size());
                for (int c = 0; c < n; c++) {
                    sum += r.isNullAt(c) ? 1 : r.getLong(c);
                }
            }
            long c1 = mx.getCurrentThreadCpuTime();
            if (pass == 1) {
                System.out.printf("baseline: %d columns, reading each value as a long: %.1f ns/row thread CPU (%d)%n",
                        n, (c1 - c0) / (double) MEASURED_ROWS, sum & 1);
            }
        }
    }

    private static void run(ArrowRowWriter w, List<InternalRow> rows, int n) {
        int size = rows.size();
        for (int i = 0; i < n; i++) {
            w.write(rows.get(i % size));
            if (w.isFull()) {
                // What the write path does: the batch's buffers move on
                // (the root is cleared) and the vectors start again small.
                w.finishBatch().clear();
                w.reset();
            }
        }
    }

    @Test
    void flatSchemasMakeNoObjectPerRow() {
        double longs = bytesPerRow(fiveLongs(), 1);
        double numeric = bytesPerRow(hundredNumeric(), 2);
        double strings = bytesPerRow(longAndFourStrings(), 3);
        double nested = bytesPerRow(nested(), 4);
        System.out.printf("allocation: 5 longs %.1f B/row, 100 numeric %.1f B/row, long + 4 strings %.1f B/row, "
                + "struct/array/map %.1f B/row (%d rows, batches of %d)%n", longs, numeric, strings, nested,
                MEASURED_ROWS, BATCH_ROWS);
        assertTrue(longs <= 8, "5 longs: " + longs + " B/row");
        assertTrue(numeric <= 122, "100 numeric: " + numeric + " B/row");
        assertTrue(strings <= 9, "long + 4 strings: " + strings + " B/row");
    }

    /**
     * The direct memory a writer holds from the start (64 slots per
     * vector), as it reports it and as its allocator counts it; printed
     * ("start memory: ...") with what 200 open one-row writers of each
     * schema hold together.
     */
    @Test
    void startMemoryIsWhatTheAllocatorHolds() {
        StructType[] schemas = {fiveLongs(), hundredNumeric(), longAndFourStrings(), nested(), TestRows.everyType()};
        String[] names = {"5 longs", "100 numeric", "long + 4 strings", "struct/array/map", "every type"};
        StringBuilder out = new StringBuilder("start memory:");
        for (int i = 0; i < schemas.length; i++) {
            List<GenericInternalRow> one = TestRows.rows(schemas[i], 1, i);
            List<ArrowRowWriter> writers = new ArrayList<>();
            try (BufferAllocator allocator = new RootAllocator()) {
                try {
                    for (int k = 0; k < 200; k++) {
                        ArrowRowWriter w = new ArrowRowWriter(schemas[i], allocator, BATCH_ROWS);
                        writers.add(w);
                        w.write(one.get(0));
                    }
                    long each = writers.get(0).allocatedBytes();
                    assertTrue(each * 200 == allocator.getAllocatedMemory(),
                            each + " B per writer, allocator " + allocator.getAllocatedMemory());
                    out.append(String.format(" %s %d B per writer, %.2f MiB for 200 one-row writers;", names[i],
                            each, allocator.getAllocatedMemory() / 1048576.0));
                } finally {
                    for (ArrowRowWriter w : writers) {
                        w.close();
                    }
                }
            }
        }
        System.out.println(out);
    }
}
