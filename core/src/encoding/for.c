/*
 * Frame of reference: value = reference + residual (wrapping at the type's
 * width), residuals bit-packed. The reference is the minimum under either
 * the unsigned or the signed view, whichever gives the narrower range, so
 * small negative numbers pack as well as small positive ones. Decoding a
 * bit-packed child adds the reference inside the unpack kernel.
 */
#include "encoding/enc_internal.h"

int qv__for_over(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, unsigned bits,
                 uint64_t ref, qv__residuals_fn child, const void *arg, struct qv__enode **out) {
    const uint64_t mask = qv__mask(bits);
    uint64_t *res = qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err);
    if (!res) return ENOMEM;
    for (int64_t i = 0; i < n; i++) res[i] = (v[i] - ref) & mask;
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_FOR, pt, qv__pt_width(pt), n);
    int rc = nd ? child(e, res, n, pt, arg, &nd->child[0]) : ENOMEM;
    qv__mem_free(&e->mem, res);
    if (rc) return rc;
    nd->nparams = 1;
    nd->params[0] = (int64_t)ref;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

static int packed_residuals(struct qv__enc *e, const uint64_t *res, int64_t n, int pt,
                            const void *arg, struct qv__enode **out) {
    return qv__bitpack_encode(e, res, n, pt, *(const unsigned *)arg, out);
}

int qv__for_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                   const struct qv__istats *s, struct qv__enode **out) {
    uint64_t ref;
    unsigned w = qv__istats_for_bits(s, &ref);
    if (ref == 0) return qv__bitpack_encode(e, v, n, pt, w, out);
    return qv__for_over(e, v, n, pt, s->bits, ref, packed_residuals, &w, out);
}

/* Adds `base` to n values of width w in place. */
static void add_base(void *out, unsigned w, int64_t n, uint64_t base) {
    switch (w) {
    case 1: {
        uint8_t *o = out, b = (uint8_t)base;
        for (int64_t i = 0; i < n; i++) o[i] = (uint8_t)(o[i] + b);
        break;
    }
    case 2: {
        uint16_t *o = out, b = (uint16_t)base;
        for (int64_t i = 0; i < n; i++) o[i] = (uint16_t)(o[i] + b);
        break;
    }
    case 4: {
        uint32_t *o = out, b = (uint32_t)base;
        for (int64_t i = 0; i < n; i++) o[i] += b;
        break;
    }
    default: {
        uint64_t *o = out;
        for (int64_t i = 0; i < n; i++) o[i] += base;
        break;
    }
    }
}

/* out[i] = in[i] + base for n values of width ow read from width iw < ow
 * (zero-extended). in and out must not overlap. */
static void widen_add(const uint8_t *in, unsigned iw, void *out, unsigned ow, int64_t n,
                      uint64_t base) {
#define WIDEN(IT, OT)                                                                        \
    do {                                                                                     \
        OT *o = out;                                                                         \
        const OT b = (OT)base;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                    \
            IT x;                                                                            \
            memcpy(&x, in + (size_t)i * sizeof(IT), sizeof(IT));                             \
            o[i] = (OT)(x + b);                                                              \
        }                                                                                    \
    } while (0)
    if (iw == 1 && ow == 2) WIDEN(uint8_t, uint16_t);
    else if (iw == 1 && ow == 4) WIDEN(uint8_t, uint32_t);
    else if (iw == 1) WIDEN(uint8_t, uint64_t);
    else if (iw == 2 && ow == 4) WIDEN(uint16_t, uint32_t);
    else if (iw == 2) WIDEN(uint16_t, uint64_t);
    else WIDEN(uint32_t, uint64_t);
#undef WIDEN
}

/* The n values of width iw at the tail of out (its last n * iw bytes)
 * widened forward to width ow > iw, adding ref, a block at a time through
 * a local copy: block [i, i + B) is copied out before slots [i, i + B) are
 * written, and those slots end at or before the tail's element i + B, so
 * no unread element is overwritten. */
static void widen_tail(void *out, unsigned ow, unsigned iw, int64_t n, uint64_t ref) {
    const uint8_t *tail = (const uint8_t *)out + (size_t)n * (ow - iw);
    enum { B = 256 };
    uint64_t blk[B];
    for (int64_t i = 0; i < n; i += B) {
        int64_t m = n - i < B ? n - i : B;
        memcpy(blk, tail + (size_t)i * iw, (size_t)m * iw);
        widen_add((const uint8_t *)blk, iw, (uint8_t *)out + (size_t)i * ow, ow, m, ref);
    }
}

/* Residuals narrower than the node (format 4.0): a plain child is widened
 * straight from its buffer (the entropy stage's sequential frames); any
 * other child is decoded into the tail of `out` and widened (widen_tail). */
static int narrow_dec(struct qv__dec *d, struct qv__node *nd, struct qv__node *c, int64_t start,
                      int64_t n, void *out, uint64_t ref, struct qv_error *err) {
    const unsigned ow = nd->width, iw = c->width;
    if (c->enc == QV_ENC_PLAIN) {
        int rc = qv__dec_check(d, c, start, n, err);
        if (rc) return rc;
        widen_add(c->buf[0] + (size_t)start * iw, iw, out, ow, n, ref);
        return 0;
    }
    uint8_t *tail = (uint8_t *)out + (size_t)n * (ow - iw);
    int rc = qv__dec_word(d, c, start, n, tail, err);
    if (!rc) widen_tail(out, ow, iw, n, ref);
    return rc;
}

int qv__for_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                struct qv_error *err) {
    uint64_t ref = (uint64_t)nd->params[0];
    struct qv__node *c = nd->child[0];
    if (c->pt != nd->pt) return narrow_dec(d, nd, c, start, n, out, ref, err);
    if (c->enc == QV_ENC_BITPACK) return qv__bitpack_dec(d, c, start, n, out, ref, err);
    int rc = qv__dec_word(d, c, start, n, out, err);
    if (!rc) add_base(out, nd->width, n, ref);
    return rc;
}

/* Values at rows[0..n): the residuals' own take (a bit-packed child reads
 * a sparse take's values in place), then the reference added. */
static int for_take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t n,
                         void *out, struct qv_error *err) {
    const uint64_t ref = (uint64_t)nd->params[0];
    struct qv__node *c = nd->child[0];
    const unsigned ow = nd->width, iw = c->width;
    if (c->pt != nd->pt) {
        int rc = qv__take_word(d, c, rows, n, iw, (uint8_t *)out + (size_t)n * (ow - iw), err);
        if (!rc) widen_tail(out, ow, iw, n, ref);
        return rc;
    }
    int rc = qv__take_word(d, c, rows, n, ow, out, err);
    if (!rc) add_base(out, ow, n, ref);
    return rc;
}

/* ---- Record ---- */

/* Integers. Param 0: the reference; child 0: the residuals, same count,
 * an integer type no wider than the node's (format 4.0 on; before, the same
 * type). */
static int for_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 1, 0, 1, err))) return rc;
    const struct qv__node *c = nd->child[0];
    if (qv__pt_is_int(c->pt) && c->width < nd->width)
        return qv__want_child(nd, 0, c->pt, nd->count, err);
    return qv__want_child(nd, 0, nd->pt, nd->count, err);
}

static int for_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_FOR, s->pt);
    if (s->forced) {
        /* A forced FOR stays a FOR node even with a zero reference. */
        struct qv__istats t = *s->s;
        uint64_t ref;
        qv__istats_for_bits(s->s, &ref);
        if (ref == 0) {
            struct qv__enode *nd = qv__enode_new(e, QV_ENC_FOR, s->pt, s->width, s->n);
            if (!nd) return ENOMEM;
            int rc = qv__bitpack_encode(e, s->u64, s->n, s->pt, qv__istats_for_bits(&t, &ref),
                                        &nd->child[0]);
            if (rc) return rc;
            nd->nparams = 1;
            nd->nchildren = 1;
            qv__enode_finish(nd);
            *out = nd;
            return 0;
        }
    }
    return qv__for_encode(e, s->u64, s->n, s->pt, s->s, out);
}

const struct qv__encoding qv__enc_for = {
    .id = QV_ENC_FOR,
    .name = "for",
    .decode_cost = 1,
    .dec_word = qv__for_dec,
    .take_word = for_take_word,
    .validate = for_validate,
    .build = for_build,
    .params = {"ref"},
    .children = {"residuals"},
};
