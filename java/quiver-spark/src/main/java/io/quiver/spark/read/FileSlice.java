package io.quiver.spark.read;

import io.quiver.FileIdentity;
import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * One piece of one file for one task: the row groups
 * {@code [rowGroupBegin, rowGroupEnd)} of {@code path}, planned on the driver
 * from the footer of the file whose identity was {@code identity}. The
 * executor re-opens the file expecting that identity, so a file replaced
 * since planning fails (or is skipped under ignoreCorruptFiles / missing
 * under ignoreMissingFiles) instead of being read as something else.
 *
 * @param path            the file, as a path string the executor can open
 * @param identity        size and footer checksum at planning time
 * @param rowGroupBegin   first row group
 * @param rowGroupEnd     one past the last row group
 * @param rows            rows in the slice (before any filter)
 * @param bytes           encoded bytes of the projected columns in the slice
 *                        (what split planning weighed)
 * @param partitionValues the Hive partition values of the file's folder, in
 *                        the order of the scan's partition schema (an empty
 *                        row when the table has no partition columns)
 */
public record FileSlice(String path, FileIdentity identity, long rowGroupBegin, long rowGroupEnd, long rows,
        long bytes, InternalRow partitionValues) implements Serializable {}
