/*
 * Delta: each 1024-value vector stores its first value in the `bases`
 * child and the differences to the previous value in the `deltas` child
 * (wrapping at the type's width). A range decode starts at the first
 * vector it touches, never earlier, so random access costs at most one
 * vector of prefix sum. The delta slot at a vector start is unused; the
 * encoder fills it with the smallest delta so it does not widen the
 * bit-packing of the deltas.
 */
#include "encoding/enc_internal.h"

int qv__delta_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                     struct qv__enode **out) {
    const unsigned bits = qv__pt_width(pt) * 8;
    const uint64_t mask = qv__mask(bits);
    const int64_t nvec = (n + QV__VEC - 1) >> QV__VEC_SHIFT;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_DELTA, pt, qv__pt_width(pt), n);
    if (!nd) return ENOMEM;
    uint64_t *bases = qv__mem_alloc(&e->mem, (size_t)(nvec ? nvec : 1) * 8, e->err);
    uint64_t *deltas = bases ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    if (!deltas) {
        qv__mem_free(&e->mem, bases);
        return ENOMEM;
    }
    int64_t dmin = INT64_MAX;
    for (int64_t k = 0; k < nvec; k++) {
        int64_t vs = k << QV__VEC_SHIFT, ve = vs + QV__VEC < n ? vs + QV__VEC : n;
        bases[k] = v[vs];
        for (int64_t i = vs + 1; i < ve; i++) {
            uint64_t dd = (v[i] - v[i - 1]) & mask;
            deltas[i] = dd;
            int64_t s = qv__sext(dd, bits);
            if (s < dmin) dmin = s;
        }
    }
    uint64_t fill = dmin == INT64_MAX ? 0 : (uint64_t)dmin & mask;
    for (int64_t k = 0; k < nvec; k++) deltas[k << QV__VEC_SHIFT] = fill;
    int rc = qv__cascade_int(e, bases, nvec, pt, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (!rc) rc = qv__cascade_int(e, deltas, n, pt, depth + 1, QV_ENC_AUTO, &nd->child[1]);
    qv__mem_free(&e->mem, deltas);
    qv__mem_free(&e->mem, bases);
    if (rc) return rc;
    nd->nchildren = 2;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* In-place prefix sum over one vector's decoded deltas: buf[0] becomes the
 * base, buf[i] += buf[i-1]. Only [lo, hi) is then copied out by the caller
 * when buf is a temporary. */
#define PREFIX(T)                                                                                \
    static void prefix_##T(T *buf, int64_t m, T base) {                                         \
        T x = base;                                                                              \
        buf[0] = x;                                                                              \
        for (int64_t i = 1; i < m; i++) {                                                        \
            x = (T)(x + buf[i]);                                                                 \
            buf[i] = x;                                                                          \
        }                                                                                        \
    }
PREFIX(uint8_t)
PREFIX(uint16_t)
PREFIX(uint32_t)
PREFIX(uint64_t)

static void prefix(void *buf, unsigned w, int64_t m, uint64_t base) {
    switch (w) {
    case 1: prefix_uint8_t(buf, m, (uint8_t)base); break;
    case 2: prefix_uint16_t(buf, m, (uint16_t)base); break;
    case 4: prefix_uint32_t(buf, m, (uint32_t)base); break;
    default: prefix_uint64_t(buf, m, base); break;
    }
}

int qv__delta_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                  struct qv_error *err) {
    const uint64_t *bases;
    /* -1 limit and no ordering: bases are arbitrary values. */
    int rc = qv__dec_cached_u64(d, nd->child[0], 0, 0, &bases, err);
    if (rc) return rc;
    const unsigned w = nd->width;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint8_t *tmp = NULL, *o = out;
    int64_t pos = start, end = start + n;
    while (pos < end) {
        int64_t vec = pos >> QV__VEC_SHIFT, vs = vec << QV__VEC_SHIFT;
        int64_t vend = vs + QV__VEC < nd->count ? vs + QV__VEC : nd->count;
        int64_t hi = end < vend ? end : vend, lo = pos;
        int64_t m = hi - vs; /* values decoded from the vector start */
        if (lo == vs) {
            /* Decode the deltas straight into the output and sum in place. */
            if ((rc = qv__dec_word(d, nd->child[1], vs, m, o, err))) break;
            prefix(o, w, m, bases[vec]);
        } else {
            if (!tmp && !(tmp = qv__stack_push(&d->stack, (size_t)QV__VEC * w, err))) {
                rc = ENOMEM;
                break;
            }
            if ((rc = qv__dec_word(d, nd->child[1], vs, m, tmp, err))) break;
            prefix(tmp, w, m, bases[vec]);
            memcpy(o, tmp + (size_t)(lo - vs) * w, (size_t)(hi - lo) * w);
        }
        o += (size_t)(hi - lo) * w;
        pos = hi;
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* Integers. Child 0: the first value of each 1024-value vector; child 1:
 * deltas to the previous value (the slot at a vector start is ignored). */
static int delta_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 0, 0, 2, err))) return rc;
    if ((rc = qv__want_child(nd, 0, nd->pt, (nd->count + QV__VEC - 1) >> QV__VEC_SHIFT, err)))
        return rc;
    return qv__want_child(nd, 1, nd->pt, nd->count, err);
}

static int delta_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_DELTA, s->pt);
    return qv__delta_encode(e, s->u64, s->n, s->pt, s->depth, out);
}

const struct qv__encoding qv__enc_delta = {
    .id = QV_ENC_DELTA,
    .name = "delta",
    .decode_cost = 2,
    .dec_word = qv__delta_dec,
    .validate = delta_validate,
    .build = delta_build,
    .children = {"bases", "deltas"},
};
