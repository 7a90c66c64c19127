/* Rows of a decoded array gathered into a new one: how a scan's projection
 * reuses what its filter decoded of the same column (scan.c) instead of
 * decoding those rows again by a take.
 *
 * The source is an array as the column reader produces it (read_into /
 * take_into) and so is the result, buffer for buffer: a validity bitmap
 * exactly when the source has one (the column chunk has a validity
 * segment), the null slots' values as the decoder left them (copied from
 * the source, which the same decoder produced), decimals already widened,
 * offsets from 0 and an empty bytes buffer as the shared zero buffer. */
#include <string.h>

#include "arrow/arrow_internal.h"
#include "scan/scan_internal.h"

/* Bytes per value of a fixed-width type; 0 for booleans and offsets types,
 * -1 for types not gathered here. */
static int fixed_width(const struct qv_field *f) {
    switch (f->type) {
    case QV_TYPE_BOOL: case QV_TYPE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_UTF8:
    case QV_TYPE_LARGE_BINARY:
        return 0;
    case QV_TYPE_FIXED_BINARY: return f->byte_width > 0 ? f->byte_width : -1;
    default: return qv__field_fixed_width(f);
    }
}

bool qv__gather_supported(const struct qv_field *f) {
    return f->n_children == 0 && fixed_width(f) >= 0;
}

static inline bool get_bit(const uint8_t *b, int64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }

/* Bits idx[0..n) of src (from bit offset off) into a new bitmap of n bits,
 * its padding bits zero. */
static void gather_bits(const uint8_t *src, int64_t off, const int64_t *idx, int64_t n,
                        uint8_t *dst) {
    memset(dst, 0, (size_t)qv_bytes_for_bits(n));
    for (int64_t i = 0; i < n; i++)
        if (get_bit(src, off + idx[i])) dst[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* Fixed-width values; each width its own loop so the copy is inlined. */
static void gather_fixed(const uint8_t *src, int w, const int64_t *idx, int64_t n, uint8_t *dst) {
#define GATHER_W(W)                                                                                \
    for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * (W), src + (size_t)idx[i] * (W), (W)); \
    return
    switch (w) {
    case 1: GATHER_W(1);
    case 2: GATHER_W(2);
    case 4: GATHER_W(4);
    case 8: GATHER_W(8);
    case 16: GATHER_W(16);
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + (size_t)i * (size_t)w, src + (size_t)idx[i] * (size_t)w, (size_t)w);
        return;
    }
#undef GATHER_W
}

static int64_t off_at(const void *o, int w, int64_t i) {
    return w == 4 ? ((const int32_t *)o)[i] : ((const int64_t *)o)[i];
}
static void off_set(void *o, int w, int64_t i, int64_t v) {
    if (w == 4) ((int32_t *)o)[i] = (int32_t)v;
    else ((int64_t *)o)[i] = v;
}

static int gather_binary(const struct ArrowArray *src, int w, const int64_t *idx, int64_t n,
                         struct ArrowArray *out, struct qv_error *err) {
    const void *so = src->buffers[1];
    const uint8_t *sd = src->buffers[2];
    const int64_t base = src->offset;
    void *offs = qv_owned_array_alloc_buffer(out, 1, (size_t)(n + 1) * (size_t)w, err);
    if (!offs) return err ? err->code : ENOMEM;
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++)
        total += off_at(so, w, base + idx[i] + 1) - off_at(so, w, base + idx[i]);
    if (total == 0) {
        for (int64_t i = 0; i <= n; i++) off_set(offs, w, i, 0);
        return qv_owned_array_set_buffer(out, 2, (void *)qv_arrow_zero_buffer(), 0, err);
    }
    uint8_t *data = qv_owned_array_alloc_buffer(out, 2, (size_t)total, err);
    if (!data) return err ? err->code : ENOMEM;
    int64_t pos = 0;
    off_set(offs, w, 0, 0);
    for (int64_t i = 0; i < n; i++) {
        int64_t a = off_at(so, w, base + idx[i]), b = off_at(so, w, base + idx[i] + 1);
        memcpy(data + pos, sd + a, (size_t)(b - a));
        pos += b - a;
        off_set(offs, w, i + 1, pos);
    }
    return 0;
}

int qv__array_gather(const struct ArrowArray *src, const struct qv_field *f, const int64_t *idx,
                     int64_t n, struct ArrowArray *out, struct qv_reservation *res,
                     struct qv_error *err) {
    out->release = NULL;
    if (!qv__gather_supported(f))
        return qv_error_set(err, ENOTSUP, "gather: type of column '%s' is not flat",
                            f->name ? f->name : "");
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= src->length || (i && idx[i] <= idx[i - 1]))
            return qv_error_set(err, EINVAL,
                                "gather: index %lld at position %lld is outside the %lld rows "
                                "decoded or not increasing",
                                (long long)idx[i], (long long)i, (long long)src->length);
    int rc = qv_owned_array_create(out, f, res, err);
    if (rc) return rc;
    out->length = n;
    out->offset = 0;
    out->null_count = 0;
    const int64_t so = src->offset;
    if (src->buffers[0] && n > 0) {
        uint8_t *bits = qv_owned_array_alloc_buffer(out, 0, (size_t)qv_bytes_for_bits(n), err);
        if (!bits) goto fail;
        gather_bits(src->buffers[0], so, idx, n, bits);
        out->null_count = n - qv_bits_count(bits, 0, n);
    }
    int w = fixed_width(f);
    if (f->type == QV_TYPE_BOOL) {
        uint8_t *v = qv_owned_array_alloc_buffer(out, 1, (size_t)qv_bytes_for_bits(n), err);
        if (!v) goto fail;
        gather_bits(src->buffers[1], so, idx, n, v);
    } else if (w > 0) {
        uint8_t *v = qv_owned_array_alloc_buffer(out, 1, (size_t)n * (size_t)w, err);
        if (!v) goto fail;
        gather_fixed((const uint8_t *)src->buffers[1] + (size_t)so * (size_t)w, w, idx, n, v);
    } else {
        int ow = f->type == QV_TYPE_UTF8 || f->type == QV_TYPE_BINARY ? 4 : 8;
        if ((rc = gather_binary(src, ow, idx, n, out, err))) goto fail_rc;
    }
    return 0;
fail:
    rc = err && err->code ? err->code : ENOMEM;
fail_rc:
    out->release(out);
    return rc;
}
