/*
 * Plain: values as they are. The last resort of the cascade, and the leaf
 * under general-purpose compression. Binary values keep their bytes in
 * buffer 0 and their offsets in an integer child, which the cascade usually
 * turns into delta + bit-packed lengths; the offsets give random access.
 */
#include "encoding/enc_internal.h"

/* Copies `len` bytes into the arena unless they may be borrowed. */
static const uint8_t *keep(struct qv__enc *e, const void *p, uint64_t len, int borrow) {
    if (len == 0) return (const uint8_t *)""; /* non-NULL, never read */
    if (borrow) return p;
    uint8_t *c = qv__mem_alloc(&e->mem, (size_t)len, e->err);
    if (c) memcpy(c, p, (size_t)len);
    return c;
}

int qv__plain_encode_raw(struct qv__enc *e, const void *v, int64_t n, int pt, uint32_t width,
                         int borrow, struct qv__enode **out) {
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_PLAIN, pt, width, n);
    if (!nd) return ENOMEM;
    nd->nbufs = 1;
    nd->buf_len[0] = (uint64_t)n * width;
    if (!(nd->buf[0] = keep(e, v, nd->buf_len[0], borrow))) return ENOMEM;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

int qv__plain_encode_word(struct qv__enc *e, const uint64_t *v, int64_t n, int pt,
                          struct qv__enode **out) {
    unsigned w = qv__pt_width(pt);
    uint8_t *p = qv__mem_alloc(&e->mem, (size_t)n * w, e->err);
    if (!p) return ENOMEM;
    qv__narrow(v, w, n, p);
    int rc = qv__plain_encode_raw(e, p, n, pt, w, 1, out);
    if (rc) qv__mem_free(&e->mem, p);
    return rc;
}

int qv__plain_encode_bool(struct qv__enc *e, const uint8_t *bits, int64_t n, int borrow,
                          struct qv__enode **out) {
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_PLAIN, QV__PT_BOOL, 0, n);
    if (!nd) return ENOMEM;
    nd->nbufs = 1;
    nd->buf_len[0] = (uint64_t)(n + 7) / 8;
    /* Bits past n in the last byte are zeroed (the input may hold garbage
     * there): copy that byte. */
    if (n & 7) borrow = 0;
    uint8_t *c = (uint8_t *)keep(e, bits, nd->buf_len[0], borrow);
    if (!c) return ENOMEM;
    if (n & 7) c[n >> 3] &= (uint8_t)((1u << (n & 7)) - 1);
    nd->buf[0] = c;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

int qv__plain_encode_bin(struct qv__enc *e, const uint64_t *off, const uint8_t *data, int64_t n,
                         int depth, int borrow, struct qv__enode **out) {
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_PLAIN, QV__PT_BIN, 0, n);
    if (!nd) return ENOMEM;
    nd->nbufs = 1;
    nd->buf_len[0] = off[n];
    if (!(nd->buf[0] = keep(e, data, off[n], borrow))) return ENOMEM;
    nd->nchildren = 1;
    int rc = qv__cascade_int(e, off, n + 1, QV__PT_U64, depth + 1, QV_ENC_AUTO, &nd->child[0]);
    if (rc) return rc;
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

int qv__plain_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                       void *out, struct qv_error *err) {
    (void)d;
    (void)err;
    memcpy(out, nd->buf[0] + (size_t)start * nd->width, (size_t)n * nd->width);
    return 0;
}

int qv__plain_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                       uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    (void)d;
    (void)err;
    qv__copy_bits(bits, bit_off, nd->buf[0], start, n);
    return 0;
}

int qv__plain_dec_bin(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                      struct qv__binout *o, struct qv_error *err) {
    struct qv__mark mk = qv__stack_mark(&d->stack);
    const uint64_t limit = nd->buf_len[0];
    const uint8_t *data = nd->buf[0];
    int rc = 0;
    /* Work in blocks so the offsets scratch stays small and cache-resident. */
    const int64_t blk = 4 * QV__VEC;
    uint64_t *off = qv__stack_push(&d->stack, (size_t)((n < blk ? n : blk) + 1) * 8, err);
    if (!off) return ENOMEM;
    for (int64_t b = 0; b < n && !rc; b += blk) {
        int64_t m = n - b < blk ? n - b : blk;
        if ((rc = qv__dec_u64(d, nd->child[0], start + b, m + 1, off, err))) break;
        for (int64_t i = 0; i < m; i++)
            if (off[i + 1] < off[i]) {
                rc = qv__corrupt(err, nd, "offsets decrease at value %lld", (long long)(start + b + i));
                goto done;
            }
        if (off[m] > limit) {
            rc = qv__corrupt(err, nd, "offset %llu beyond the %llu data bytes",
                             (unsigned long long)off[m], (unsigned long long)limit);
            break;
        }
        uint64_t bytes = off[m] - off[0];
        if (!nd->inner && (rc = qv__dec_touch_bytes(d, data + off[0], bytes, err))) break;
        if (o->cap - o->size < bytes + 8 && (rc = qv__binout_reserve(o, bytes, err))) break;
        memcpy(o->data + o->size, data + off[0], bytes);
        size_t base = o->size - off[0];
        if (o->off64) {
            int64_t *dst = (int64_t *)o->offsets + o->i + 1;
            for (int64_t i = 0; i < m; i++) dst[i] = (int64_t)(base + off[i + 1]);
        } else {
            if (o->size + bytes > (size_t)INT32_MAX) {
                rc = qv_error_set(err, EOVERFLOW,
                                  "decode: binary data exceeds the int32 offset range");
                break;
            }
            int32_t *dst = (int32_t *)o->offsets + o->i + 1;
            for (int64_t i = 0; i < m; i++) dst[i] = (int32_t)(base + off[i + 1]);
        }
        o->size += bytes;
        o->i += m;
    }
done:
    qv__stack_release(&d->stack, mk);
    return rc;
}

/* ---- Record ---- */

/* Word and fixed types and bool: buffer 0 holds the values (a bitmap for
 * bool), exactly. Binary: buffer 0 holds the bytes, child 0 the n + 1 u64
 * offsets into them. */
static int plain_validate(const struct qv__node *nd, struct qv_error *err) {
    int rc;
    if (nd->pt == QV__PT_BIN) {
        if ((rc = qv__want_shape(nd, 0, 1, 1, err))) return rc;
        return qv__want_child(nd, 0, QV__PT_U64, nd->count + 1, err);
    }
    if ((rc = qv__want_shape(nd, 0, 1, 0, err))) return rc;
    if (nd->buf_len[0] != qv__node_value_bytes(nd))
        return qv__corrupt(err, nd, "buffer holds %llu bytes, %lld values need %llu",
                           (unsigned long long)nd->buf_len[0], (long long)nd->count,
                           (unsigned long long)qv__node_value_bytes(nd));
    return 0;
}

/* Top-level inputs (depth 0) are the caller's and outlive the encode call,
 * so they are borrowed; values the cascade derived are copied. */
static int plain_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    const int borrow = s->depth == 0;
    if (qv__pt_is_int(s->pt)) return qv__plain_encode_word(e, s->u64, s->n, s->pt, out);
    if (qv__pt_is_float(s->pt))
        return qv__plain_encode_raw(e, s->raw, s->n, s->pt, s->width, 0, out);
    if (s->pt == QV__PT_BOOL) return qv__plain_encode_bool(e, s->bits, s->n, borrow, out);
    if (s->pt == QV__PT_BIN)
        return qv__plain_encode_bin(e, s->off, s->data, s->n, s->depth, borrow, out);
    return qv__plain_encode_raw(e, s->raw, s->n, QV__PT_FIXED, s->width, borrow, out);
}

const struct qv__encoding qv__enc_plain = {
    .id = QV_ENC_PLAIN,
    .name = "plain",
    .decode_cost = 0,
    .flags = QV__ENC_ZERO_WIDTH,
    .dec_word = qv__plain_dec_word,
    .dec_bool = qv__plain_dec_bool,
    .dec_bin = qv__plain_dec_bin,
    .validate = plain_validate,
    .build = plain_build,
    .children = {"offsets"},
};
