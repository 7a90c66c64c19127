/* Takes by global row index in any order, duplicates allowed. The scan
 * reads each distinct row once, in file order (its take must be strictly
 * increasing, so that each vector is decoded once); when the rows asked
 * for are not already strictly increasing, the stream reorders: it holds
 * the scan's batches of the distinct rows, then builds output batches in
 * the order asked, copying runs of neighbouring rows at a time. The held
 * batches are the distinct rows' size: a take is meant for few rows. */
#include <stdlib.h>
#include <string.h>

#include "file/file_internal.h"
#include "format/reader_internal.h"
#include "scan/scan_internal.h"

struct qv__reorder {
    int64_t n;          /* rows asked for */
    int64_t *rank;      /* per row asked: its index among the distinct sorted rows */
    int64_t batch_rows; /* of the output */
    int64_t next;       /* next row to hand out */
    int drained;
    struct ArrowArray *held; /* the scan's batches */
    int64_t *starts;         /* first distinct row of each held batch */
    int64_t n_held, cap_held;
    struct qv_reservation *schema_res;
    struct qv_schema *schema;
    /* Gathered (take_gather.c) instead of read through the scan: the
     * distinct rows, sorted, and the columns; `identity` when they are the
     * rows asked for, in order (the gathered batch is the output). */
    int gather, identity, validate;
    int threads; /* qv_scan_options.threads, for the gather's helper */
    struct qv_file *file; /* the stream holds a reference */
    int64_t *uniq, n_uniq;
    int32_t *cols, n_cols;
};

void qv__reorder_destroy(struct qv__reorder *ro) {
    if (!ro) return;
    for (int64_t i = 0; i < ro->n_held; i++)
        if (ro->held[i].release) ro->held[i].release(&ro->held[i]);
    free(ro->held);
    free(ro->starts);
    free(ro->rank);
    free(ro->uniq);
    free(ro->cols);
    qv_schema_destroy(ro->schema);
    qv_reservation_destroy(ro->schema_res);
    free(ro);
}

/* The scan's schema, which the output batches are built to. Errors of the
 * scan stay in its last error (err untouched). */
static int get_schema(struct qv__reorder *ro, struct ArrowArrayStream *scan, struct qv_pool *pool,
                      struct qv_error *err) {
    struct ArrowSchema sc;
    int rc = scan->get_schema(scan, &sc);
    if (rc) return rc;
    struct qv_reservation_options ro_opts = {.name = "take schema"};
    rc = qv_reservation_create(pool, &ro_opts, &ro->schema_res, err);
    if (!rc) rc = qv_schema_import(&sc, ro->schema_res, &ro->schema, err);
    sc.release(&sc);
    return rc;
}

/* Appends a batch to the held ones (moved in; released on failure). */
static int hold(struct qv__reorder *ro, struct ArrowArray *b, int64_t first, struct qv_error *err) {
    if (ro->n_held == ro->cap_held) {
        int64_t cap = ro->cap_held ? ro->cap_held * 2 : 8;
        struct ArrowArray *h = realloc(ro->held, (size_t)cap * sizeof *h);
        if (h) ro->held = h;
        int64_t *s = h ? realloc(ro->starts, (size_t)cap * sizeof *s) : NULL;
        if (s) ro->starts = s;
        if (!h || !s) {
            b->release(b);
            return qv_error_set(err, ENOMEM, "take: out of memory holding batches");
        }
        ro->cap_held = cap;
    }
    ro->starts[ro->n_held] = first;
    ro->held[ro->n_held++] = *b;
    b->release = NULL;
    return 0;
}

/* The distinct rows gathered into one held batch; the schema too, unless
 * that batch is the output as it is. */
static int gather(struct qv__reorder *ro, struct ArrowArrayStream *scan, struct qv_pool *pool,
                  struct qv_error *err) {
    int rc = 0;
    if (!ro->identity || ro->n > ro->batch_rows) rc = get_schema(ro, scan, pool, err);
    struct ArrowArray b;
    if (!rc) rc = qv__take_gather(ro->file, ro->uniq, ro->n_uniq, ro->cols, ro->n_cols,
                                  ro->validate, ro->threads, &b, err);
    if (!rc) rc = hold(ro, &b, 0, err);
    if (!rc) ro->drained = 1;
    return rc;
}

/* Reads every batch of the scan and its schema. Errors of the scan stay in
 * its last error (err untouched). */
static int drain(struct qv__reorder *ro, struct ArrowArrayStream *scan, struct qv_pool *pool,
                 struct qv_error *err) {
    int rc = get_schema(ro, scan, pool, err);
    if (rc) return rc;
    int64_t total = 0;
    for (;;) {
        struct ArrowArray b;
        rc = qv__scan_next(scan, &b);
        if (rc) return rc;
        if (!b.release) break;
        int64_t len = b.length;
        rc = hold(ro, &b, total, err);
        if (rc) return rc;
        total += len;
    }
    ro->drained = 1;
    return 0;
}

/* The held batch holding distinct row `r`. */
static int64_t batch_of(const struct qv__reorder *ro, int64_t r) {
    int64_t lo = 0, hi = ro->n_held - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (ro->starts[mid] <= r) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

int qv__reorder_next(struct qv__reorder *ro, struct ArrowArrayStream *scan, struct qv_pool *pool,
                     struct ArrowArray *out, struct qv_error *err) {
    out->release = NULL;
    if (!ro->drained) {
        int rc = ro->gather ? gather(ro, scan, pool, err) : drain(ro, scan, pool, err);
        if (rc) return rc;
    }
    if (ro->next >= ro->n) return 0;
    if (ro->gather && ro->identity && ro->n <= ro->batch_rows) {
        /* The gathered batch holds the rows asked for, in order. */
        *out = ro->held[0];
        ro->held[0].release = NULL;
        ro->next = ro->n;
        return 0;
    }
    int64_t end = ro->n - ro->next < ro->batch_rows ? ro->n : ro->next + ro->batch_rows;
    /* The output batch owns its reservation: it outlives the stream. */
    struct qv_reservation *res;
    struct qv_reservation_options rop = {.name = "take batch"};
    int rc = qv_reservation_create(pool, &rop, &res, err);
    if (rc) return rc;
    struct qv_builder *b = NULL;
    rc = qv_builder_create(ro->schema, res, NULL, &b, err);
    for (int64_t i = ro->next; !rc && i < end;) {
        int64_t r = ro->rank[i];
        int64_t k = batch_of(ro, r);
        int64_t first = ro->starts[k], len = ro->held[k].length;
        if (r < first || r >= first + len) {
            rc = qv_error_set(err, EIO, "take: row %lld was not read by the scan", (long long)r);
            break;
        }
        int64_t run = 1;
        while (i + run < end && ro->rank[i + run] == r + run && r + run < first + len) run++;
        rc = qv_builder_append_batch(b, &ro->held[k], r - first, run, err);
        i += run;
    }
    if (!rc) rc = qv_builder_finish(b, out, err);
    qv_builder_destroy(b);
    if (rc) {
        qv_reservation_destroy(res);
        return rc;
    }
    ro->next = end;
    return qv__column_adopt(out, res, err);
}

/* Whether the take can be gathered (take_gather.c): the types as stored,
 * whole top-level columns (all of them, or paths of depth 0), each flat.
 * Sets ro->gather and the columns then; ENOMEM only. */
static int gather_columns(struct qv_file *file, const struct qv_scan_options *so,
                          struct qv__reorder *ro, struct qv_error *err) {
    const struct qv_reader *rd = file->rd;
    if (so->cast || (so->columns && so->n_columns == 0)) return 0;
    int32_t n = so->paths ? so->n_paths : so->columns ? so->n_columns : rd->f.n_columns;
    if (n <= 0) return 0;
    for (int32_t j = 0; j < n; j++) {
        int32_t c = so->paths ? so->paths[j].column : so->columns ? so->columns[j] : j;
        if ((so->paths && so->paths[j].depth != 0) || !qv__column_is_flat(rd, c)) return 0;
    }
    /* A column named twice is gathered once, where it first appears, as
     * the scan's projection (whose schema the batches carry) keeps it. */
    ro->cols = malloc((size_t)n * sizeof *ro->cols);
    uint8_t *seen = calloc((size_t)qv_bytes_for_bits(rd->f.n_columns), 1);
    if (!ro->cols || !seen) {
        free(seen);
        return qv_error_set(err, ENOMEM, "take: out of memory");
    }
    int32_t m = 0;
    for (int32_t j = 0; j < n; j++) {
        const int32_t c = so->paths ? so->paths[j].column : so->columns ? so->columns[j] : j;
        if (qv_bit_get(seen, c)) continue;
        qv_bit_set(seen, c);
        ro->cols[m++] = c;
    }
    free(seen);
    ro->n_cols = m;
    ro->gather = 1;
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int qv_file_take(struct qv_file *file, const int64_t *rows, int64_t n,
                 const struct qv_file_scan_options *opts, struct ArrowArrayStream *out,
                 struct qv_error *err) {
    memset(out, 0, sizeof *out);
    const char *fname = qv_reader_path(file->rd);
    struct qv_file_scan_options fo = {0};
    if (opts) fo = *opts;
    struct qv_scan_options *so = &fo.scan;
    int rc = 0;
    if (so->columns || so->paths)
        rc = qv_error_set(err, EINVAL,
                          "file '%.300s': take: choose columns by name or selection, not with "
                          "the scan's columns / paths",
                          fname);
    else if (so->take || so->n_take || so->row_begin || so->row_end || so->row_group_begin ||
        so->row_group_end || so->max_rows)
        rc = qv_error_set(err, EINVAL,
                          "file '%.300s': take: the options' take, row, row group and max_rows "
                          "fields must be unset",
                          fname);
    else if (so->filter || so->filter_expr)
        rc = qv_error_set(err, EINVAL,
                          "file '%.300s': take: a filter is not supported (rows are taken by "
                          "index; filter the result)",
                          fname);
    else if (n < 0 || (n > 0 && !rows))
        rc = qv_error_set(err, EINVAL, "file '%.300s': take: %lld rows", fname, (long long)n);
    else if (so->threads < QV_SCAN_SYNC || so->batch_rows < 0 || so->prefetch < 0)
        rc = qv_error_set(err, EINVAL,
                          "file '%.300s': take: threads %d, batch_rows %lld, prefetch %d: threads "
                          "must be QV_SCAN_SYNC (-1), 0 (the cores) or a count, the others not "
                          "negative",
                          fname, so->threads, (long long)so->batch_rows, (int)so->prefetch);
    int64_t nrows = qv_reader_num_rows(file->rd);
    for (int64_t i = 0; !rc && i < n; i++)
        if (rows[i] < 0 || rows[i] >= nrows)
            rc = qv_error_set(err, EINVAL,
                              "file '%.300s': take: row %lld at position %lld is out of range "
                              "(%lld rows)",
                              fname, (long long)rows[i], (long long)i, (long long)nrows);
    if (rc) {
        qv_expr_destroy(so->filter_expr);
        return rc;
    }
    bool increasing = true;
    for (int64_t i = 1; increasing && i < n; i++) increasing = rows[i] > rows[i - 1];
    static const int64_t none = 0;
    int64_t out_rows = so->batch_rows > 0 ? so->batch_rows : 65536;
    /* Increasing rows that fit one output batch are reordered too (the
     * identity order): the scan hands out a batch per row group touched (a
     * 100-row take of lineitem SF1: ~42 batches of 2-3 rows), and a
     * consumer pays per batch (Python imports each one), while one batch
     * of these rows costs little more to build (gathered, below, or
     * copied). Longer increasing takes stream as the scan hands them out. */
    if (increasing && n > out_rows) {
        fo.scan.take = n ? rows : &none;
        fo.scan.n_take = n;
        return qv_file_scan(file, &fo, out, err);
    }
    /* Distinct rows, sorted, and each asked row's rank among them. */
    int64_t *uniq = malloc((size_t)n * sizeof *uniq);
    struct qv__reorder *ro = calloc(1, sizeof *ro);
    if (ro) ro->rank = malloc((size_t)n * sizeof *ro->rank);
    if (!uniq || !ro || !ro->rank) {
        free(uniq);
        qv__reorder_destroy(ro);
        return qv_error_set(err, ENOMEM, "file '%.300s': take: out of memory", fname);
    }
    memcpy(uniq, rows, (size_t)n * sizeof *uniq);
    qsort(uniq, (size_t)n, sizeof *uniq, cmp_i64);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || uniq[i] != uniq[k - 1]) uniq[k++] = uniq[i];
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = 0, hi = k - 1;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (uniq[mid] < rows[i]) lo = mid + 1;
            else hi = mid;
        }
        ro->rank[i] = lo;
    }
    ro->n = n;
    ro->batch_rows = out_rows;
    fo.scan.take = uniq;
    fo.scan.n_take = k;
    /* The selection as qv_file_scan would make it. */
    struct qv_selection *own = NULL;
    if (fo.columns && fo.selection) {
        rc = qv_error_set(err, EINVAL, "file '%.300s': take: give column names or a selection, not both",
                          fname);
    } else if (fo.columns && fo.n_columns == 0) {
        static const int32_t no_columns = 0;
        fo.scan.columns = &no_columns;
        fo.scan.n_columns = 0;
    } else if (fo.columns) {
        rc = qv_file_select(file, fo.columns, fo.n_columns, &own, err);
        fo.selection = own;
    }
    if (!rc && fo.selection) fo.scan.paths = qv_selection_paths(fo.selection, &fo.scan.n_paths);
    if (rc) {
        free(uniq);
        qv__reorder_destroy(ro);
        qv_selection_destroy(own);
        return rc;
    }
    if (!rc && k > 0 && k <= QV__TAKE_GATHER_ROWS) rc = gather_columns(file, &fo.scan, ro, err);
    if (rc) {
        free(uniq);
        qv__reorder_destroy(ro);
        qv_selection_destroy(own);
        return rc;
    }
    if (ro->gather) {
        /* The rows move to the gather; the scan only makes the schema (an
         * empty take plans nothing). */
        ro->uniq = uniq;
        ro->n_uniq = k;
        ro->identity = increasing;
        ro->validate = so->validate;
        ro->threads = so->threads;
        ro->file = file;
        uniq = NULL;
        fo.scan.take = &none;
        fo.scan.n_take = 0;
    }
    rc = qv__file_stream_open(file, &fo.scan, ro, out, err);
    qv_selection_destroy(own);
    free(uniq);
    return rc;
}
