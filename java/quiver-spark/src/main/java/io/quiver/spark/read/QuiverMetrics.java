package io.quiver.spark.read;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The custom metrics of a Quiver scan, summed over its tasks: row groups the
 * filter's statistics skipped, rows the native filter dropped, and bytes
 * read from the files. Each task's reader reports its values with
 * {@link #task}; the driver's {@code Scan.supportedCustomMetrics} returns
 * {@link #all()}. Spark instantiates the metric classes by reflection on the
 * driver, hence their public no-argument constructors.
 */
public final class QuiverMetrics {
    /** Metric name: row groups skipped by the filter's statistics. */
    public static final String ROW_GROUPS_PRUNED = "rowGroupsPruned";
    /** Metric name: rows decoded and then dropped by the pushed filter. */
    public static final String ROWS_FILTERED_NATIVELY = "rowsFilteredNatively";
    /** Metric name: bytes of the files read. */
    public static final String BYTES_READ = "bytesRead";

    private QuiverMetrics() {}

    /** Every metric a Quiver scan reports, for {@code Scan.supportedCustomMetrics}. */
    public static CustomMetric[] all() {
        return new CustomMetric[] {new RowGroupsPruned(), new RowsFilteredNatively(), new BytesRead()};
    }

    /** One task's value of the metric {@code name}. */
    public static CustomTaskMetric task(String name, long value) {
        return new TaskValue(name, value);
    }

    /** Row groups skipped by the pushed filter's statistics, without reading them. */
    public static final class RowGroupsPruned extends CustomSumMetric {
        @Override
        public String name() {
            return ROW_GROUPS_PRUNED;
        }

        @Override
        public String description() {
            return "row groups pruned by statistics";
        }
    }

    /** Rows the pushed filter dropped inside Quiver, before they reached Spark. */
    public static final class RowsFilteredNatively extends CustomSumMetric {
        @Override
        public String name() {
            return ROWS_FILTERED_NATIVELY;
        }

        @Override
        public String description() {
            return "rows filtered by Quiver";
        }
    }

    /** Bytes Quiver read from the files. */
    public static final class BytesRead extends CustomSumMetric {
        @Override
        public String name() {
            return BYTES_READ;
        }

        @Override
        public String description() {
            return "bytes read by Quiver";
        }
    }

    private record TaskValue(String name, long value) implements CustomTaskMetric {}
}
