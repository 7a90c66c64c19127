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

int qv__take_gather(struct qv_file *file, const int64_t *rows, int64_t n, const int32_t *cols,
                    int32_t n_cols, int validate, struct ArrowArray *out, struct qv_error *err) {
    const struct qv_reader *rd = file->rd;
    struct qv_pool *pool = file->pool->pool;
    out->release = NULL;
    struct ArrowArray *arr = calloc((size_t)(n_cols ? n_cols : 1), sizeof *arr);
    struct qv_reservation **res = calloc((size_t)(n_cols ? n_cols : 1), sizeof *res);
    struct qv__flat_out *o = calloc((size_t)(n_cols ? n_cols : 1), sizeof *o);
    int64_t *local = malloc((size_t)(n ? n : 1) * sizeof *local);
    int rc = arr && res && o && local ? 0 : qv_error_set(err, ENOMEM, "take: out of memory");
    int32_t started = 0;
    for (; !rc && started < n_cols; started++)
        rc = column_start(rd, cols[started], n, pool, &res[started], &arr[started], &o[started], err);
    /* Row group after row group (the rows are strictly increasing), every
     * column of it. */
    int64_t rg = 0;
    for (int64_t i = 0; !rc && i < n;) {
        while (rows[i] >= rd->f.row_groups[rg].first_row + rd->f.row_groups[rg].rows) rg++;
        int64_t first = rd->f.row_groups[rg].first_row, end = first + rd->f.row_groups[rg].rows;
        int64_t m = 0;
        while (i + m < n && rows[i + m] < end) {
            local[m] = rows[i + m] - first;
            m++;
        }
        for (int32_t j = 0; !rc && j < n_cols; j++) {
            for (int attempt = 0;; attempt++) {
                struct borrowed b;
                rc = borrow(file, rg, cols[j], &b, err);
                if (rc) break;
                rc = qv__column_reader_take_flat(b.cr, local, m, &o[j], err);
                give_back(file, rg, cols[j], &b, !rc);
                /* A full pool may be full of what the cache keeps: giving a
                 * reader back after a failure closed the free ones, so one
                 * more attempt has room. */
                if (rc != ENOMEM || attempt || !file->tc) break;
                qv_error_clear(err);
            }
        }
        i += m;
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
    free(local);
    return rc;
}
