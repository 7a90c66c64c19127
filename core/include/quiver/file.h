/*
 * Quiver file: the layer every front end stands on (the CLI, the Python
 * extension, the JNI shim). What two front ends would otherwise each write
 * lives here: opening by path or source with a memory budget, file identity,
 * columns and nested fields chosen by name with one rule, scans / takes /
 * splits / writes by name, statistics as Arrow data, errors with a stable
 * kind (base.h).
 *
 * Lifetimes. A qv_file is reference counted: qv_file_close drops the
 * caller's reference, and every stream opened from the file holds one of its
 * own, so a stream may outlive the handle that made it. Every batch handed
 * out by such a stream keeps the file's pool alive until the batch is
 * released, so consumers (pyarrow, Arrow Java, DuckDB) may hold batches as
 * long as they like. That holds for a caller's pool (qv_file_options.pool)
 * too: the file retains it (qv_pool_retain), so the caller may drop its own
 * reference with qv_pool_destroy while batches live; the pool goes with
 * the last of them. Schemas handed out are self-contained (malloc'd).
 *
 * Threads. A qv_file may be used from several threads at once (opening
 * scans, reading its metadata). A stream is read by one thread at a time;
 * qv_scan_cancel (scan.h) works on the streams of this layer too.
 */
#ifndef QUIVER_FILE_H
#define QUIVER_FILE_H

#include "quiver/scan.h"

#ifdef __cplusplus
extern "C" {
#endif

struct qv_file;

/* What identifies the contents of a file: its size and the checksum of its
 * footer. Two files with equal identities hold the same row groups at the
 * same offsets. A planner records it; a reader that opens the file later
 * (another process, another machine) passes it back in
 * qv_file_options.expect and fails with ESTALE (QV_ERROR_CHANGED) when the
 * file was replaced in between, instead of returning rows of another file. */
struct qv_file_identity {
    uint64_t size;
    uint64_t footer_checksum;
};

struct qv_file_options {
    struct qv_pool *pool;      /* the budget to charge, retained until the file's
                                  last stream and batch are gone; NULL = a pool
                                  of the file's own */
    uint64_t memory_limit;     /* limit of the file's own pool; 0 = unlimited */
    bool mmap;                 /* map the file instead of positional reads (format.h) */
    bool skip_checksums;       /* do not verify segment checksums (the footer's always is);
                                  for speed on trusted storage only */
    const struct qv_file_identity *expect; /* fail with ESTALE unless equal; NULL = any */
    int64_t take_cache_bytes;  /* column readers kept open for repeated takes (qv_file_take),
                                  bounded by what the pool is charged for them; 0 = 256 MiB,
                                  negative = none. Released at close */
};

/* Opens the .qvr file at `path` (NUL-terminated bytes, not necessarily
 * UTF-8). On success *out holds one reference. */
QV_API int qv_file_open(const char *path, const struct qv_file_options *opts,
                        struct qv_file **out, struct qv_error *err);
/* As qv_file_open over a byte source; `src` moves into the file, also on
 * failure. */
QV_API int qv_file_open_source(struct qv_source *src, const struct qv_file_options *opts,
                               struct qv_file **out, struct qv_error *err);
/* Drops a reference (NULL-safe); the last one closes the file. */
QV_API void qv_file_close(struct qv_file *file);
/* Takes another reference; returns `file`. */
QV_API struct qv_file *qv_file_retain(struct qv_file *file);

QV_API const struct qv_reader *qv_file_reader(const struct qv_file *file);
QV_API struct qv_pool *qv_file_pool(const struct qv_file *file);
QV_API void qv_file_identity(const struct qv_file *file, struct qv_file_identity *out);
/* The file's schema as Arrow (self-contained; the caller releases it). */
QV_API int qv_file_export_schema(const struct qv_file *file, struct ArrowSchema *out,
                                 struct qv_error *err);

/* ---- Choosing columns by name ----
 *
 * One rule, the same as the column references of the predicate language
 * (scan.h), stated in arrow.h ("Field paths") and implemented there
 * (qv_field_resolve_path): a name is a path of field names separated by
 * dots; a name that contains a dot or a double quote, or starts or ends
 * with a space, is written in double quotes, with "" for a quote inside
 * (`"a.b".c`). An unquoted name without an exact match may match one field
 * ignoring ASCII case. A path steps through struct fields by name, through
 * a list-like type by its element field's name, through a map by its
 * entries' key / value field names (`m.value`). A path that could mean two
 * fields is an error (EINVAL), never a guess; an unknown name is ENOENT
 * naming the path and the closest existing field. docs/file.md. */
struct qv_selection;

/* Resolves `names` against the file's schema. *out owns the result (release
 * with qv_selection_destroy; it does not depend on the file). n == 0
 * selects every column. On failure *out is NULL. */
QV_API int qv_file_select(const struct qv_file *file, const char *const *names, int32_t n,
                          struct qv_selection **out, struct qv_error *err);
QV_API void qv_selection_destroy(struct qv_selection *sel);
/* The resolved paths, to pass as qv_scan_options.paths. */
QV_API const struct qv_column_path *qv_selection_paths(const struct qv_selection *sel,
                                                       int32_t *n);

/* ---- Scans, takes, splits ---- */

/* Options of qv_file_scan: qv_scan_options plus names. `columns` (names)
 * and `selection` are alternatives; when both are NULL every column is
 * read (`columns` non-NULL with n_columns 0: no column, rows counted). The
 * scan's own fields `columns`, `paths` must be left unset (EINVAL). As in
 * qv_scan_open, scan.filter_expr moves into the call, also on failure. */
struct qv_file_scan_options {
    const char *const *columns;             /* names as above, or NULL */
    int32_t n_columns;
    const struct qv_selection *selection;   /* or a selection made earlier */
    struct qv_scan_options scan;            /* filter, row ranges, take, batch size, ... */
};

/* Opens a scan of `file` into `out` (an ArrowArrayStream that holds a
 * reference to the file; batches keep the pool alive; get_schema gives
 * malloc'd copies). It is a scan stream: qv_scan_cancel, qv_scan_wait and
 * qv_scan_get_stats work on it. On failure out->release is NULL. */
QV_API int qv_file_scan(struct qv_file *file, const struct qv_file_scan_options *opts,
                        struct ArrowArrayStream *out, struct qv_error *err);

/* Takes rows by global index, in the order given; duplicates allowed.
 * Negative or out-of-range indices are EINVAL naming the index and its
 * position. Output is one or more batches (of at most scan.batch_rows rows)
 * whose concatenation is the rows in the order asked; a take of at most
 * scan.batch_rows rows is one batch, whatever row groups it touches. `opts` may be NULL;
 * its take, row, row group and max_rows fields must be unset, and a filter
 * is refused (EINVAL): rows are taken by index. Unless the rows are
 * strictly increasing the stream holds the distinct rows read before it
 * hands out the first batch (docs/file.md). */
QV_API int qv_file_take(struct qv_file *file, const int64_t *rows, int64_t n,
                        const struct qv_file_scan_options *opts, struct ArrowArrayStream *out,
                        struct qv_error *err);

/* A split: a range of row groups and the bytes it covers. */
struct qv_file_split {
    int64_t row_group_begin, row_group_end;
    int64_t row_begin, row_end; /* the global rows it holds */
    uint64_t bytes;
};
/* Plans byte-balanced splits of about `target_bytes` each (0 = 128 MiB).
 * *out is malloc'd (free()), *n its length (0 for a file without rows). */
QV_API int qv_file_plan_splits(const struct qv_file *file, uint64_t target_bytes,
                               struct qv_file_split **out, int64_t *n, struct qv_error *err);
/* Splits weighed by the projected columns only: a row group weighs the
 * encoded bytes of exactly the column chunks a scan of `columns` (names as
 * in qv_file_scan, resolved by qv_file_select's rule) loads: a whole
 * column, or for a nested name (`s.a`) the chunks of that field, its
 * enclosing structs and its subtree (both sides of a map), and `bytes` of a
 * split is that projected weight (what qv_scan_stats.bytes_read counts when
 * the split is scanned unfiltered). `columns` NULL is qv_file_plan_splits
 * (every column, the row groups' whole lengths). `columns` non-NULL with
 * n_columns 0 projects no column: `bytes` is 0 and row groups are weighed
 * by their rows instead (one byte per row), so `target_bytes` rows make a
 * split. Name errors are those of qv_file_select (ENOENT, EINVAL). */
QV_API int qv_file_plan_splits_columns(const struct qv_file *file, const char *const *columns,
                                       int32_t n_columns, uint64_t target_bytes,
                                       struct qv_file_split **out, int64_t *n,
                                       struct qv_error *err);

/* ---- Writes ---- */

struct qv_file_write_options {
    struct qv_pool *pool;           /* NULL = a pool of its own */
    uint64_t memory_limit;          /* of that pool; 0 = unlimited */
    int64_t row_group_rows;         /* 0 = the writer's default */
    uint64_t row_group_bytes;       /* flush a row group at this many bytes; 0 = default */
    int compact;                    /* smallest files, slower writes of text (qv_writer_options) */
    int random_access;              /* no frame encodings: cheaper takes (qv_writer_options) */
    const struct qv_kv *metadata;   /* key-value metadata, copied */
    int64_t n_metadata;
    int (*interrupted)(void *arg);  /* polled between batches; nonzero stops with ECANCELED */
    void *interrupted_arg;
    /* Encoding threads (qv_writer_options.threads): 0 = the cores, at most 4;
     * QV_WRITER_INLINE (-1) = encode on the calling thread, no thread at all.
     * The file is the same bytes whatever the number. */
    int threads;
    /* QV_DURABLE (0) or QV_NOT_DURABLE (format.h); other values EINVAL. */
    int durability;
};
/* Writes every batch of `stream` to a new file at `path` and publishes it;
 * on any failure nothing is left under `path` and an existing file there is
 * untouched. The stream stays the caller's (it is not released). *rows_out
 * and *bytes_out (each may be NULL) get the rows and the file's bytes. */
QV_API int qv_file_write_stream(const char *path, struct ArrowArrayStream *stream,
                                const struct qv_file_write_options *opts, int64_t *rows_out,
                                uint64_t *bytes_out, struct qv_error *err);

/* ---- Statistics as Arrow data ----
 *
 * The file's statistics in the Arrow format's statistics schema: see
 * qv_reader_export_statistics (format.h) and docs/statistics.md for the
 * layout, the keys and what is exact or approximate. row_group -1
 * describes the whole file; 0..n-1 one row group. The outputs are
 * self-contained and may outlive the file. */
QV_API int qv_file_statistics(const struct qv_file *file, int64_t row_group,
                              struct ArrowSchema *schema_out, struct ArrowArray *array_out,
                              struct qv_error *err);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_FILE_H */
