/* Constant: one value repeated `count` times (bool: param 0; others: buffer 0). */
#include "encoding/enc_internal.h"

int qv__constant_encode(struct qv__enc *e, int pt, uint32_t width, int64_t n, const void *value,
                        size_t value_len, struct qv__enode **out) {
    struct qv__enode *nd = qv__enode_new(e, QV_ENC_CONSTANT, pt, width, n);
    if (!nd) return ENOMEM;
    if (pt == QV__PT_BOOL) {
        nd->nparams = 1;
        nd->params[0] = *(const uint8_t *)value ? 1 : 0;
    } else {
        uint8_t *p = qv__mem_alloc(&e->mem, value_len ? value_len : 1, e->err);
        if (!p) return ENOMEM;
        if (value_len) memcpy(p, value, value_len);
        nd->nbufs = 1;
        nd->buf[0] = p;
        nd->buf_len[0] = value_len;
    }
    qv__enode_finish(nd);
    *out = nd;
    return 0;
}

int qv__constant_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                          void *out, struct qv_error *err) {
    (void)d;
    (void)err;
    (void)start;
    const uint8_t *v = nd->buf[0];
    switch (nd->width) {
    case 1: memset(out, v[0], (size_t)n); break;
    case 2: {
        uint16_t x;
        memcpy(&x, v, 2);
        uint16_t *o = out;
        for (int64_t i = 0; i < n; i++) o[i] = x;
        break;
    }
    case 4: {
        uint32_t x;
        memcpy(&x, v, 4);
        uint32_t *o = out;
        for (int64_t i = 0; i < n; i++) o[i] = x;
        break;
    }
    case 8: {
        uint64_t x;
        memcpy(&x, v, 8);
        uint64_t *o = out;
        for (int64_t i = 0; i < n; i++) o[i] = x;
        break;
    }
    default: {
        uint8_t *o = out;
        for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * nd->width, v, nd->width);
        break;
    }
    }
    return 0;
}

int qv__constant_dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                          uint8_t *bits, int64_t bit_off, struct qv_error *err) {
    (void)d;
    (void)err;
    (void)start;
    qv_bits_fill(bits, bit_off, n, (int)nd->params[0]);
    return 0;
}

int qv__constant_dec_bin(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                         struct qv__binout *o, struct qv_error *err) {
    (void)d;
    (void)start;
    size_t len = (size_t)nd->buf_len[0];
    int rc = qv__binout_reserve(o, len * (size_t)n, err);
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++)
        if ((rc = qv__binout_push(o, nd->buf[0], len, err))) return rc;
    return 0;
}
