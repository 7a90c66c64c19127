/* Scans of a file by name. The stream handed out is a scan stream (so
 * qv_scan_cancel, qv_scan_wait and qv_scan_get_stats work on it) with the
 * file layer's hooks on it (scan_internal.h): it holds a reference to the
 * file, its schemas are malloc'd copies, and each batch it hands out holds
 * a reference to the file's pool until it is released. So a consumer may
 * release the stream before its batches, and close the file before the
 * stream, in any order. */
#include <stdlib.h>
#include <string.h>

#include "arrow/arrow_internal.h"
#include "file/file_internal.h"
#include "format/format_internal.h"
#include "scan/scan_internal.h"

struct guard {
    void (*release)(struct ArrowArray *);
    void *private_data;
    struct qv__poolref *pool;
};

static void guarded_release(struct ArrowArray *a) {
    struct guard *g = a->private_data;
    struct qv__poolref *pool = g->pool;
    a->release = g->release;
    a->private_data = g->private_data;
    free(g);
    a->release(a);
    qv__poolref_release(pool);
}

/* A pool reference held until the last node of an owned tree is released
 * (after the tree's own end-of-life callback, which destroys its
 * reservation in that pool). */
struct pool_chain {
    void (*prev)(void *);
    void *prev_arg;
    struct qv__poolref *pool;
};

static void pool_chain_end(void *arg) {
    struct pool_chain *c = arg;
    if (c->prev) c->prev(c->prev_arg);
    qv__poolref_release(c->pool);
    free(c);
}

/* Ties a pool reference to the life of the owned tree `a` belongs to;
 * false when `a` is not an owned tree (or on ENOMEM, in err). */
static bool chain_pool(struct ArrowArray *a, struct qv__poolref *pool, int *rc,
                       struct qv_error *err) {
    struct pool_chain *c = malloc(sizeof *c);
    if (!c) {
        *rc = qv_error_set(err, ENOMEM, "scan: out of memory guarding a batch");
        return false;
    }
    c->pool = pool;
    if (!qv__owned_tree_on_free(a, pool_chain_end, c, &c->prev, &c->prev_arg) &&
        !qv__stats_array_on_free(a, pool_chain_end, c, &c->prev, &c->prev_arg)) {
        free(c);
        return false;
    }
    qv__poolref_retain(pool);
    return true;
}

int qv__batch_guard(struct ArrowArray *b, struct qv__poolref *pool, struct qv_error *err) {
    /* The pool must outlive every part of the batch, also children a
     * consumer moved out and releases after the batch: an owned tree (or a
     * statistics export) holds a pool reference until its last node goes
     * (a take's batch and the statistics are one tree each; a scan's batch
     * holds one tree per column). */
    int rc = 0;
    if (chain_pool(b, pool, &rc, err)) return 0;
    for (int64_t i = 0; !rc && i < b->n_children; i++) chain_pool(b->children[i], pool, &rc, err);
    if (rc) {
        b->release(b);
        return rc;
    }
    struct guard *g = malloc(sizeof *g);
    if (!g) {
        b->release(b);
        return qv_error_set(err, ENOMEM, "scan: out of memory guarding a batch");
    }
    g->release = b->release;
    g->private_data = b->private_data;
    g->pool = qv__poolref_retain(pool);
    b->release = guarded_release;
    b->private_data = g;
    return 0;
}

struct qv__file_stream {
    struct qv_file *file;
    struct qv_reservation *res; /* the scan's control memory */
    struct qv__reorder *reorder;
};

static int fs_next(void *ctx, struct ArrowArrayStream *scan, struct ArrowArray *out,
                   struct qv_error *err) {
    struct qv__file_stream *fs = ctx;
    return qv__reorder_next(fs->reorder, scan, fs->file->pool->pool, out, err);
}

static int fs_batch(void *ctx, struct ArrowArray *b, struct qv_error *err) {
    struct qv__file_stream *fs = ctx;
    return qv__batch_guard(b, fs->file->pool, err);
}

static int fs_schema(void *ctx, struct ArrowSchema *in, struct ArrowSchema *out,
                     struct qv_error *err) {
    (void)ctx;
    int rc = qv__schema_copy_malloc(out, in);
    in->release(in);
    return rc ? qv_error_set(err, rc, "scan: out of memory copying the schema") : 0;
}

/* A scan's own refusals ("scan: take: row ...", a bad filter, a budget
 * too small) do not know the file; what fails inside a column reader
 * already names it. Every refusal of the file layer's scans names it. */
static int name_file(struct qv_error *err, int rc, const char *fname) {
    if (rc && err && strncmp(err->message, "file '", 6) != 0)
        qv_error_wrap(err, rc, "file '%.300s': ", fname);
    return rc;
}

static void fs_free(struct qv__file_stream *fs) {
    qv__reorder_destroy(fs->reorder);
    qv_reservation_destroy(fs->res);
    qv_file_close(fs->file);
    free(fs);
}

static void fs_released(void *ctx) { fs_free(ctx); }

static int fs_reader_get(void *ctx, int64_t rg, int32_t column, struct qv_column_reader **out,
                         int *fresh, struct qv_error *err) {
    struct qv__file_stream *fs = ctx;
    return qv__take_cache_get(fs->file->tc, rg, column, out, fresh, err);
}

static void fs_reader_put(void *ctx, int64_t rg, int32_t column, struct qv_column_reader *cr,
                          int keep) {
    struct qv__file_stream *fs = ctx;
    qv__take_cache_put(fs->file->tc, rg, column, cr, keep);
}

int qv__file_stream_open(struct qv_file *file, const struct qv_scan_options *so,
                         struct qv__reorder *reorder, struct ArrowArrayStream *out,
                         struct qv_error *err) {
    memset(out, 0, sizeof *out);
    struct qv__file_stream *fs = calloc(1, sizeof *fs);
    if (!fs) {
        qv__reorder_destroy(reorder);
        qv_expr_destroy(so->filter_expr);
        return qv_error_set(err, ENOMEM, "file '%.300s': scan: out of memory", qv_reader_path(file->rd));
    }
    fs->file = qv_file_retain(file);
    fs->reorder = reorder;
    struct qv_reservation_options ro = {.name = "file scan"};
    int rc = qv_reservation_create(file->pool->pool, &ro, &fs->res, err);
    if (rc) {
        qv_expr_destroy(so->filter_expr);
        fs_free(fs);
        return name_file(err, rc, qv_reader_path(file->rd));
    }
    struct qv__scan_hooks hooks = {.ctx = fs,
                                   .next = reorder ? fs_next : NULL,
                                   .batch = fs_batch,
                                   .schema = fs_schema,
                                   .released = fs_released};
    /* Takes borrow their column readers from the file's cache: a repeated
     * take re-reads and re-parses nothing. Scans of ranges read each chunk
     * once and keep their own. */
    if (so->take && file->tc) {
        hooks.reader_get = fs_reader_get;
        hooks.reader_put = fs_reader_put;
    }
    rc = qv__scan_open_hooked(file->rd, so, fs->res, &hooks, out, err);
    if (rc) fs_free(fs);
    return name_file(err, rc, qv_reader_path(file->rd));
}

int qv_file_scan(struct qv_file *file, const struct qv_file_scan_options *opts,
                 struct ArrowArrayStream *out, struct qv_error *err) {
    memset(out, 0, sizeof *out);
    struct qv_scan_options so = {0};
    if (opts) so = opts->scan;
    const char *fname = qv_reader_path(file->rd);
    int rc = 0;
    if (so.columns || so.paths)
        rc = qv_error_set(err, EINVAL,
                          "file '%.300s': scan: choose columns by name or selection, not with "
                          "the scan's columns / paths",
                          fname);
    else if (opts && opts->columns && opts->selection)
        rc = qv_error_set(err, EINVAL, "file '%.300s': scan: give column names or a selection, not both",
                          fname);
    if (rc) {
        qv_expr_destroy(so.filter_expr);
        return rc;
    }
    struct qv_selection *own = NULL;
    const struct qv_selection *sel = opts ? opts->selection : NULL;
    static const int32_t none = 0;
    if (opts && opts->columns && opts->n_columns == 0) {
        so.columns = &none; /* no columns at all: rows are counted, nothing decoded */
        so.n_columns = 0;
    } else if (opts && opts->columns) {
        rc = qv_file_select(file, opts->columns, opts->n_columns, &own, err);
        if (rc) {
            qv_expr_destroy(so.filter_expr);
            return rc;
        }
        sel = own;
    }
    if (sel) so.paths = qv_selection_paths(sel, &so.n_paths);
    rc = qv__file_stream_open(file, &so, NULL, out, err);
    qv_selection_destroy(own);
    return rc;
}
