/* Private pieces of the file layer: the file handle and the shared pool
 * reference that batches hold. These objects are allocated with malloc,
 * not from a pool: they are what keeps a pool alive, so they must outlive
 * it, and they are a few hundred bytes per file or stream. */
#ifndef QV_FILE_INTERNAL_H
#define QV_FILE_INTERNAL_H

#include "quiver/file.h"

/* A pool and a count of its users: the file, each of its streams and each
 * batch they handed out. The last one drops the layer's pool reference:
 * the file's own pool is destroyed then; a caller's pool was retained at
 * open (qv_pool_retain), so it is destroyed only if its caller has dropped
 * it already. */
struct qv__poolref {
    struct qv_pool *pool;
    long refs; /* atomic */
};
struct qv__poolref *qv__poolref_retain(struct qv__poolref *p);
void qv__poolref_release(struct qv__poolref *p);

struct qv_file {
    long refs; /* atomic */
    struct qv__poolref *pool;
    struct qv_reservation *res; /* the reader's */
    struct qv_reader *rd;
    struct qv_file_identity id;
    struct qv__take_cache *tc; /* column readers kept for takes; NULL = none */
};

/* The file's cache of column readers for takes (take_cache.c). */
#define QV__TAKE_CACHE_DEFAULT ((uint64_t)256 << 20)
struct qv__take_cache;
int qv__take_cache_create(const struct qv_reader *rd, struct qv_pool *pool, uint64_t bound,
                          struct qv__take_cache **out, struct qv_error *err);
/* Closes every reader (none may be borrowed any more). */
void qv__take_cache_destroy(struct qv__take_cache *c);
/* Borrows a reader of the whole column `column` in row group `rg`: one the
 * cache holds, or a fresh one (*fresh = 1). */
int qv__take_cache_get(struct qv__take_cache *c, int64_t rg, int32_t column,
                       struct qv_column_reader **out, int *fresh, struct qv_error *err);
/* Gives a borrowed reader of (rg, column) back: kept (keep = 1; the least recently used
 * are closed while the cache holds more than its bound) or closed (keep = 0,
 * after a failure left its state unknown; every free reader is closed then
 * too, in case the failure was a pool full of them). */
void qv__take_cache_put(struct qv__take_cache *c, int64_t rg, int32_t column,
                        struct qv_column_reader *cr, int keep);
/* Closes every reader no take borrows. */
void qv__take_cache_trim(struct qv__take_cache *c);
/* The reader's lend hook (qv_reader.lend, ctx the cache): copies bytes of a
 * segment a free reader of the cache holds. */
int qv__take_cache_lend(void *ctx, int64_t rg, int32_t node, int role, uint64_t off, uint64_t len,
                        uint8_t *dst);
/* What the cache holds: readers (borrowed or not) and bytes counted. */
void qv__take_cache_counts(struct qv__take_cache *c, size_t *readers, uint64_t *held);

/* A self-contained copy of `src` in malloc'd memory (dst released on
 * failure, ENOMEM). `src` stays the caller's. */
int qv__schema_copy_malloc(struct ArrowSchema *dst, const struct ArrowSchema *src);

/* Makes `batch` hold a reference to `pool` until it is released (ENOMEM
 * releases the batch). */
int qv__batch_guard(struct ArrowArray *batch, struct qv__poolref *pool, struct qv_error *err);

/* What every stream of the file layer hangs on its scan: a reference to
 * the file (and so its pool), the scan's own reservation, and for a take
 * in any order the reordering state. */
struct qv__file_stream;
struct qv__reorder;
/* Opens a scan of `file` with `so` (already resolved paths), whose stream
 * holds a file reference, hands out guarded batches and malloc'd schemas.
 * With `reorder` (moved in, also on failure), get_next hands out the rows in
 * the reorder's order. so->filter_expr moves in, also on failure. */
int qv__file_stream_open(struct qv_file *file, const struct qv_scan_options *so,
                         struct qv__reorder *reorder, struct ArrowArrayStream *out,
                         struct qv_error *err);

/* A take gathered straight into one batch (take_gather.c): rows[0..n)
 * strictly increasing, of the top-level columns cols[0..n_cols) (each flat:
 * qv__column_is_flat), validated per `validate` (enum qv_scan_validate).
 * Column readers come from the file's take cache (or are opened and closed
 * when it has none). *out is a batch as the scan assembles them. */
/* Takes of at most this many distinct rows are gathered: the bound under
 * which the scan too runs a take on the caller's thread (QV_SCAN_SMALL_ROWS);
 * larger takes keep the scan's workers. */
#define QV__TAKE_GATHER_ROWS 4096
/* With `threads` (qv_scan_options.threads: QV_SCAN_SYNC, 0 = cores, or a
 * count) allowing two or more, a gather of at least this many values (rows
 * x columns) starts one helper thread, and the caller and the helper take
 * the columns between them: a cold 100-row take decompresses a frame or
 * more per row and column (flights: ~1,300 frames, ~6 ms), while starting
 * and joining a thread costs some 15-30 us. Smaller gathers, or one
 * column, run on the caller alone. */
#define QV__TAKE_GATHER_HELP 1024
/* Helper threads gathers have started, process-wide (for tests). */
extern int64_t qv__take_gather_helpers;
int qv__take_gather(struct qv_file *file, const int64_t *rows, int64_t n, const int32_t *cols,
                    int32_t n_cols, int validate, int threads, struct ArrowArray *out,
                    struct qv_error *err);

/* Reordering of a take (take.c): the rows asked for, by position in the
 * sorted distinct rows the scan reads. */
int qv__reorder_next(struct qv__reorder *ro, struct ArrowArrayStream *scan, struct qv_pool *pool,
                     struct ArrowArray *out, struct qv_error *err);
void qv__reorder_destroy(struct qv__reorder *ro);

#endif
