/* Output batches that outlive the scan: every column owns its reservation,
 * and the struct around them owns one for its control data. Releasing the
 * batch (or a column moved out of it) frees exactly what it holds. A
 * finished column never grows again, so its reservation returns its slack
 * when it is adopted: a consumer holding thousands of batches is charged
 * their bytes and nothing more. */
#include <string.h>

#include "arrow/arrow_internal.h"
#include "scan/scan_internal.h"

struct adopted {
    void (*release)(struct ArrowArray *);
    void *private_data;
    struct qv_reservation *res;
};

static void adopted_release(struct ArrowArray *a) {
    struct adopted *h = a->private_data;
    struct qv_reservation *res = h->res;
    a->release = h->release;
    a->private_data = h->private_data;
    qv_free(res, h, sizeof *h);
    a->release(a);
    qv_reservation_destroy(res);
}

static void destroy_reservation(void *res) { qv_reservation_destroy(res); }

int qv__column_adopt(struct ArrowArray *col, struct qv_reservation *res, struct qv_error *err) {
    /* An owned tree destroys the reservation when its last node goes, so a
     * child a consumer moved out of the column (at any depth, as the C Data
     * Interface allows) stays valid after the column's release. */
    if (qv__owned_tree_on_free(col, destroy_reservation, res, NULL, NULL)) {
        qv_reservation_release_slack(res);
        return 0;
    }
    struct adopted *h = qv_alloc(res, sizeof *h, err);
    if (!h) {
        col->release(col);
        qv_reservation_destroy(res);
        return ENOMEM;
    }
    h->release = col->release;
    h->private_data = col->private_data;
    h->res = res;
    col->release = adopted_release;
    col->private_data = h;
    qv_reservation_release_slack(res);
    return 0;
}

struct adopted_schema {
    void (*release)(struct ArrowSchema *);
    void *private_data;
    struct qv_reservation *res;
};

static void adopted_schema_release(struct ArrowSchema *sc) {
    struct adopted_schema *h = sc->private_data;
    struct qv_reservation *res = h->res;
    sc->release = h->release;
    sc->private_data = h->private_data;
    qv_free(res, h, sizeof *h);
    sc->release(sc);
    qv_reservation_destroy(res);
}

int qv__schema_adopt(struct ArrowSchema *sc, struct qv_reservation *res, struct qv_error *err) {
    struct adopted_schema *h = qv_alloc(res, sizeof *h, err);
    if (!h) {
        sc->release(sc);
        qv_reservation_destroy(res);
        return ENOMEM;
    }
    h->release = sc->release;
    h->private_data = sc->private_data;
    h->res = res;
    sc->release = adopted_schema_release;
    sc->private_data = h;
    qv_reservation_release_slack(res);
    return 0;
}

struct batch_priv {
    struct qv_reservation *res;
    size_t size;
    int64_t n;
    struct ArrowArray **ptrs;
    struct ArrowArray *cols;
};

static void batch_release(struct ArrowArray *a) {
    struct batch_priv *p = a->private_data;
    for (int64_t i = 0; i < p->n; i++)
        if (p->cols[i].release) p->cols[i].release(&p->cols[i]);
    struct qv_reservation *res = p->res;
    qv_free(res, p, p->size);
    qv_reservation_destroy(res);
    a->release = NULL;
}

int qv__batch_assemble(struct ArrowArray *out, struct ArrowArray *cols, int64_t n, int64_t length,
                       struct qv_pool *pool, struct qv_error *err) {
    struct qv_reservation *res = NULL;
    struct qv_reservation_options ro = {.name = "scan batch"};
    size_t size = sizeof(struct batch_priv) + (size_t)n * (sizeof(struct ArrowArray *) + sizeof(struct ArrowArray)) +
                  sizeof(void *);
    struct batch_priv *p = NULL;
    int rc = qv_reservation_create(pool, &ro, &res, err);
    if (!rc) {
        p = qv_alloc(res, size, err);
        if (!p) rc = ENOMEM;
    }
    if (rc) {
        for (int64_t i = 0; i < n; i++)
            if (cols[i].release) cols[i].release(&cols[i]);
        qv_reservation_destroy(res);
        out->release = NULL;
        return rc;
    }
    qv_reservation_release_slack(res);
    memset(p, 0, size);
    p->res = res;
    p->size = size;
    p->n = n;
    p->cols = (struct ArrowArray *)(p + 1);
    p->ptrs = (struct ArrowArray **)(p->cols + n);
    const void **buffers = (const void **)(p->ptrs + n);
    for (int64_t i = 0; i < n; i++) {
        p->cols[i] = cols[i];
        cols[i].release = NULL; /* moved */
        p->ptrs[i] = &p->cols[i];
    }
    memset(out, 0, sizeof *out);
    out->length = length;
    out->n_buffers = 1;
    out->buffers = buffers; /* a struct with no validity bitmap: buffers[0] = NULL */
    out->n_children = n;
    out->children = p->ptrs;
    out->release = batch_release;
    out->private_data = p;
    return 0;
}
