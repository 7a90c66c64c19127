/*
 * Sparse: a fill value plus the positions (u32, increasing) and values of
 * the exceptions. Meant for columns dominated by one value (validity with
 * few nulls, mostly-zero counters). A range decode fills, then patches the
 * exceptions found by binary search over the positions kept on the node.
 */
#include "encoding/enc_internal.h"

int qv__sparse_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                           uint64_t fill, struct qv__enode **out) {
    int64_t ne = 0;
    for (int64_t i = 0; i < n; i++) ne += v[i] != fill;
    const unsigned w = qv__pt_width(pt);
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_SPARSE, pt, w, n);
    uint64_t *pos = nd ? qv__mem_alloc(&e->mem, (size_t)(ne ? ne : 1) * 8, e->err) : NULL;
    uint64_t *vals = pos ? qv__mem_alloc(&e->mem, (size_t)(ne ? ne : 1) * 8, e->err) : NULL;
    uint8_t *fv = vals ? qv__mem_alloc(&e->mem, 8, e->err) : NULL;
    int rc = ENOMEM;
    if (!fv) goto out;
    for (int64_t i = 0, k = 0; i < n; i++)
        if (v[i] != fill) {
            pos[k] = (uint64_t)i;
            vals[k++] = v[i];
        }
    qv__narrow(&fill, w, 1, fv);
    nd->nbufs = 1;
    nd->buf[0] = fv;
    nd->buf_len[0] = w;
    rc = qv__cascade_int(e, pos, ne, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (rc) goto out;
    if (qv__pt_is_float(pt)) {
        if (pt == QV__PT_F32) qv__narrow(vals, 4, ne, vals);
        rc = qv__cascade_float(e, vals, ne, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    } else {
        rc = qv__cascade_int(e, vals, ne, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    }
    if (rc) goto out;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
    fv = NULL; /* owned by the node now */
out:
    qv__mem_free(&e->mem, vals);
    qv__mem_free(&e->mem, pos);
    if (rc) qv__mem_free(&e->mem, fv);
    return rc;
}

int qv__sparse_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth,
                           struct qv__enode **out) {
    int64_t ones = qv_bits_count(bits, 0, n);
    int fill = ones * 2 >= n;
    int64_t ne = fill ? n - ones : ones;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_SPARSE, QV__PT_BOOL, 0, n);
    uint64_t *pos = nd ? qv__mem_alloc(&e->mem, (size_t)(ne ? ne : 1) * 8, e->err) : NULL;
    if (!pos) return ENOMEM;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        /* Skip whole bytes of fill quickly: exceptions are rare here. */
        if (!(i & 7) && i + 8 <= n && bits[i >> 3] == (fill ? 0xff : 0)) {
            i += 7;
            continue;
        }
        if (qv_bit_get(bits, i) != fill) pos[k++] = (uint64_t)i;
    }
    int rc = qv__cascade_int(e, pos, ne, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    qv__mem_free(&e->mem, pos);
    if (rc) return rc;
    nd->nparams = 1;
    nd->params[0] = fill;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ---- */

struct sparse_cache {
    void *vals;
};

int qv__sparse_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                        void *out, struct qv_error *err) {
    const uint64_t *pos;
    int rc = qv__dec_cached_u64(d, nd->child[0], 1, (uint64_t)nd->count, &pos, err);
    if (rc) return rc;
    const int64_t ne = nd->child[0]->count;
    const unsigned w = nd->width;
    struct sparse_cache *c = nd->cache;
    if (!c) {
        c = qv__mem_small(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        c->vals = qv__mem_buf(&d->mem, (size_t)(ne ? ne : 1) * w, err);
        if (!c->vals) return ENOMEM;
        if ((rc = qv__dec_word(d, nd->child[1], 0, ne, c->vals, err))) return rc;
        nd->cache = c;
    }
    /* The fill is a constant node's buffer in all but name. */
    if ((rc = qv__constant_dec_word(d, nd, start, n, out, err))) return rc;
    uint8_t *o = out;
    const uint8_t *vals = c->vals;
    for (int64_t k = qv__lower_bound(pos, ne, (uint64_t)start);
         k < ne && pos[k] < (uint64_t)(start + n); k++)
        memcpy(o + (pos[k] - (uint64_t)start) * w, vals + (size_t)k * w, w);
    return 0;
}

int qv__sparse_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                        uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    const uint64_t *pos;
    int rc = qv__dec_cached_u64(d, nd->child[0], 1, (uint64_t)nd->count, &pos, err);
    if (rc) return rc;
    const int64_t ne = nd->child[0]->count;
    const int fill = (int)nd->params[0];
    qv_bits_fill(bits, bit_off, n, fill);
    for (int64_t k = qv__lower_bound(pos, ne, (uint64_t)start);
         k < ne && pos[k] < (uint64_t)(start + n); k++)
        qv_bit_put(bits, bit_off + (int64_t)(pos[k] - (uint64_t)start), !fill);
    return 0;
}

/* ---- Record ---- */

/* bool: param 0 is the fill value; child 0: positions of the other value.
 * Word types: buffer 0 is the fill value (width bytes); child 0: positions
 * (u32, increasing); child 1: their values. At most count positions. */
static int sparse_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (nd->pt == QV__PT_BOOL) {
        if ((rc = qv__want_shape(nd, 1, 0, 1, err))) return rc;
        if (nd->params[0] != 0 && nd->params[0] != 1)
            return qv__corrupt(err, nd, "fill value %lld", (long long)nd->params[0]);
    } else {
        if (!qv__pt_is_word(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
        if ((rc = qv__want_shape(nd, 0, 1, 2, err))) return rc;
        if (nd->buf_len[0] != nd->width)
            return qv__corrupt(err, nd, "fill value of %llu bytes",
                               (unsigned long long)nd->buf_len[0]);
        if ((rc = qv__want_child(nd, 1, nd->pt, nd->child[0]->count, err))) return rc;
    }
    if ((rc = qv__want_child(nd, 0, QV__PT_U32, -1, err))) return rc;
    if (nd->child[0]->count > nd->count)
        return qv__corrupt(err, nd, "%lld exceptions for %lld values",
                           (long long)nd->child[0]->count, (long long)nd->count);
    return 0;
}

static int sparse_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (qv__pt_is_word(s->pt))
        return qv__sparse_encode_word(e, s->u64, s->n, s->pt, s->depth, s->s->top_value, out);
    if (s->pt == QV__PT_BOOL) return qv__sparse_encode_bool(e, s->bits, s->n, s->depth, out);
    return qv__enc_unsupported(e, QV_ENC_SPARSE, s->pt);
}

const struct qv__encoding qv__enc_sparse = {
    .id = QV_ENC_SPARSE,
    .name = "sparse",
    .decode_cost = 2,
    .dec_word = qv__sparse_dec_word,
    .dec_bool = qv__sparse_dec_bool,
    .validate = sparse_validate,
    .build = sparse_build,
    .bool_params = {"fill"},
    .children = {"positions", "values"},
};
