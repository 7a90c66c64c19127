/* A small take gathered straight into its output batch. A take through
 * the scan builds a batch per row group it touches, each with an array per
 * column (a reservation, an array tree, an assembly, a guard): a 100-row
 * take of lineitem SF1 touches ~42 of its 46 row groups, so ~670 small
 * arrays for 1,600 values, and then copies them into the batch the caller
 * sees. Here each column's output array is allocated once for all the
 * rows, and each row group's reader (borrowed from the file's take cache)
 * decodes its rows straight into their slots (qv__column_reader_take_flat).
 * Only flat columns (no children) qualify; the caller checks. */
#include <stdlib.h>
#include <string.h>

#include "base/corrupt.h"
#include "base/thread.h"
#include "file/file_internal.h"
#include "format/reader_internal.h"
#include "scan/scan_internal.h"

/* A reader of (rg, column): the cache's, or (no cache) one of its own. */
struct borrowed {
    struct qv_column_reader *cr;
    struct qv_reservation *own; /* set when not from the cache */
};

static int borrow(struct qv_file *file, int64_t rg, int32_t column, struct borrowed *b,
                  struct qv_error *err) {
    b->cr = NULL;
    b->own = NULL;
    if (file->tc) {
        int fresh = 0;
        return qv__take_cache_get(file->tc, rg, column, &b->cr, &fresh, err);
    }
    struct qv_reservation_options ro = {.name = "take reader"};
    int rc = qv_reservation_create(file->pool->pool, &ro, &b->own, err);
    if (!rc) rc = qv_column_reader_open(file->rd, rg, column, b->own, &b->cr, err);
    if (rc) {
        qv_reservation_destroy(b->own);
        b->own = NULL;
    }
    return rc;
}

/* keep = 0 after a failure: the reader's state is unknown. */
static void give_back(struct qv_file *file, int64_t rg, int32_t column, struct borrowed *b,
                      int keep) {
    if (b->own) {
        qv_column_reader_close(b->cr);
        qv_reservation_destroy(b->own);
    } else if (b->cr) {
        qv__take_cache_put(file->tc, rg, column, b->cr, keep);
    }
    b->cr = NULL;
    b->own = NULL;
}

/* One column's output array for n rows with its buffers allocated. */
static int column_start(const struct qv_reader *rd, int32_t column, int64_t n,
                        struct qv_pool *pool, struct qv_reservation **res, struct ArrowArray *a,
                        struct qv__flat_out *o, struct qv_error *err) {
    int32_t k = qv_reader_column_node(rd, column);
    const struct qv__node *nd = &rd->f.nodes[k];
    struct qv_reservation_options ro = {.name = "take column"};
    int rc = qv_reservation_create(pool, &ro, res, err);
    if (rc) return rc;
    rc = qv_owned_array_create(a, nd->field, *res, err);
    if (rc) return rc;
    memset(o, 0, sizeof *o);
    o->data_r = *res;
    size_t bits = (size_t)qv_bytes_for_bits(n);
    /* Every column gets a bitmap: whether a row group has a validity
     * segment is known only once its reader is open. */
    o->validity = qv_owned_array_alloc_buffer(a, 0, bits ? bits : 1, err);
    if (!o->validity) return err ? err->code : ENOMEM;
    memset(o->validity, 0, bits ? bits : 1);
    enum qv_value_kind kind = nd->value_kind;
    size_t size;
    if (kind == QV_KIND_BINARY || kind == QV_KIND_LARGE_BINARY)
        size = (size_t)(n + 1) * (kind == QV_KIND_BINARY ? 4 : 8);
    else if (kind == QV_KIND_BOOL)
        size = bits;
    else if (nd->kind == QV__NODE_DECIMAL64)
        size = (size_t)n * 16;
    else
        size = (size_t)n * (size_t)qv__kind_width(kind, nd->fixed_width);
    o->values = qv_owned_array_alloc_buffer(a, 1, size ? size : 1, err);
    if (!o->values) return err ? err->code : ENOMEM;
    memset(o->values, 0, size ? size : 1);
    return 0;
}

/* Completes a column: length, null count, its bytes, validation, and its
 * reservation tied to its life (qv__column_adopt). On failure the array
 * and `res` are released. */
static int column_finish(const struct qv_reader *rd, int32_t column, int64_t n, int validate,
                         struct qv_reservation *res, struct ArrowArray *a, struct qv__flat_out *o,
                         struct qv_error *err) {
    const struct qv__node *nd = &rd->f.nodes[qv_reader_column_node(rd, column)];
    a->length = n;
    a->offset = 0;
    a->null_count = o->null_count;
    int rc = 0;
    if (nd->value_kind == QV_KIND_BINARY || nd->value_kind == QV_KIND_LARGE_BINARY) {
        if (o->data) {
            rc = qv_owned_array_set_buffer(a, 2, o->data, o->data_cap, err);
            if (rc) qv_free(res, o->data, o->data_cap);
        } else {
            rc = qv_owned_array_set_buffer(a, 2, (void *)qv_arrow_zero_buffer(), 0, err);
        }
        o->data = NULL;
    }
    if (!rc && validate) {
        enum qv_validate_level lv =
            validate == QV_SCAN_VALIDATE_FULL ? QV_VALIDATE_FULL : QV_VALIDATE_CHEAP;
        rc = qv_arrow_array_validate(a, nd->field, lv, err);
        if (rc && err) {
            qv__corrupt_mark(err); /* the file is at fault, not an argument */
            qv_error_wrap(err, EIO,
                          "file '%.300s': column '%.200s' is corrupt: a take decoded it to an "
                          "invalid array: ",
                          qv_reader_path(rd), nd->field->name ? nd->field->name : "");
            rc = EIO;
        } else if (rc) {
            rc = EIO;
        }
    }
    if (rc) {
        a->release(a);
        a->release = NULL;
        qv_reservation_destroy(res);
        return rc;
    }
    return qv__column_adopt(a, res, err); /* releases a and res on failure */
}

/* The columns of a gather, shared by the caller and its helper thread:
 * each takes the next column not taken yet and decodes its rows in every
 * row group (columns are independent: each has its own output, its own
 * reservation and, per row group, a reader borrowed from the cache). */
struct gather_job {
    struct qv_file *file;
    const int64_t *rows;
    int64_t n;
    const int32_t *cols;
    int32_t n_cols;
    const int32_t *order;   /* the columns (indexes into cols) in the order taken */
    struct qv__flat_out *o;
    int *rc;                /* per column; -1 for one not run */
    struct qv_error *errs;  /* per column */
    int32_t next;           /* atomic: the next position in order to take */
    int failed;             /* atomic: a column failed, take no more */
};

/* The row group holding `row`, at or after *rg (rows come increasing):
 * moves *rg there and returns the row group's end (its last row + 1). */
static int64_t to_row_group(const struct qv_reader *rd, int64_t row, int64_t *rg) {
    while (row >= rd->f.row_groups[*rg].first_row + rd->f.row_groups[*rg].rows) (*rg)++;
    return rd->f.row_groups[*rg].first_row + rd->f.row_groups[*rg].rows;
}

/* One column's rows, row group after row group (the rows are strictly
 * increasing); `local` is scratch for n row numbers. */
static int take_column(struct qv_file *file, const int64_t *rows, int64_t n, int32_t column,
                       struct qv__flat_out *o, int64_t *local, struct qv_error *err) {
    const struct qv_reader *rd = file->rd;
    int rc = 0;
    int64_t rg = 0;
    for (int64_t i = 0; !rc && i < n;) {
        const int64_t end = to_row_group(rd, rows[i], &rg), first = rd->f.row_groups[rg].first_row;
        int64_t m = 0;
        while (i + m < n && rows[i + m] < end) {
            local[m] = rows[i + m] - first;
            m++;
        }
        for (int attempt = 0;; attempt++) {
            struct borrowed b;
            rc = borrow(file, rg, column, &b, err);
            if (rc) break;
            rc = qv__column_reader_take_flat(b.cr, local, m, o, err);
            give_back(file, rg, column, &b, !rc);
            /* A full pool may be full of what the cache keeps: giving a
             * reader back after a failure closed the free ones, so one
             * more attempt has room. */
            if (rc != ENOMEM || attempt || !file->tc) break;
            qv_error_clear(err);
        }
        i += m;
    }
    return rc;
}

static void run_columns(struct gather_job *g, int64_t *local) {
    for (;;) {
        if (__atomic_load_n(&g->failed, __ATOMIC_ACQUIRE)) return;
        int32_t k = __atomic_fetch_add(&g->next, 1, __ATOMIC_ACQ_REL);
        if (k >= g->n_cols) return;
        const int32_t j = g->order[k];
        qv_error_clear(&g->errs[j]);
        g->rc[j] = take_column(g->file, g->rows, g->n, g->cols[j], &g->o[j], local, &g->errs[j]);
        if (g->rc[j]) __atomic_store_n(&g->failed, 1, __ATOMIC_RELEASE);
    }
}

/* Whether most of the column chunks a take needs are not open in the
 * take cache: a cold take parses trees, reads and verifies blocks and
 * decompresses frames for each, while a warm one finds its readers and
 * their frames kept and costs little per chunk (lineitem SF1, 100 rows at
 * 2-3 a row group: ~0.9 ms warm against ~15 ms cold), so a helper there
 * would add its start and the cache's lock traffic (measured: 0.86 -> 1.05
 * ms) to save nothing. */
static int cold(struct qv_file *file, const int64_t *rows, int64_t n, int32_t n_cols) {
    if (!file->tc) return 1; /* every chunk is opened for this take */
    const struct qv_reader *rd = file->rd;
    int64_t touched = 0;
    for (int64_t i = 0, rg = 0, end = 0; i < n; i++)
        if (rows[i] >= end) {
            end = to_row_group(rd, rows[i], &rg);
            touched++;
        }
    size_t readers = 0;
    uint64_t held = 0;
    qv__take_cache_counts(file->tc, &readers, &held);
    return (uint64_t)readers * 2 < (uint64_t)touched * (uint64_t)n_cols;
}

/* The order a helped gather takes its columns in: most encoded bytes in
 * the row groups the rows touch first (the decode a cold take pays grows
 * with them), so the last columns taken are small and neither thread
 * waits long for the other at the end. Ties keep column order. */
struct by_bytes {
    uint64_t bytes;
    int32_t j;
};

static int cmp_by_bytes(const void *a, const void *b) {
    const struct by_bytes *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return (x->j > y->j) - (x->j < y->j);
}

static int order_by_bytes(const struct qv_reader *rd, const int64_t *rows, int64_t n,
                          const int32_t *cols, int32_t n_cols, int32_t *order) {
    struct by_bytes *b = malloc((size_t)n_cols * sizeof *b);
    if (!b) return ENOMEM;
    for (int32_t j = 0; j < n_cols; j++) {
        const int32_t node = qv_reader_column_node(rd, cols[j]);
        uint64_t sum = 0;
        for (int64_t i = 0, rg = 0, end = 0; i < n; i++) {
            if (rows[i] < end) continue;
            end = to_row_group(rd, rows[i], &rg);
            const struct qv__chunk *ch = qv__reader_chunk(rd, rg, node);
            for (uint32_t k = 0; ch && k < ch->n_segments; k++)
                sum += rd->f.segments[ch->first_segment + k].length;
        }
        b[j] = (struct by_bytes){sum, j};
    }
    qsort(b, (size_t)n_cols, sizeof *b, cmp_by_bytes);
    for (int32_t k = 0; k < n_cols; k++) order[k] = b[k].j;
    free(b);
    return 0;
}

struct helper {
    struct gather_job *g;
    int64_t *local;
};

int64_t qv__take_gather_helpers;

static void *helper_main(void *arg) {
    struct helper *h = arg;
    run_columns(h->g, h->local);
    return NULL;
}

int qv__take_gather(struct qv_file *file, const int64_t *rows, int64_t n, const int32_t *cols,
                    int32_t n_cols, int validate, int threads, struct ArrowArray *out,
                    struct qv_error *err) {
    const struct qv_reader *rd = file->rd;
    struct qv_pool *pool = file->pool->pool;
    out->release = NULL;
    const size_t nc = (size_t)(n_cols ? n_cols : 1);
    struct ArrowArray *arr = calloc(nc, sizeof *arr);
    struct qv_reservation **res = calloc(nc, sizeof *res);
    struct qv__flat_out *o = calloc(nc, sizeof *o);
    int *rcs = calloc(nc, sizeof *rcs);
    int32_t *order = malloc(nc * sizeof *order);
    struct qv_error *errs = calloc(nc, sizeof *errs);
    /* Scratch row numbers: the caller's, then the helper's. */
    int64_t *local = malloc((size_t)(n ? n : 1) * 2 * sizeof *local);
    int rc = arr && res && o && rcs && order && errs && local
                 ? 0
                 : qv_error_set(err, ENOMEM, "take: out of memory");
    int32_t started = 0;
    for (; !rc && started < n_cols; started++)
        rc = column_start(rd, cols[started], n, pool, &res[started], &arr[started], &o[started], err);
    if (!rc) {
        struct gather_job g = {.file = file, .rows = rows, .n = n, .cols = cols,
                               .n_cols = n_cols, .order = order, .o = o, .rc = rcs,
                               .errs = errs};
        /* A helper thread takes columns too when threads allow and the
         * take is cold and large enough to pay for it (file_internal.h);
         * if it cannot start, the caller takes every column. */
        struct helper h = {.g = &g, .local = local + n};
        qv_thread th;
        const int workers = threads == QV_SCAN_SYNC ? 1
                            : threads > 0            ? threads
                                                     : qv_cpu_count();
        int help = workers >= 2 && n_cols >= 2 && n * n_cols >= QV__TAKE_GATHER_HELP &&
                   cold(file, rows, n, n_cols);
        for (int32_t j = 0; j < n_cols; j++) {
            order[j] = j;
            rcs[j] = -1; /* not run */
        }
        /* Without the memory for the order, column order (no error). */
        if (help) (void)order_by_bytes(rd, rows, n, cols, n_cols, order);
        int helped = help && qv_thread_create(&th, helper_main, &h) == 0;
        if (helped) __atomic_fetch_add(&qv__take_gather_helpers, 1, __ATOMIC_RELAXED);
        run_columns(&g, local);
        if (helped) qv_thread_join(th);
        /* The first failure in the order taken: every column before it
         * ran. With a helper, a column that found no memory (the other
         * thread's readers, out of the cache while in use, could not be
         * given back for it) and those not run after it run again on the
         * caller alone, from their first row: a take that fits on one
         * thread does not fail for having had two. */
        for (int32_t k = 0; !rc && k < n_cols; k++) {
            const int32_t j = order[k];
            if (rcs[j] == -1 || (helped && rcs[j] == ENOMEM)) {
                o[j].pos = 0;
                o[j].null_count = 0;
                o[j].data_size = 0;
                qv_error_clear(&errs[j]);
                rcs[j] = take_column(file, rows, n, cols[j], &o[j], local, &errs[j]);
            }
            if (rcs[j]) {
                rc = rcs[j];
                if (err) *err = errs[j];
            }
        }
    }
    for (int32_t j = 0; !rc && j < n_cols; j++) {
        rc = column_finish(rd, cols[j], n, validate, res[j], &arr[j], &o[j], err);
        res[j] = NULL; /* adopted, or released with its array */
    }
    if (!rc) {
        rc = qv__batch_assemble(out, arr, n_cols, n, pool, err); /* moves the columns in */
        started = 0;
    }
    for (int32_t j = 0; j < started; j++) {
        if (o[j].data && res[j]) qv_free(res[j], o[j].data, o[j].data_cap);
        if (arr[j].release) arr[j].release(&arr[j]);
        qv_reservation_destroy(res[j]);
    }
    free(arr);
    free(res);
    free(o);
    free(rcs);
    free(order);
    free(errs);
    free(local);
    return rc;
}
