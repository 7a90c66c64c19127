/*
 * Binary predicates on decoded bytes, one vector at a time: the strings of
 * a selected vector are decoded into a buffer the filter keeps (offsets and
 * bytes, no Arrow array) and compared for EQ, NE or PREFIX. Used for FSST,
 * plain and zstd/lz4 binary trees (see filter.c on why FSST is not compared
 * compressed).
 */
#include "encoding/enc_internal.h"

struct str_ctx {
    struct qv__dec *d;
    struct qv__fstate *st;
    const struct qv__fpred *fp;
};

static int str_block(void *vctx, int64_t pos, int64_t m, uint64_t *res, struct qv_error *err) {
    struct str_ctx *c = vctx;
    struct qv__fstate *st = c->st;
    struct qv__binout o;
    memset(&o, 0, sizeof o);
    o.off64 = 1;
    o.offsets = st->off;
    o.data = st->data;
    o.cap = st->data_cap;
    o.r = c->d->r;
    o.mem = &c->d->mem;
    st->off[0] = 0;
    int rc = qv__dec_bin(c->d, c->d->root, pos, m, &o, err);
    st->data = o.data;
    st->data_cap = o.cap;
    if (rc) return rc;
    if (o.i != m)
        return qv__corrupt(err, c->d->root, "%lld of %lld binary values decoded", (long long)o.i,
                           (long long)m);
    qv__str_cmp(st->off, st->data, m, c->fp->p->bytes, c->fp->p->len, c->fp->prefix,
                c->fp->neg, res);
    return 0;
}

int qv__filter_decoded_bin(struct qv__dec *d, struct qv__fstate *st, const struct qv__fpred *fp,
                           int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                           struct qv_error *err) {
    struct str_ctx c = {d, st, fp};
    return qv__filter_blocks(start, n, sel, out, str_block, &c, err);
}
