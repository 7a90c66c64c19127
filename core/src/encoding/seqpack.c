/*
 * Sequential packing (format 8.0): small integers at 1, 2 or 4 bits each,
 * value after value, least significant bits first. Bitpack's lanes
 * interleave 32 values a word, so a general-purpose coder over them sees
 * each value's neighbours 32 apart; here a byte holds 8, 4 or 2
 * consecutive values, so zstd's byte symbols and matches see the order of
 * the data. The entropy stage lays out narrow residuals this way inside
 * its frames (entropy.c): lineitem's l_linestatus (2 values) and
 * l_returnflag (3) repeat along the lines of an order, which zstd finds in
 * these bytes and in neither bitpack's lanes nor one byte a value.
 */
#include "encoding/enc_internal.h"

static int width_ok(int64_t w) { return w == 1 || w == 2 || w == 4; }

uint64_t qv__seqpack_bytes(int64_t n, unsigned w) { return ((uint64_t)n * w + 7) / 8; }

void qv__seqpack_put(const uint64_t *v, int64_t n, unsigned w, uint8_t *out) {
    const uint64_t bytes = qv__seqpack_bytes(n, w);
    memset(out, 0, (size_t)bytes);
    const unsigned per = 8 / w, mask = (1u << w) - 1;
    for (int64_t i = 0; i < n; i++)
        out[i / per] |= (uint8_t)(((unsigned)v[i] & mask) << ((unsigned)(i % per) * w));
}

int qv__seqpack_encode(struct qv__enc *e, const uint64_t *v, int64_t n, int pt, unsigned w,
                       struct qv__enode **out) {
    if (!qv__pt_is_int(pt) || !width_ok(w)) return qv__enc_unsupported(e, QV_ENC_SEQPACK, pt);
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_SEQPACK, pt, qv__pt_width(pt), n);
    if (!nd) return ENOMEM;
    nd->nparams = 1;
    nd->params[0] = w;
    nd->nbufs = 1;
    nd->buf_len[0] = qv__seqpack_bytes(n, w);
    uint8_t *p = qv__mem_alloc(&e->mem, (size_t)(nd->buf_len[0] ? nd->buf_len[0] : 1), e->err);
    if (!p) return ENOMEM;
    qv__seqpack_put(v, n, w, p);
    nd->buf[0] = p;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

/* Byte b spread into its 8 / w values, one byte each (little-endian words
 * of 8, 4 or 2 bytes). */
#define SP1(b) \
    ((uint64_t)((b)&1) | (uint64_t)((b) >> 1 & 1) << 8 | (uint64_t)((b) >> 2 & 1) << 16 | \
     (uint64_t)((b) >> 3 & 1) << 24 | (uint64_t)((b) >> 4 & 1) << 32 |                   \
     (uint64_t)((b) >> 5 & 1) << 40 | (uint64_t)((b) >> 6 & 1) << 48 | (uint64_t)((b) >> 7 & 1) << 56)
#define SP2(b) \
    ((uint32_t)((b)&3) | (uint32_t)((b) >> 2 & 3) << 8 | (uint32_t)((b) >> 4 & 3) << 16 | \
     (uint32_t)((b) >> 6 & 3) << 24)
#define SP4(b) ((uint16_t)((b)&15) | (uint16_t)((b) >> 4 & 15) << 8)
#define R4(M, b) M(b), M((b) + 1), M((b) + 2), M((b) + 3)
#define R16(M, b) R4(M, b), R4(M, (b) + 4), R4(M, (b) + 8), R4(M, (b) + 12)
#define R64(M, b) R16(M, b), R16(M, (b) + 16), R16(M, (b) + 32), R16(M, (b) + 48)
#define R256(M) R64(M, 0), R64(M, 64), R64(M, 128), R64(M, 192)
static const uint64_t spread1[256] = {R256(SP1)};
static const uint32_t spread2[256] = {R256(SP2)};
static const uint16_t spread4[256] = {R256(SP4)};
#undef R256
#undef R64
#undef R16
#undef R4
#undef SP4
#undef SP2
#undef SP1

/* Values [start, start + n) as bytes into o (n bytes). */
static void unpack_u8(const uint8_t *buf, unsigned w, int64_t start, int64_t n, uint8_t *o) {
    const unsigned per = 8 / w, mask = (1u << w) - 1;
    int64_t i = 0;
    /* Up to the first whole byte, value by value. */
    for (; i < n && (start + i) % per; i++) {
        const int64_t k = start + i;
        o[i] = (uint8_t)(buf[k / per] >> ((unsigned)(k % per) * w) & mask);
    }
    const uint8_t *b = buf + (start + i) / per;
    int64_t whole = (n - i) / per;
    switch (w) {
    case 1:
        for (int64_t j = 0; j < whole; j++) memcpy(o + i + 8 * j, &spread1[b[j]], 8);
        break;
    case 2:
        for (int64_t j = 0; j < whole; j++) memcpy(o + i + 4 * j, &spread2[b[j]], 4);
        break;
    default:
        for (int64_t j = 0; j < whole; j++) memcpy(o + i + 2 * j, &spread4[b[j]], 2);
        break;
    }
    i += whole * per;
    for (; i < n; i++) {
        const int64_t k = start + i;
        o[i] = (uint8_t)(buf[k / per] >> ((unsigned)(k % per) * w) & mask);
    }
}

static int seqpack_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                            void *out, struct qv_error *err) {
    const unsigned w = (unsigned)nd->params[0];
    if (nd->width == 1) {
        unpack_u8(nd->buf[0], w, start, n, out);
        return 0;
    }
    /* Wider values: a vector of bytes at a time, zero-extended. */
    struct qv__mark mk = qv__stack_mark(&d->stack);
    uint8_t *tmp = qv__stack_push(&d->stack, QV__VEC, err);
    if (!tmp) return ENOMEM;
    uint8_t *o = out;
    for (int64_t i = 0; i < n; i += QV__VEC) {
        const int64_t m = n - i < QV__VEC ? n - i : QV__VEC;
        unpack_u8(nd->buf[0], w, start + i, m, tmp);
        switch (nd->width) {
        case 2:
            for (int64_t j = 0; j < m; j++) ((uint16_t *)(void *)o)[i + j] = tmp[j];
            break;
        case 4:
            for (int64_t j = 0; j < m; j++) ((uint32_t *)(void *)o)[i + j] = tmp[j];
            break;
        default: qv__widen(tmp, 1, m, (uint64_t *)(void *)o + i); break;
        }
    }
    qv__stack_release(&d->stack, mk);
    return 0;
}

/* ---- Record ---- */

/* Integers. Param 0: the width w, 1, 2 or 4 bits. Buffer 0: value i at
 * bits (i x w) mod 8 up of byte (i x w) / 8, exactly ceil(count x w / 8)
 * bytes. */
static int seqpack_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "type %s", qv__pt_name(nd->pt));
    if ((rc = qv__want_shape(nd, 1, 1, 0, err))) return rc;
    if (!width_ok(nd->params[0]))
        return qv__corrupt(err, nd, "bit width %lld (1, 2 or 4 only)", (long long)nd->params[0]);
    return qv__want_packed(nd, qv__seqpack_bytes(nd->count, (unsigned)nd->params[0]), err);
}

/* Forced (the cascade never proposes it; the entropy stage lays frames out
 * with it): the values' width rounded up to 1, 2 or 4 bits; wider values
 * cannot be held. */
static int seqpack_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    if (!qv__pt_is_int(s->pt)) return qv__enc_unsupported(e, QV_ENC_SEQPACK, s->pt);
    const unsigned b = qv__bits(s->s->umax);
    if (b > 4)
        return qv_error_set(e->err, EINVAL,
                            "encode: seqpack holds values of at most 4 bits; these need %u", b);
    return qv__seqpack_encode(e, s->u64, s->n, s->pt, b <= 1 ? 1 : b == 2 ? 2 : 4, out);
}

const struct qv__encoding qv__enc_seqpack = {
    .id = QV_ENC_SEQPACK,
    .name = "seqpack",
    .decode_cost = 2,
    .dec_word = seqpack_dec_word,
    .validate = seqpack_validate,
    .build = seqpack_build,
    .params = {"w"},
};
