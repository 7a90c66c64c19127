package io.quiver;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.apache.arrow.c.CDataDictionaryProvider;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * An open .qvr file (struct qv_file, core/include/quiver/file.h): its Arrow
 * schema, row counts, identity, statistics and splits.
 *
 * <pre>{@code
 * try (QuiverFile f = QuiverFile.open(Path.of("lineitem.qvr"))) {
 *     Schema schema = f.schema();
 *     long rows = f.numRows();
 *     List<Split> splits = f.planSplits(64 << 20);
 * }
 * }</pre>
 *
 * <p>Errors are {@link QuiverException} subclasses with Quiver's message
 * (a missing file is {@link QuiverNotFoundException} naming the path, a
 * damaged one {@link QuiverCorruptException}, ...).
 *
 * <p>Threads: a file may be used from several threads at once. {@link #close()}
 * is idempotent; a close racing a call waits for nothing and frees the
 * native file when the last call in flight returns; a call after close
 * throws {@link IllegalStateException} naming the file. A file that becomes
 * unreachable without close is closed by a {@link java.lang.ref.Cleaner}
 * (a backstop: close files explicitly, memory is not the JVM's to see).
 */
public final class QuiverFile implements AutoCloseable {
    private final String path;
    private final NativeHandle handle;

    private QuiverFile(String path, long address) {
        this.path = path;
        this.handle = new NativeHandle(this, address, QuiverFile::nativeClose, "Quiver file '" + path + "'");
    }

    /** Opens {@code path} with the default options. */
    public static QuiverFile open(Path path) {
        return open(path == null ? null : path.toString(), FileOptions.defaults());
    }

    public static QuiverFile open(Path path, FileOptions options) {
        return open(path == null ? null : path.toString(), options);
    }

    public static QuiverFile open(String path) {
        return open(path, FileOptions.defaults());
    }

    /**
     * Opens the .qvr file at {@code path} (handed to the system as UTF-8
     * bytes). Throws {@link QuiverNotFoundException} when there is no such
     * file, {@link QuiverCorruptException} when it is not a readable Quiver
     * file, {@link QuiverFileChangedException} when options expect another
     * identity.
     */
    public static QuiverFile open(String path, FileOptions options) {
        if (path == null) {
            throw new QuiverInvalidArgumentException(22, "open: no path given (null)");
        }
        FileOptions o = options == null ? FileOptions.defaults() : options;
        NativeLibrary.load();
        FileIdentity expect = o.expect();
        byte[] bytes = Utf8.encode(path, "open: path");
        java.util.function.LongUnaryOperator open = pool -> nativeOpen(bytes, o.memoryLimit(), o.mmap(),
                o.skipChecksums(), expect != null, expect == null ? 0 : expect.size(),
                expect == null ? 0 : expect.footerChecksum(), pool);
        // A caller's pool stays valid during the open (a close meanwhile
        // takes effect after it); the file then holds the pool natively.
        long address = o.pool() == null ? open.applyAsLong(0) : o.pool().withAddress(open);
        return new QuiverFile(path, address);
    }

    /** The path the file was opened with. */
    public String path() {
        return path;
    }

    /** The file's schema (its columns as Arrow fields). */
    public Schema schema() {
        long h = handle.acquire();
        try (CData c = CData.create()) {
            nativeExportSchema(h, c.address());
            // Quiver's file schemas have no dictionary-encoded fields, so the
            // importer needs neither an allocator nor a dictionary provider.
            return Data.importSchema(null, c.schema(), null, false);
        } finally {
            handle.release();
        }
    }

    /** The number of rows. */
    public long numRows() {
        long h = handle.acquire();
        try {
            return nativeNumRows(h);
        } finally {
            handle.release();
        }
    }

    /** The number of row groups. */
    public long numRowGroups() {
        long h = handle.acquire();
        try {
            return nativeNumRowGroups(h);
        } finally {
            handle.release();
        }
    }

    /** The file's identity (size and footer checksum), to record with a plan. */
    public FileIdentity identity() {
        long h = handle.acquire();
        try {
            long[] v = nativeIdentity(h);
            return new FileIdentity(v[0], v[1]);
        } finally {
            handle.release();
        }
    }

    /** The statistics of the whole file, imported into {@code allocator}. */
    public FileStatistics statistics(BufferAllocator allocator) {
        return statistics(allocator, -1);
    }

    /**
     * The statistics of row group {@code rowGroup} (-1: the whole file),
     * imported into {@code allocator}; close the result. A row group out of
     * range is {@link QuiverInvalidArgumentException}.
     */
    public FileStatistics statistics(BufferAllocator allocator, long rowGroup) {
        if (allocator == null) {
            throw new QuiverInvalidArgumentException(22, "statistics of " + handle.what() + ": no allocator given");
        }
        long h = handle.acquire();
        try (CData c = CData.create()) {
            nativeStatistics(h, rowGroup, c.address());
            CDataDictionaryProvider dictionaries = new CDataDictionaryProvider();
            VectorSchemaRoot root = null;
            try {
                // In steps rather than Data.importVectorSchemaRoot, which
                // leaves the root it created unclosed when the array's import
                // throws. The schema's import releases the schema struct; the
                // array's moves the array struct; CData releases what is left.
                Schema schema = Data.importSchema(allocator, c.schema(), dictionaries, false);
                root = VectorSchemaRoot.create(schema, allocator);
                Data.importIntoVectorSchemaRoot(allocator, c.array(), root, dictionaries, false);
                return new FileStatistics(root, dictionaries);
            } catch (RuntimeException | Error e) {
                if (root != null) {
                    root.close();
                }
                dictionaries.close();
                throw e;
            }
        } finally {
            handle.release();
        }
    }

    /**
     * Byte-balanced splits of about {@code targetBytes} each (0: 128 MiB),
     * each a range of whole row groups; none for a file without rows. Each
     * carries this file's path and identity.
     */
    public List<Split> planSplits(long targetBytes) {
        return planSplits(targetBytes, null);
    }

    /**
     * As {@link #planSplits(long)}, weighing only the columns a scan of
     * {@code columns} reads (names as in {@link ScanOptions.Builder#columns(List)};
     * a nested name weighs only that field's chunks): a row group weighs the
     * encoded bytes of those column chunks, and {@link Split#bytes()} is
     * that projected size, the bytes a scan of the split with those columns
     * reads. Null weighs every column; an empty list (no column, rows only)
     * weighs each row group by its rows (one byte per row) with bytes 0. An
     * unknown name is a {@link QuiverNotFoundException}.
     */
    public List<Split> planSplits(long targetBytes, List<String> columns) {
        if (targetBytes < 0) {
            throw new QuiverInvalidArgumentException(22, "splits of " + handle.what() + ": target size "
                    + targetBytes + " is negative");
        }
        long h = handle.acquire();
        try {
            long[] v = nativePlanSplits(h, targetBytes, names(columns));
            long[] id = nativeIdentity(h);
            FileIdentity identity = new FileIdentity(id[0], id[1]);
            List<Split> out = new ArrayList<>(v.length / 5);
            for (int i = 0; i < v.length; i += 5) {
                out.add(new Split(path, identity, v[i], v[i + 1], v[i + 2], v[i + 3], v[i + 4]));
            }
            return Collections.unmodifiableList(out);
        } finally {
            handle.release();
        }
    }

    /**
     * Opens a scan of this file: the columns, rows and filter of
     * {@code options}, as an {@link org.apache.arrow.vector.ipc.ArrowReader}
     * whose batches are imported into {@code allocator} (see
     * {@link QuiverScanReader} for which allocator to pass). The scan stays
     * valid after this file is closed. An unknown column is
     * {@link QuiverNotFoundException}; a bad filter
     * {@link QuiverInvalidArgumentException}.
     */
    public QuiverScanReader scan(BufferAllocator allocator, ScanOptions options) {
        long h = handle.acquire();
        try {
            return QuiverScanReader.openScan(h, allocator, options == null ? ScanOptions.defaults() : options);
        } finally {
            handle.release();
        }
    }

    /**
     * Reads rows by global index, in the order given (duplicates allowed).
     * A negative or out-of-range index is {@link QuiverInvalidArgumentException}
     * naming it and its position. Unless the rows are increasing, the
     * distinct rows asked for are held until the first batch is handed out:
     * a take is meant for few rows.
     */
    public QuiverScanReader take(BufferAllocator allocator, long[] rows, TakeOptions options) {
        long h = handle.acquire();
        try {
            return QuiverScanReader.openTake(h, allocator, rows, options == null ? TakeOptions.defaults() : options);
        } finally {
            handle.release();
        }
    }

    /** {@link #take(BufferAllocator, long[], TakeOptions)} of some columns (null: every column). */
    public QuiverScanReader take(BufferAllocator allocator, long[] rows, List<String> columns) {
        return take(allocator, rows,
                columns == null ? TakeOptions.defaults() : TakeOptions.builder().columns(columns).build());
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return handle.isClosed();
    }

    /**
     * The native handle kept open for a call: for the other classes of the
     * Java API (scans, takes) that call into the same native file. Pair
     * every {@code acquire()} with a {@code release()}.
     */
    NativeHandle handle() {
        return handle;
    }

    /** Closes the file; idempotent. Streams opened from it stay valid. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "QuiverFile(" + path + (isClosed() ? ", closed)" : ")");
    }

    /** Native files open in this JVM (opened and not yet closed or cleaned). */
    static long liveHandles() {
        NativeLibrary.load();
        return nativeLiveFiles();
    }

    private static native long nativeOpen(byte[] path, long memoryLimit, boolean mmap, boolean skipChecksums,
            boolean hasExpect, long expectSize, long expectChecksum, long pool);

    private static native void nativeClose(long handle);

    private static native long nativeLiveFiles();

    private static native long nativeNumRows(long handle);

    private static native long nativeNumRowGroups(long handle);

    private static native long[] nativeIdentity(long handle);

    private static native void nativeExportSchema(long handle, long cdata);

    private static native void nativeStatistics(long handle, long rowGroup, long cdata);

    private static native long[] nativePlanSplits(long handle, long targetBytes, byte[][] columns);

    private static byte[][] names(List<String> columns) {
        if (columns == null) return null;
        byte[][] out = new byte[columns.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = Utf8.encode(Objects.requireNonNull(columns.get(i), "a column name is null"), "column name");
        }
        return out;
    }
}
