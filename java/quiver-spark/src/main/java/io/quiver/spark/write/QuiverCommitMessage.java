package io.quiver.spark.write;

import java.io.Serializable;
import java.util.List;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What a committed task attempt staged: its Spark partition, its attempt
 * (the Spark task id, unique per attempt), and its files, each named by its
 * path relative to the attempt folder (Hive directories included), which is
 * also its path relative to the target once published.
 */
public record QuiverCommitMessage(int partitionId, long taskId, List<StagedFile> files)
        implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;

    public QuiverCommitMessage {
        files = List.copyOf(files);
    }

    public long rows() {
        long n = 0;
        for (StagedFile f : files) {
            n += f.rows();
        }
        return n;
    }

    /**
     * One finished file of an attempt.
     *
     * @param relativePath its path under the attempt folder, e.g. {@code k=1/part-00003-<job>-c000.qvr}
     * @param rows         rows written
     * @param bytes        the file's size
     */
    public record StagedFile(String relativePath, long rows, long bytes) implements Serializable {
        private static final long serialVersionUID = 1L;
    }
}
