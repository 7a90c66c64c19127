/* Constant: one value repeated `count` times (bool: param 0; others: buffer 0). */
#include "base/cpu_internal.h"
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

/* n copies of the w-byte value at v (w a constant where it is inlined):
 * the value is read once, into a register, not once a copy. */
static QV__ALWAYS_INLINE void fill_words(uint8_t *o, const uint8_t *v, int64_t n, unsigned w) {
    uint64_t x = 0;
    memcpy(&x, v, w);
    for (int64_t i = 0; i < n; i++) memcpy(o + (size_t)i * w, &x, w);
}

int qv__constant_dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                          void *out, struct qv_error *err) {
    (void)d;
    (void)err;
    (void)start;
    const uint8_t *v = nd->buf[0];
    switch (nd->width) {
    case 1: memset(out, v[0], (size_t)n); break;
    case 2: fill_words(out, v, n, 2); break;
    case 4: fill_words(out, v, n, 4); break;
    case 8: fill_words(out, v, n, 8); break;
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

/* ---- Record ---- */

/* bool: param 0 is the value (0 or 1). Others: buffer 0 is the value's
 * bytes (exactly the width for word and fixed types; any length for binary,
 * within the chunk limit once repeated). */
static int constant_validate(const struct qv__node *nd, struct qv_error *err) {
    const int64_t n = nd->count;
    int rc;
    if (nd->pt == QV__PT_BOOL) {
        if ((rc = qv__want_shape(nd, 1, 0, 0, err))) return rc;
        if (nd->params[0] != 0 && nd->params[0] != 1)
            return qv__corrupt(err, nd, "boolean value %lld", (long long)nd->params[0]);
        return 0;
    }
    if ((rc = qv__want_shape(nd, 0, 1, 0, err))) return rc;
    if (nd->pt != QV__PT_BIN && nd->buf_len[0] != nd->width)
        return qv__corrupt(err, nd, "value has %llu bytes, expected %u",
                           (unsigned long long)nd->buf_len[0], nd->width);
    if (nd->pt == QV__PT_BIN && nd->buf_len[0] &&
        (uint64_t)n > QV_ENC_MAX_BYTES / nd->buf_len[0])
        return qv__corrupt(err, nd, "%lld copies of %llu bytes exceed the chunk limit",
                           (long long)n, (unsigned long long)nd->buf_len[0]);
    return 0;
}

static int not_equal(struct qv__enc *e) {
    return qv_error_set(e->err, EINVAL, "encode: constant needs equal values");
}

static int constant_build(struct qv__enc *e, const struct qv__src *s, struct qv__enode **out) {
    const int64_t n = s->n;
    if (qv__pt_is_word(s->pt)) {
        /* Floats come as bit patterns, so NaN payloads and -0.0 stay exact. */
        if (s->s->umin != s->s->umax) return not_equal(e);
        uint8_t b[8] = {0};
        uint64_t x = n ? s->u64[0] : 0;
        qv__narrow(&x, s->width, 1, b);
        return qv__constant_encode(e, s->pt, s->width, n, b, s->width, out);
    }
    if (s->pt == QV__PT_BOOL) {
        if (s->ones != 0 && s->ones != n)
            return qv_error_set(e->err, EINVAL, "encode: constant needs equal booleans");
        uint8_t b = s->ones != 0;
        return qv__constant_encode(e, QV__PT_BOOL, 0, n, &b, 1, out);
    }
    if (s->pt == QV__PT_BIN) {
        uint64_t l0 = n ? s->off[1] - s->off[0] : 0;
        for (int64_t i = 1; i < n; i++)
            if (s->off[i + 1] - s->off[i] != l0 ||
                memcmp(s->data + s->off[i], s->data + s->off[0], l0))
                return not_equal(e);
        return qv__constant_encode(e, QV__PT_BIN, 0, n, n ? s->data + s->off[0] : NULL,
                                   (size_t)l0, out);
    }
    const uint8_t *v = s->raw;
    const uint32_t w = s->width;
    for (int64_t i = 1; i < n; i++)
        if (memcmp(v + (size_t)i * w, v, w)) return not_equal(e);
    if (n == 0 && w && !(v = qv__mem_calloc(&e->mem, w, e->err))) return ENOMEM;
    return qv__constant_encode(e, QV__PT_FIXED, w, n, v, w, out);
}

const struct qv__encoding qv__enc_constant = {
    .id = QV_ENC_CONSTANT,
    .name = "constant",
    .decode_cost = 0,
    .flags = QV__ENC_ZERO_WIDTH,
    .dec_word = qv__constant_dec_word,
    .dec_bool = qv__constant_dec_bool,
    .dec_bin = qv__constant_dec_bin,
    .validate = constant_validate,
    .build = constant_build,
    .bool_params = {"value"},
};
