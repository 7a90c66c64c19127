package io.quiver.spark.write;

import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;

/**
 * Where one write job puts its files, computed the same way on the driver
 * and in every task: the target folder; the job's staging folder inside it,
 * {@code .quiver-staging-<job>}, whose name the read listing skips (it
 * starts with a dot), so a reader never sees staged files; one folder per
 * task attempt inside that; and the final file names
 * {@code part-<partition:05d>-<job>-c<n:03d>.qvr}.
 *
 * <p>A name depends only on the job, the Spark partition, the Hive
 * directory and the file's number within that directory in its task, so
 * two attempts of one partition stage files of the same names, and only
 * the attempt whose commit the job publishes reaches the target.
 */
public final class WriteLayout implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The prefix of staging folders: hidden from Spark's listing, and from Quiver's. */
    public static final String STAGING_PREFIX = ".quiver-staging-";
    public static final String EXTENSION = ".qvr";

    private final String target;
    private final String jobId;

    public WriteLayout(String target, String jobId) {
        this.target = target;
        this.jobId = jobId;
    }

    /** The target folder (absolute, local). */
    public Path target() {
        return Paths.get(target);
    }

    public String jobId() {
        return jobId;
    }

    /** The job's staging folder. */
    public Path staging() {
        return target().resolve(STAGING_PREFIX + jobId);
    }

    /** Where overwrite parks the old data until the new data is published. */
    public Path replaced() {
        return staging().resolve("replaced");
    }

    /** The folder of one task attempt; {@code taskId} is unique per attempt in the application. */
    public Path attempt(int partitionId, long taskId) {
        return staging().resolve(attemptFolder(partitionId, taskId));
    }

    /** The name of {@link #attempt}'s folder (inside the staging folder). */
    static String attemptFolder(int partitionId, long taskId) {
        return String.format(Locale.ROOT, "attempt-%05d-%d", partitionId, taskId);
    }

    /** The name of file {@code n} of a Spark partition in one directory. */
    public String fileName(int partitionId, int n) {
        return String.format(Locale.ROOT, "part-%05d-%s-c%03d%s", partitionId, jobId, n, EXTENSION);
    }
}
