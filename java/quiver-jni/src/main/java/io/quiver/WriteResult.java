package io.quiver;

/** What {@link QuiverWriter#finish()} published: rows, and the file's size in bytes. */
public record WriteResult(long rows, long bytes) {}
