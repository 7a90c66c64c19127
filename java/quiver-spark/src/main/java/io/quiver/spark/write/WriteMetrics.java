package io.quiver.spark.write;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The write's figures in Spark's SQL UI: rows, files and bytes staged by
 * the tasks (summed over tasks; a task's bytes count once its files are
 * finished). Spark makes the metric objects on the driver by class name,
 * hence the public classes with no-argument constructors.
 */
public final class WriteMetrics {
    public static final String ROWS = "quiverRowsWritten";
    public static final String FILES = "quiverFilesWritten";
    public static final String BYTES = "quiverBytesWritten";

    private WriteMetrics() {}

    static CustomMetric[] supported() {
        return new CustomMetric[] {new Rows(), new Files(), new Bytes()};
    }

    static CustomTaskMetric[] task(long rows, long files, long bytes) {
        return new CustomTaskMetric[] {value(ROWS, rows), value(FILES, files), value(BYTES, bytes)};
    }

    private static CustomTaskMetric value(String name, long v) {
        return new CustomTaskMetric() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public long value() {
                return v;
            }
        };
    }

    public static final class Rows extends CustomSumMetric {
        @Override
        public String name() {
            return ROWS;
        }

        @Override
        public String description() {
            return "rows written (quiver)";
        }
    }

    public static final class Files extends CustomSumMetric {
        @Override
        public String name() {
            return FILES;
        }

        @Override
        public String description() {
            return "files written (quiver)";
        }
    }

    public static final class Bytes extends CustomSumMetric {
        @Override
        public String name() {
            return BYTES;
        }

        @Override
        public String description() {
            return "bytes written (quiver)";
        }
    }
}
