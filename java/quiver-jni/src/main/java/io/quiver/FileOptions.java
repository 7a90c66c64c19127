package io.quiver;

/**
 * How {@link QuiverFile#open(String, FileOptions)} opens a file
 * (struct qv_file_options). Immutable; each setter returns a copy.
 *
 * <ul>
 * <li>{@code memoryLimit}: the limit of the file's own memory pool in bytes
 * (0, the default: unlimited). Everything the file and its scans allocate is
 * charged to it; going over fails with {@link QuiverOutOfMemoryException}.</li>
 * <li>{@code mmap}: map the file instead of reading it with positional
 * reads. <b>Only for files nobody truncates or rewrites while they are
 * open:</b> a mapped file cut short by another process kills the whole JVM
 * (SIGBUS in native code, which no Java handler can catch; checked: a scan
 * of a file truncated under it aborts the JVM), and bytes changed in place
 * after their checksum was verified are decoded as they are. Without it a
 * truncated file fails the read with a {@link QuiverException}. Off by
 * default; never turn it on for files of a shared or mutable store (a Spark
 * job's input).</li>
 * <li>{@code skipChecksums}: do not verify the column segments' checksums
 * (the footer's always is); for trusted storage only.</li>
 * <li>{@code pool}: a {@link io.quiver.memory.NativePool} to charge
 * instead of the file's own pool (a Spark task's); null: the file's own.</li>
 * <li>{@code expect}: the identity the file must have (recorded when it was
 * planned); another one fails the open with
 * {@link QuiverFileChangedException}. null: any.</li>
 * </ul>
 */
public final class FileOptions {
    private static final FileOptions DEFAULTS = new FileOptions(0, false, false, null, null);

    private final long memoryLimit;
    private final boolean mmap;
    private final boolean skipChecksums;
    private final FileIdentity expect;
    private final io.quiver.memory.NativePool pool;

    private FileOptions(long memoryLimit, boolean mmap, boolean skipChecksums, FileIdentity expect,
            io.quiver.memory.NativePool pool) {
        this.pool = pool;
        this.memoryLimit = memoryLimit;
        this.mmap = mmap;
        this.skipChecksums = skipChecksums;
        this.expect = expect;
    }

    /** The defaults: a pool of the file's own without a limit, reads, checksums on, any identity. */
    public static FileOptions defaults() {
        return DEFAULTS;
    }

    public FileOptions memoryLimit(long bytes) {
        if (bytes < 0) {
            throw new QuiverInvalidArgumentException(22, "memory limit " + bytes + " is negative");
        }
        return new FileOptions(bytes, mmap, skipChecksums, expect, pool);
    }

    public FileOptions mmap(boolean on) {
        return new FileOptions(memoryLimit, on, skipChecksums, expect, pool);
    }

    public FileOptions skipChecksums(boolean on) {
        return new FileOptions(memoryLimit, mmap, on, expect, pool);
    }

    public FileOptions expect(FileIdentity identity) {
        return new FileOptions(memoryLimit, mmap, skipChecksums, identity, pool);
    }

    /**
     * Charges the file, its scans and their batches to {@code p} instead of a
     * pool of the file's own (memoryLimit is then ignored); null: a pool of
     * its own. The file retains the pool natively until its last scan and
     * batch are gone, so {@code p} may be closed before them.
     */
    public FileOptions pool(io.quiver.memory.NativePool p) {
        return new FileOptions(memoryLimit, mmap, skipChecksums, expect, p);
    }

    /** The pool given with {@link #pool(io.quiver.memory.NativePool)}, or null. */
    public io.quiver.memory.NativePool pool() {
        return pool;
    }

    public long memoryLimit() {
        return memoryLimit;
    }

    public boolean mmap() {
        return mmap;
    }

    public boolean skipChecksums() {
        return skipChecksums;
    }

    public FileIdentity expect() {
        return expect;
    }
}
