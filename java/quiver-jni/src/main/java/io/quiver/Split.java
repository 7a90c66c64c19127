package io.quiver;

import java.io.Serializable;

/**
 * A part of a file to read on its own (qv_file_plan_splits): the row groups
 * {@code [rowGroupBegin, rowGroupEnd)}, which hold the global rows
 * {@code [rowBegin, rowEnd)} and {@code bytes} bytes of column data. Plain
 * and serializable, so a planner (Spark's driver) can ship it to the reader
 * (an executor), which opens {@code path} expecting {@code identity}.
 */
public record Split(String path, FileIdentity identity, long rowGroupBegin, long rowGroupEnd, long rowBegin,
        long rowEnd, long bytes) implements Serializable {
    /** The number of rows of the split. */
    public long rows() {
        return rowEnd - rowBegin;
    }
}
