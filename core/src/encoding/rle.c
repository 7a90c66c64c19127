/*
 * Run-end encoding: run i covers [ends[i-1], ends[i]) with values[i]. Ends
 * (u32, strictly increasing, the last equal to the count) and values are
 * cascaded (ends usually become delta + bit-packed run lengths). A range
 * decode finds its first run by binary search over the decoded ends, kept
 * on the node. Booleans store no values: runs alternate from param 0.
 */
#include "encoding/enc_internal.h"

int qv__rle_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                        struct qv__enode **out) {
    int64_t runs = 0;
    for (int64_t i = 0; i < n; i++) runs += (i == 0 || v[i] != v[i - 1]);
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_RLE, pt, qv__pt_width(pt), n);
    uint64_t *ends = nd ? qv__mem_alloc(&e->mem, (size_t)(runs ? runs : 1) * 8, e->err) : NULL;
    uint64_t *vals = ends ? qv__mem_alloc(&e->mem, (size_t)(runs ? runs : 1) * 8, e->err) : NULL;
    int rc = ENOMEM;
    if (!vals) goto out;
    int64_t r = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || v[i] != v[i - 1]) {
            if (r) ends[r - 1] = (uint64_t)i;
            vals[r++] = v[i];
        }
    }
    if (r) ends[r - 1] = (uint64_t)n;
    rc = qv__cascade_int(e, ends, runs, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (rc) goto out;
    if (qv__pt_is_float(pt)) {
        /* Back to floats so the run values can use ALP. */
        if (pt == QV__PT_F32) qv__narrow(vals, 4, runs, vals);
        rc = qv__cascade_float(e, vals, runs, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    } else {
        rc = qv__cascade_int(e, vals, runs, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    }
    if (rc) goto out;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
out:
    qv__mem_free(&e->mem, vals);
    qv__mem_free(&e->mem, ends);
    return rc;
}

/* Position of the first bit in [i, n) that differs from `cur`, or n. */
static int64_t next_change(const uint8_t *bits, int64_t i, int64_t n, int cur) {
    const uint64_t flip = cur ? ~UINT64_C(0) : 0;
    while (i < n && (i & 63)) {
        if (qv_bit_get(bits, i) != cur) return i;
        i++;
    }
    while (i + 64 <= n) {
        uint64_t w;
        memcpy(&w, bits + (i >> 3), 8);
        w ^= flip;
        if (w) return i + __builtin_ctzll(w);
        i += 64;
    }
    while (i < n) {
        if (qv_bit_get(bits, i) != cur) return i;
        i++;
    }
    return n;
}

int qv__rle_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int depth,
                        struct qv__enode **out) {
    int64_t runs = 0;
    for (int64_t i = 0; i < n; runs++) i = next_change(bits, i, n, qv_bit_get(bits, i));
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_RLE, QV__PT_BOOL, 0, n);
    uint64_t *ends = nd ? qv__mem_alloc(&e->mem, (size_t)(runs ? runs : 1) * 8, e->err) : NULL;
    if (!ends) return ENOMEM;
    int64_t r = 0;
    for (int64_t i = 0; i < n;) ends[r++] = (uint64_t)(i = next_change(bits, i, n, qv_bit_get(bits, i)));
    int rc = qv__cascade_int(e, ends, runs, QV__PT_U32, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    qv__mem_free(&e->mem, ends);
    if (rc) return rc;
    nd->nparams = 1;
    nd->params[0] = n ? qv_bit_get(bits, 0) : 0;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* ---- Decoding ---- */

static int load_ends(struct qv__dec *d, struct qv__node *nd, const uint64_t **ends,
                     struct qv_error *err) {
    struct qv__node *en = nd->child[0];
    int rc = qv__dec_cached_u64(d, en, 1, (uint64_t)nd->count + 1, ends, err);
    if (rc) return rc;
    if (en->count && (*ends)[en->count - 1] != (uint64_t)nd->count)
        return qv__corrupt(err, nd, "last run ends at %llu, not at the count %lld",
                           (unsigned long long)(*ends)[en->count - 1], (long long)nd->count);
    return 0;
}

struct rle_cache {
    void *vals;
};

#define FILL(T)                                                                                  \
    static void fill_##T(T *o, int64_t m, const void *src) {                                     \
        T x;                                                                                     \
        memcpy(&x, src, sizeof x);                                                               \
        for (int64_t i = 0; i < m; i++) o[i] = x;                                                \
    }
FILL(uint8_t)
FILL(uint16_t)
FILL(uint32_t)
FILL(uint64_t)

int qv__rle_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     void *out, struct qv_error *err) {
    const uint64_t *ends;
    int rc = load_ends(d, nd, &ends, err);
    if (rc) return rc;
    struct rle_cache *c = nd->cache;
    const int64_t runs = nd->child[0]->count;
    const unsigned w = nd->width;
    if (!c) {
        c = qv__mem_calloc(&d->mem, sizeof *c, err);
        if (!c) return ENOMEM;
        c->vals = qv__mem_alloc(&d->mem, (size_t)(runs ? runs : 1) * w, err);
        if (!c->vals) return ENOMEM;
        if ((rc = qv__dec_word(d, nd->child[1], 0, runs, c->vals, err))) return rc;
        nd->cache = c;
    }
    int64_t r = qv__upper_bound(ends, runs, (uint64_t)start);
    uint8_t *o = out;
    for (int64_t pos = start, end = start + n; pos < end; r++) {
        int64_t stop = (int64_t)ends[r] < end ? (int64_t)ends[r] : end;
        int64_t m = stop - pos;
        const uint8_t *src = (const uint8_t *)c->vals + (size_t)r * w;
        switch (w) {
        case 1: fill_uint8_t(o, m, src); break;
        case 2: fill_uint16_t((uint16_t *)(void *)o, m, src); break;
        case 4: fill_uint32_t((uint32_t *)(void *)o, m, src); break;
        default: fill_uint64_t((uint64_t *)(void *)o, m, src); break;
        }
        o += (size_t)m * w;
        pos = stop;
    }
    return 0;
}

int qv__rle_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                     uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    const uint64_t *ends;
    int rc = load_ends(d, nd, &ends, err);
    if (rc) return rc;
    const int64_t runs = nd->child[0]->count;
    int64_t r = qv__upper_bound(ends, runs, (uint64_t)start);
    for (int64_t pos = start, end = start + n; pos < end; r++) {
        int64_t stop = (int64_t)ends[r] < end ? (int64_t)ends[r] : end;
        qv_bits_fill(bits, bit_off + (pos - start), stop - pos, (int)((nd->params[0] ^ r) & 1));
        pos = stop;
    }
    return 0;
}
