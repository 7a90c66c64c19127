/* The scan's filter, batch by batch (qv__filter_*, scan_internal.h).
 *
 * This version decodes every filter column of the batch whole and evaluates
 * the bound expression over them with qv_expr_eval, as the scan did inline
 * before the scheduler took its batches apart. It exists so that the
 * scheduler codes against the per-worker interface; conjunct-by-conjunct
 * evaluation replaces its body behind the same interface.
 *
 * A ctx holds its own column readers (one per filter column), so two ctxs
 * can filter two batches at once; the bound expression is read-only and is
 * shared. */
#include <string.h>

#include "format/reader_internal.h"
#include "scan/scan_internal.h"

struct qv__filter {
    const struct qv_reader *rd;
    const struct qv_expr *expr;
    struct qv_reservation *r;
    int32_t ncol;              /* schema columns */
    int32_t n;                 /* filter columns */
    int32_t *cols;             /* schema column of each filter child */
    int32_t *child_of_column;  /* schema column -> filter child, or -1 */
};

struct qv__filter_ctx {
    struct qv__filter *f;
    struct qv_reservation *res;
    struct qv_column_reader **cr;
    int64_t *rg;
    struct ArrowArray *arr;
    struct ArrowArray **children;
    uint8_t *bits;
    size_t bits_size;
};

int qv__filter_create(const struct qv_reader *rd, struct qv_expr *filter, struct qv_pool *pool,
                      struct qv_reservation *r, struct qv__filter **out, struct qv_error *err) {
    (void)pool;
    *out = NULL;
    int32_t ncol = (int32_t)qv_reader_schema(rd)->root.n_children;
    size_t nc = (size_t)(ncol ? ncol : 1);
    struct qv__filter *f = qv_calloc(r, sizeof *f, err);
    if (!f) return ENOMEM;
    f->rd = rd;
    f->expr = filter;
    f->r = r;
    f->ncol = ncol;
    f->cols = qv_calloc(r, nc * sizeof *f->cols, err);
    f->child_of_column = f->cols ? qv_calloc(r, nc * sizeof *f->child_of_column, err) : NULL;
    if (!f->child_of_column) {
        qv__filter_destroy(f);
        return ENOMEM;
    }
    int32_t n = qv_expr_columns(filter, NULL, 0);
    if (n < 0 || n > ncol) {
        qv__filter_destroy(f);
        return qv_error_set(err, EINVAL, "scan: the filter reads %d columns of %d", n, ncol);
    }
    qv_expr_columns(filter, f->cols, n);
    f->n = n;
    for (int32_t c = 0; c < ncol; c++) f->child_of_column[c] = -1;
    for (int32_t i = 0; i < n; i++) f->child_of_column[f->cols[i]] = i;
    *out = f;
    return 0;
}

void qv__filter_destroy(struct qv__filter *f) {
    if (!f) return;
    size_t nc = (size_t)(f->ncol ? f->ncol : 1);
    if (f->cols) qv_free(f->r, f->cols, nc * sizeof *f->cols);
    if (f->child_of_column) qv_free(f->r, f->child_of_column, nc * sizeof *f->child_of_column);
    qv_free(f->r, f, sizeof *f);
}

void qv__filter_ctx_destroy(struct qv__filter_ctx *c) {
    if (!c) return;
    size_t n = (size_t)(c->f->n ? c->f->n : 1);
    struct qv_reservation *res = c->res;
    for (int32_t i = 0; c->cr && i < c->f->n; i++) qv_column_reader_close(c->cr[i]);
    if (c->cr) qv_free(res, c->cr, n * sizeof *c->cr);
    if (c->rg) qv_free(res, c->rg, n * sizeof *c->rg);
    if (c->arr) qv_free(res, c->arr, n * sizeof *c->arr);
    if (c->children) qv_free(res, c->children, n * sizeof *c->children);
    if (c->bits) qv_free(res, c->bits, c->bits_size);
    qv_free(res, c, sizeof *c);
    qv_reservation_destroy(res);
}

int qv__filter_ctx_create(struct qv__filter *f, struct qv_pool *pool, struct qv__filter_ctx **out,
                          struct qv_error *err) {
    *out = NULL;
    struct qv_reservation *res;
    struct qv_reservation_options ro = {.name = "scan filter"};
    int rc = qv_reservation_create(pool, &ro, &res, err);
    if (rc) return rc;
    struct qv__filter_ctx *c = qv_calloc(res, sizeof *c, err);
    if (!c) {
        qv_reservation_destroy(res);
        return ENOMEM;
    }
    c->f = f;
    c->res = res;
    size_t n = (size_t)(f->n ? f->n : 1);
    c->cr = qv_calloc(res, n * sizeof *c->cr, err);
    c->rg = c->cr ? qv_calloc(res, n * sizeof *c->rg, err) : NULL;
    c->arr = c->rg ? qv_calloc(res, n * sizeof *c->arr, err) : NULL;
    c->children = c->arr ? qv_calloc(res, n * sizeof *c->children, err) : NULL;
    if (!c->children) {
        qv__filter_ctx_destroy(c);
        return ENOMEM;
    }
    for (int32_t i = 0; i < f->n; i++) {
        c->rg[i] = -1;
        c->children[i] = &c->arr[i];
    }
    *out = c;
    return 0;
}

/* The filter batch is a view over arrays the ctx owns; it is never released. */
static void view_release(struct ArrowArray *a) { a->release = NULL; }

static int ensure_reader(struct qv__filter_ctx *c, int32_t i, int64_t rg,
                         struct qv__filter_counts *counts, struct qv_error *err) {
    if (c->cr[i] && c->rg[i] == rg) return 0;
    /* Moving keeps the column's read buffer from one row group to the next. */
    int rc = c->cr[i] ? qv_column_reader_move(&c->cr[i], rg, err)
                      : qv_column_reader_open_nodes(c->f->rd, rg, c->f->cols[i], NULL, c->res,
                                                    &c->cr[i], err);
    c->rg[i] = rc ? -1 : rg;
    if (!rc && counts) counts->bytes_loaded += (int64_t)qv__column_reader_loaded_bytes(c->cr[i]);
    return rc;
}

static void release_arrays(struct qv__filter_ctx *c) {
    for (int32_t i = 0; i < c->f->n; i++)
        if (c->arr[i].release) c->arr[i].release(&c->arr[i]);
}

int qv__filter_batch(struct qv__filter_ctx *c, int64_t rg, int64_t lo, const int64_t *rows,
                     int64_t n, int64_t *sel, int64_t *k, struct qv__filter_counts *counts,
                     const int *cancel, struct qv_error *err) {
    const struct qv__filter *f = c->f;
    *k = 0;
    int rc = 0;
    for (int32_t i = 0; i < f->n && !rc; i++) {
        if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
            rc = qv_error_set(err, ECANCELED, "scan cancelled");
            break;
        }
        rc = ensure_reader(c, i, rg, counts, err);
        if (rc) break;
        const struct qv_field *field = &qv_reader_schema(f->rd)->root.children[f->cols[i]];
        rc = qv_owned_array_create(&c->arr[i], field, c->res, err);
        if (rc) break;
        rc = rows ? qv_column_reader_take_into(c->cr[i], rows, n, &c->arr[i], c->res, err)
                  : qv_column_reader_read_into(c->cr[i], lo, n, &c->arr[i], c->res, err);
        if (rc) c->arr[i].release(&c->arr[i]);
    }
    size_t bneed = (size_t)qv_bytes_for_bits(n ? n : 1);
    if (!rc && bneed > c->bits_size) {
        uint8_t *b = qv_realloc(c->res, c->bits, c->bits_size, bneed, err);
        if (!b) rc = ENOMEM;
        else {
            c->bits = b;
            c->bits_size = bneed;
        }
    }
    if (!rc) {
        const void *no_validity = NULL;
        struct ArrowArray view = {.length = n, .n_buffers = 1, .buffers = &no_validity,
                                  .n_children = f->n, .children = c->children,
                                  .release = view_release};
        memset(c->bits, 0, bneed);
        rc = qv_expr_eval(f->expr, &view, f->child_of_column, c->bits, NULL, c->res, err);
    }
    release_arrays(c);
    if (rc) return rc;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (qv_bit_get(c->bits, i)) sel[m++] = rows ? rows[i] : lo + i;
    *k = m;
    if (counts) {
        counts->rows_decoded += n;
        counts->values_decoded += n * f->n;
        counts->rows_in += n;
        counts->rows_out += m;
    }
    return 0;
}
