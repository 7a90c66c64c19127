/*
 * Zig-zag: maps signed values of small magnitude to small unsigned ones
 * (0, -1, 1, -2 -> 0, 1, 2, 3) at the type's width. Useful ahead of
 * bit-packing when values straddle zero and a frame of reference would
 * be skewed by outliers on one side.
 */
#include "encoding/enc_internal.h"

int qv__zigzag_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, int depth,
                      struct qv__enode **out) {
    const unsigned bits = qv__pt_width(pt) * 8;
    const uint64_t mask = qv__mask(bits);
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_ZIGZAG, pt, qv__pt_width(pt), n);
    uint64_t *z = nd ? qv__mem_alloc(&e->mem, (size_t)(n ? n : 1) * 8, e->err) : NULL;
    if (!z) return ENOMEM;
    for (int64_t i = 0; i < n; i++) z[i] = qv_zigzag_encode64(qv__sext(v[i], bits)) & mask;
    e->under_zigzag++;
    int rc = qv__cascade_int(e, z, n, pt, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    e->under_zigzag--;
    qv__mem_free(&e->mem, z);
    if (rc) return rc;
    nd->nchildren = 1;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

#define UNZZ(T)                                                                                  \
    static void unzz_##T(T *o, int64_t n) {                                                      \
        for (int64_t i = 0; i < n; i++) o[i] = (T)((o[i] >> 1) ^ (T)(0 - (T)(o[i] & 1)));       \
    }
UNZZ(uint8_t)
UNZZ(uint16_t)
UNZZ(uint32_t)
UNZZ(uint64_t)

int qv__zigzag_dec(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                   struct qv_error *err) {
    int rc = qv__dec_word(d, nd->child[0], start, n, out, err);
    if (rc) return rc;
    switch (nd->width) {
    case 1: unzz_uint8_t(out, n); break;
    case 2: unzz_uint16_t(out, n); break;
    case 4: unzz_uint32_t(out, n); break;
    default: unzz_uint64_t(out, n); break;
    }
    return 0;
}

/* ---- Record ---- */

/* Integers. Child 0: the zig-zagged values, same type and count. */
static int zigzag_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 0, 0, 1, err))) return rc;
    return qv__want_child(nd, 0, nd->pt, nd->count, err);
}

static int zigzag_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_ZIGZAG, s->pt);
    return qv__zigzag_encode(e, s->u64, s->n, s->pt, s->depth, out);
}

const struct qv__encoding qv__enc_zigzag = {
    .id = QV_ENC_ZIGZAG,
    .name = "zigzag",
    .decode_cost = 2,
    .dec_word = qv__zigzag_dec,
    .validate = zigzag_validate,
    .build = zigzag_build,
    .children = {"values"},
};
