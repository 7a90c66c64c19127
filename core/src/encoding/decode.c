/*
 * The decoder: opens an encoded chunk (parse + validate once), dispatches
 * range decodes to the encodings, and builds `take` on range decodes of the
 * 1024-value vectors that hold the requested rows.
 */
#include <stddef.h>

#include "base/corrupt.h"
#include "base/dcheck.h"
#include "base/rows.h"
#include "encoding/dec_verify.h"
#include "encoding/enc_internal.h"

/* Opening a decoder and taking a few rows should cost a single allocation:
 * the parsed nodes and small caches come from an inline bump region, and
 * the scratch stack starts in an inline chunk big enough for the nested
 * one-vector temporaries of random access. */
#define DEC_SLAB 12288
#define DEC_STACK (32768 + QV__STACK_CHUNK_HEADER)

struct qv_decoder {
    struct qv__dec d;
    enum qv_value_kind kind;
    int32_t fixed_width;
    int64_t count;
    int pt;
    const uint8_t *parsed; /* the bytes the tree was parsed from */
    size_t parsed_size;
    /* take() on binary kinds: a reusable buffer for one vector's strings. */
    uint8_t *take_data;
    size_t take_cap;
    /* qv_decoder_filter's state (filter.c), from the arena. */
    void *filter;
    /* Inline memory (not zeroed at open; see above). */
    _Alignas(QV_ALIGNMENT) uint8_t slab[DEC_SLAB];
    _Alignas(QV_ALIGNMENT) uint8_t stack0[DEC_STACK];
};

/* ---- Dispatch ----
 * One indirect call per node and range through the node's record (set and
 * bounds-checked by the parser); the encodings' loops run inside. A record
 * without a decoder for the family means the node claims a type its
 * encoding cannot hold: the shape checks refuse that at open, and this is
 * the second line. After a decode the output counts are the decoder's own
 * arithmetic, checked in debug builds. */

int qv__dec_word(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, void *out,
                 struct qv_error *err) {
    if (n <= 0) return 0;
    QV_DCHECK(start >= 0 && start <= nd->count && n <= nd->count - start);
    if (!nd->codec->dec_word)
        return qv__corrupt(err, nd, "encoding cannot hold %s values", qv__pt_name(nd->pt));
    int rc = qv__dec_check(d, nd, start, n, err);
    if (rc) return rc;
    return nd->codec->dec_word(d, nd, start, n, out, err);
}

int qv__dec_bool(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, uint8_t *bits,
                 int64_t bit_off, struct qv_error *err) {
    if (n <= 0) return 0;
    QV_DCHECK(start >= 0 && start <= nd->count && n <= nd->count - start);
    if (!nd->codec->dec_bool) return qv__corrupt(err, nd, "encoding cannot hold booleans");
    int rc = qv__dec_check(d, nd, start, n, err);
    if (rc) return rc;
    return nd->codec->dec_bool(d, nd, start, n, bits, bit_off, err);
}

int qv__dec_bin(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                struct qv__binout *o, struct qv_error *err) {
    if (n <= 0) return 0;
    QV_DCHECK(start >= 0 && start <= nd->count && n <= nd->count - start);
    if (!nd->codec->dec_bin) return qv__corrupt(err, nd, "encoding cannot hold binary values");
    const int64_t i0 = o->i; /* read by the check below (type-checked in release builds) */
    int rc = qv__dec_check(d, nd, start, n, err);
    if (rc) return rc;
    rc = nd->codec->dec_bin(d, nd, start, n, o, err);
    /* A binary decoder ends exactly one offset per value and never writes
     * past the capacity it reserved. */
    QV_DCHECK(rc || o->i == i0 + n);
    QV_DCHECK(o->size <= o->cap);
    return rc;
}

int qv__dec_u64(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n, uint64_t *out,
                struct qv_error *err) {
    unsigned w = nd->width;
    if (w == 8) return qv__dec_word(d, nd, start, n, out, err);
    /* Decode the narrow values into the tail of `out`, then widen forward:
     * element i is read before slot i is written and slot i never reaches
     * an unread element. */
    uint8_t *tail = (uint8_t *)out + (size_t)n * (8 - w);
    int rc = qv__dec_word(d, nd, start, n, tail, err);
    if (rc) return rc;
    switch (w) {
    case 1:
        for (int64_t i = 0; i < n; i++) out[i] = tail[i];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) {
            uint16_t v;
            memcpy(&v, tail + 2 * i, 2);
            out[i] = v;
        }
        break;
    default:
        for (int64_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, tail + 4 * i, 4);
            out[i] = v;
        }
        break;
    }
    return 0;
}

struct u64_cache {
    uint64_t *v;
};

int qv__dec_cached_u64(struct qv__dec *d, struct qv__node *nd, int increasing, uint64_t limit,
                       const uint64_t **out, struct qv_error *err) {
    struct u64_cache *c = nd->cache;
    if (c) {
        *out = c->v;
        return 0;
    }
    if (!qv__pt_is_int(nd->pt)) return qv__corrupt(err, nd, "expected integers");
    c = qv__mem_small(&d->mem, sizeof *c, err);
    if (!c) return ENOMEM;
    uint64_t *v = qv__mem_buf(&d->mem, (size_t)(nd->count ? nd->count : 1) * 8, err);
    if (!v) return ENOMEM;
    int rc = qv__dec_u64(d, nd, 0, nd->count, v, err);
    if (rc) return rc;
    if (increasing) {
        for (int64_t i = 0; i < nd->count; i++) {
            if (v[i] >= limit || (i && v[i] <= v[i - 1]))
                return qv__corrupt(err, nd,
                                   "position list not increasing or out of range at entry %lld",
                                   (long long)i);
        }
    }
    c->v = v;
    nd->cache = c;
    *out = v;
    return 0;
}

struct qv__dec *qv__decoder_dec(struct qv_decoder *dc) { return &dc->d; }
enum qv_value_kind qv__decoder_kind(const struct qv_decoder *dc) { return dc->kind; }
void **qv__decoder_filter_slot(struct qv_decoder *dc) { return &dc->filter; }

/* ---- Verification (dec_verify.h) ---- */

int qv__dec_touch(struct qv__dec *d, struct qv__node *nd, int64_t start, int64_t n,
                  struct qv_error *err) {
    if (n <= 0 || nd->nbufs != 1) return 0;
    uint64_t lo, hi;
    if (nd->enc == QV_ENC_BITPACK) {
        unsigned w = (unsigned)nd->params[0];
        lo = (uint64_t)(start >> QV__VEC_SHIFT) * 128 * w;
        hi = ((uint64_t)((start + n - 1) >> QV__VEC_SHIFT) + 1) * 128 * w;
    } else if (nd->enc == QV_ENC_SEQPACK) {
        unsigned w = (unsigned)nd->params[0];
        lo = (uint64_t)start * w / 8;
        hi = ((uint64_t)(start + n) * w + 7) / 8;
    } else if (nd->pt == QV__PT_BOOL) {
        lo = (uint64_t)start / 8;
        hi = ((uint64_t)(start + n) + 7) / 8;
    } else {
        lo = (uint64_t)start * nd->width;
        hi = (uint64_t)(start + n) * nd->width;
    }
    if (hi > nd->buf_len[0]) hi = nd->buf_len[0];
    if (lo >= hi) return 0;
    return qv__dec_touch_bytes(d, nd->buf[0] + lo, hi - lo, err);
}


int qv__decoder_verify_all(struct qv_decoder *dc, struct qv_error *err) {
    if (!dc->d.vfn) return 0;
    return dc->d.vfn(dc->d.vctx, 0, dc->parsed_size, err);
}

/* ---- Public API ---- */

static int kind_pt(enum qv_value_kind kind) {
    switch (kind) {
    case QV_KIND_BOOL: return QV__PT_BOOL;
    case QV_KIND_INT8:
    case QV_KIND_UINT8: return QV__PT_U8;
    case QV_KIND_INT16:
    case QV_KIND_UINT16: return QV__PT_U16;
    case QV_KIND_INT32:
    case QV_KIND_UINT32: return QV__PT_U32;
    case QV_KIND_INT64:
    case QV_KIND_UINT64: return QV__PT_U64;
    case QV_KIND_FLOAT32: return QV__PT_F32;
    case QV_KIND_FLOAT64: return QV__PT_F64;
    case QV_KIND_BINARY:
    case QV_KIND_LARGE_BINARY: return QV__PT_BIN;
    case QV_KIND_FIXED_BINARY: return QV__PT_FIXED;
    default: return 0;
    }
}

int qv_decoder_open(const void *bytes, size_t size, enum qv_value_kind kind,
                    int32_t fixed_width, int64_t count, struct qv_reservation *r,
                    struct qv_decoder **out, struct qv_error *err) {
    return qv__decoder_open_checked(bytes, size, kind, fixed_width, count, r, NULL, NULL, out, err);
}

int qv__decoder_open_checked(const void *bytes, size_t size, enum qv_value_kind kind,
                             int32_t fixed_width, int64_t count, struct qv_reservation *r,
                             qv__verify_fn fn, void *ctx, struct qv_decoder **out,
                             struct qv_error *err) {
    int pt = kind_pt(kind);
    if (!out || !r || (!bytes && size))
        return qv_error_set(err, EINVAL, "qv_decoder_open: NULL argument");
    *out = NULL;
    if (!pt) return qv_error_set(err, EINVAL, "qv_decoder_open: unknown kind %d", (int)kind);
    if (count < 0 || count > QV_ENC_MAX_COUNT)
        return qv_error_set(err, EINVAL, "qv_decoder_open: bad count %lld", (long long)count);
    if (pt == QV__PT_FIXED && (fixed_width < 0 || fixed_width > QV_ENC_MAX_FIXED_WIDTH))
        return qv_error_set(err, EINVAL, "qv_decoder_open: bad fixed width %d", fixed_width);
    struct qv_decoder *dc = qv_alloc(r, sizeof *dc, err);
    if (!dc) return ENOMEM;
    memset(dc, 0, offsetof(struct qv_decoder, slab));
    dc->d.r = r;
    dc->d.mem.r = r;
    dc->d.mem.slab = dc->slab;
    dc->d.mem.slab_left = sizeof dc->slab;
    dc->d.stack.r = r;
    qv__stack_init_inline(&dc->d.stack, dc->stack0, sizeof dc->stack0);
    dc->kind = kind;
    dc->fixed_width = fixed_width;
    dc->count = count;
    dc->pt = pt;
    const uint8_t *p = bytes;
    int rc;
    if (fn && ((uintptr_t)bytes & 7)) {
        /* A copy would be made of bytes not yet read or verified. */
        rc = qv_error_set(err, EINVAL, "qv_decoder_open: checked bytes must be 8-byte aligned");
        goto fail;
    }
    if ((uintptr_t)bytes & 7) {
        uint8_t *copy = qv__mem_alloc(&dc->d.mem, size, err);
        if (!copy) {
            rc = ENOMEM;
            goto fail;
        }
        memcpy(copy, bytes, size);
        p = copy;
    }
    dc->parsed = p;
    dc->parsed_size = size;
    dc->d.vfn = fn;
    dc->d.vctx = ctx;
    dc->d.vbase = p;
    rc = fn ? qv__tree_parse_checked(&dc->d.mem, p, size, fn, ctx, &dc->d.root, err)
            : qv__tree_parse(&dc->d.mem, p, size, 0, 0, 0, &dc->d.root, err);
    if (rc) goto fail;
    struct qv__node *root = dc->d.root;
    if (root->pt != pt || (pt == QV__PT_FIXED && root->width != (uint32_t)fixed_width)) {
        rc = qv__corrupt(err, root, "holds %s values, the chunk is %s", qv__pt_name(root->pt),
                         qv_value_kind_name(kind));
        goto fail;
    }
    if (root->count != count) {
        rc = qv__corrupt(err, root, "holds %lld values, the chunk has %lld",
                         (long long)root->count, (long long)count);
        goto fail;
    }
    *out = dc;
    return 0;
fail:
    qv_decoder_close(dc);
    return rc;
}

void qv_decoder_close(struct qv_decoder *dc) {
    if (!dc) return;
    struct qv_reservation *r = dc->d.r;
    qv__stack_free(&dc->d.stack);
    qv__frame_caches_free(dc->d.frames);
    qv__mem_free_all(&dc->d.mem);
    if (dc->take_data) qv_free(r, dc->take_data, dc->take_cap);
    qv_free(r, dc, sizeof *dc);
}

uint64_t qv_decoder_memory(const struct qv_decoder *dc) {
    return qv__mem_bytes(&dc->d.mem) + qv__stack_bytes(&dc->d.stack) + dc->take_cap +
           sizeof *dc;
}

static void binout_from(struct qv__binout *o, const struct qv_decoder *dc,
                        struct qv_decode_out *out) {
    memset(o, 0, sizeof *o);
    o->off64 = dc->kind == QV_KIND_LARGE_BINARY;
    o->offsets = out->values;
    o->data = out->data;
    o->size = out->data_size;
    o->cap = out->data_capacity;
    o->r = dc->d.r;
}

static int binout_start(struct qv__binout *o, struct qv_error *err) {
    if (o->off64) {
        ((int64_t *)o->offsets)[0] = (int64_t)o->size;
    } else {
        if (o->size > (size_t)INT32_MAX)
            return qv_error_set(err, EOVERFLOW, "decode: data_size %zu exceeds int32 offsets",
                                o->size);
        ((int32_t *)o->offsets)[0] = (int32_t)o->size;
    }
    o->i = 0;
    return 0;
}

static void binout_to(const struct qv__binout *o, struct qv_decode_out *out) {
    out->data = o->data;
    out->data_size = o->size;
    out->data_capacity = o->cap;
}

int qv_decoder_decode_range(struct qv_decoder *dc, int64_t start, int64_t n,
                            struct qv_decode_out *out, struct qv_error *err) {
    if (!dc || !out) return qv_error_set(err, EINVAL, "qv_decoder_decode_range: NULL argument");
    if (start < 0 || n < 0 || start > dc->count || n > dc->count - start)
        return qv_error_set(err, EINVAL,
                            "qv_decoder_decode_range: rows [%lld, +%lld) outside the chunk of "
                            "%lld values",
                            (long long)start, (long long)n, (long long)dc->count);
    if (!out->values && (n > 0 || dc->pt == QV__PT_BIN))
        return qv_error_set(err, EINVAL, "qv_decoder_decode_range: NULL output values");
    struct qv__mark mk = qv__stack_mark(&dc->d.stack);
    int rc;
    dc->d.want = n;
    if (dc->pt == QV__PT_BOOL) {
        rc = qv__dec_bool(&dc->d, dc->d.root, start, n, out->values, out->bit_offset, err);
    } else if (dc->pt == QV__PT_BIN) {
        struct qv__binout o;
        binout_from(&o, dc, out);
        rc = binout_start(&o, err);
        if (!rc) rc = qv__dec_bin(&dc->d, dc->d.root, start, n, &o, err);
        binout_to(&o, out);
        /* qv__dec_bin checks this in debug builds; a release build still
         * refuses to hand out offsets it did not write. */
        if (!rc && o.i != n)
            rc = qv__corrupt_set(err, "decode: %lld of %lld binary values produced",
                                 (long long)o.i, (long long)n);
    } else {
        rc = qv__dec_word(&dc->d, dc->d.root, start, n, out->values, err);
    }
    qv__stack_release(&dc->d.stack, mk);
    return rc;
}

/* Copies selected strings of a decoded vector range into the output. */
static int take_bin_group(struct qv_decoder *dc, const int64_t *rows, int64_t k, int64_t lo,
                          int64_t hi, struct qv__binout *o, struct qv_error *err) {
    struct qv__mark mk = qv__stack_mark(&dc->d.stack);
    int64_t *offs = qv__stack_push(&dc->d.stack, (size_t)(hi - lo + 1) * 8, err);
    if (!offs) return ENOMEM;
    struct qv__binout t;
    memset(&t, 0, sizeof t);
    t.off64 = 1;
    t.offsets = offs;
    t.data = dc->take_data;
    t.cap = dc->take_cap;
    t.r = dc->d.r;
    offs[0] = 0;
    int rc = qv__dec_bin(&dc->d, dc->d.root, lo, hi - lo, &t, err);
    dc->take_data = t.data;
    dc->take_cap = t.cap;
    for (int64_t i = 0; !rc && i < k; i++) {
        int64_t j = rows[i] - lo;
        rc = qv__binout_push(o, t.data + offs[j], (size_t)(offs[j + 1] - offs[j]), err);
    }
    qv__stack_release(&dc->d.stack, mk);
    return rc;
}

int qv__take_span(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t k,
                  unsigned w, void *out, struct qv_error *err) {
    const int64_t lo = rows[0], hi = rows[k - 1] + 1;
    uint8_t *dst = out;
    /* Contiguous means every row once, in a run: hi - lo == k alone is
     * also true of sorted rows where a duplicate makes up for a gap
     * ([1, 2, 4, 5, 5, 6], as the list reader asks for the offsets of
     * rows 1, 4, 5), which must go through the gather below. */
    int contiguous = hi - lo == k;
    for (int64_t t = 1; contiguous && t < k; t++) contiguous = rows[t] != rows[t - 1];
    if (contiguous) return qv__dec_word(d, nd, lo, k, dst, err);
    struct qv__mark mk = qv__stack_mark(&d->stack);
    const uint8_t *src = qv__stack_push(&d->stack, (size_t)(hi - lo) * w, err);
    if (!src) return ENOMEM;
    int rc = qv__dec_word(d, nd, lo, hi - lo, (void *)src, err);
    if (!rc) {
        switch (w) {
        case 1:
            for (int64_t t = 0; t < k; t++) dst[t] = src[rows[t] - lo];
            break;
        case 2:
            for (int64_t t = 0; t < k; t++)
                ((uint16_t *)(void *)dst)[t] = ((const uint16_t *)(const void *)src)[rows[t] - lo];
            break;
        case 4:
            for (int64_t t = 0; t < k; t++)
                ((uint32_t *)(void *)dst)[t] = ((const uint32_t *)(const void *)src)[rows[t] - lo];
            break;
        case 8:
            for (int64_t t = 0; t < k; t++)
                ((uint64_t *)(void *)dst)[t] = ((const uint64_t *)(const void *)src)[rows[t] - lo];
            break;
        default:
            for (int64_t t = 0; t < k; t++)
                memcpy(dst + (size_t)t * w, src + (size_t)(rows[t] - lo) * w, w);
            break;
        }
    }
    qv__stack_release(&d->stack, mk);
    return rc;
}

int qv__take_word(struct qv__dec *d, struct qv__node *nd, const int64_t *rows, int64_t n,
                  unsigned w, void *out, struct qv_error *err) {
    if (n <= 0) return 0;
    if (nd->codec->take_word && qv__pt_is_word(nd->pt))
        return nd->codec->take_word(d, nd, rows, n, out, err);
    int rc = 0;
    for (int64_t i = 0, j; i < n && !rc; i = j) {
        /* One group: the requested rows inside one 1024-value vector. */
        const int64_t vec = rows[i] >> QV__VEC_SHIFT;
        for (j = i + 1; j < n && (rows[j] >> QV__VEC_SHIFT) == vec; j++) {}
        rc = qv__take_span(d, nd, rows + i, j - i, w, (uint8_t *)out + (size_t)i * w, err);
    }
    return rc;
}

static int take_args(const struct qv_decoder *dc, const int64_t *rows, int64_t n,
                     const struct qv_decode_out *out, struct qv_error *err) {
    if (!dc || !out || (!rows && n)) return qv_error_set(err, EINVAL, "qv_decoder_take: NULL argument");
    if (n < 0) return qv_error_set(err, EINVAL, "qv_decoder_take: negative count");
    if (!out->values && (n > 0 || dc->pt == QV__PT_BIN))
        return qv_error_set(err, EINVAL, "qv_decoder_take: NULL output values");
    return 0;
}

static int bad_row(const struct qv_decoder *dc, const int64_t *rows, int64_t i,
                   struct qv_error *err) {
    return qv_error_set(err, EINVAL,
                        "qv_decoder_take: row %lld (index %lld) unsorted or outside the chunk of "
                        "%lld values",
                        (long long)rows[i], (long long)i, (long long)dc->count);
}

static int take_rows(struct qv_decoder *dc, const int64_t *rows, int64_t n,
                     struct qv_decode_out *out, struct qv_error *err);

int qv_decoder_take(struct qv_decoder *dc, const int64_t *rows, int64_t n,
                    struct qv_decode_out *out, struct qv_error *err) {
    int rc = take_args(dc, rows, n, out, err);
    if (rc) return rc;
    const int64_t bad = qv__rows_first_bad(rows, n, dc->count, false);
    if (bad >= 0) return bad_row(dc, rows, bad, err);
    return take_rows(dc, rows, n, out, err);
}

int qv__decoder_take_sorted(struct qv_decoder *dc, const int64_t *rows, int64_t n,
                            struct qv_decode_out *out, struct qv_error *err) {
    int rc = take_args(dc, rows, n, out, err);
    if (rc) return rc;
    QV_DCHECK(qv__rows_first_bad(rows, n, INT64_MAX, false) < 0);
    if (n && rows[0] < 0) return bad_row(dc, rows, 0, err);
    if (n && rows[n - 1] >= dc->count) return bad_row(dc, rows, n - 1, err);
    return take_rows(dc, rows, n, out, err);
}

static int take_rows(struct qv_decoder *dc, const int64_t *rows, int64_t n,
                     struct qv_decode_out *out, struct qv_error *err) {
    struct qv__binout o;
    int rc = 0;
    if (dc->pt == QV__PT_BIN) {
        binout_from(&o, dc, out);
        if ((rc = binout_start(&o, err))) return rc;
    }
    const unsigned w = dc->pt == QV__PT_FIXED ? (unsigned)dc->fixed_width : qv__pt_width(dc->pt);
    struct qv__mark mk = qv__stack_mark(&dc->d.stack);
    dc->d.want = n;
    if (dc->pt != QV__PT_BIN && dc->pt != QV__PT_BOOL) {
        rc = qv__take_word(&dc->d, dc->d.root, rows, n, w, out->values, err);
        qv__stack_release(&dc->d.stack, mk);
        return rc;
    }
    if (dc->pt == QV__PT_BIN && dc->d.root->codec->take_bin) {
        rc = n ? dc->d.root->codec->take_bin(&dc->d, dc->d.root, rows, n, &o, err) : 0;
        qv__stack_release(&dc->d.stack, mk);
        QV_DCHECK(rc || o.i == n);
        binout_to(&o, out);
        return rc;
    }
    void *tmp = NULL;
    for (int64_t i = 0; i < n && !rc;) {
        /* One group: the requested rows inside one 1024-value vector. */
        int64_t vec = rows[i] >> QV__VEC_SHIFT, j = i + 1;
        while (j < n && (rows[j] >> QV__VEC_SHIFT) == vec) j++;
        int64_t lo = rows[i], hi = rows[j - 1] + 1, k = j - i;
        /* Contiguous means every row once, in a run: hi - lo == k alone is
         * also true of sorted rows where a duplicate makes up for a gap
         * ([1, 2, 4, 5, 5, 6], as the list reader asks for the offsets of
         * rows 1, 4, 5), which must go through the gather below. */
        int contiguous = hi - lo == k;
        for (int64_t t = 1; contiguous && t < k; t++) contiguous = rows[i + t] != rows[i + t - 1];
        if (dc->pt == QV__PT_BIN) {
            if (contiguous) {
                /* Decode straight into the output, continuing its offsets. */
                struct qv__binout sub = o;
                sub.offsets = o.off64 ? (void *)((int64_t *)o.offsets + o.i)
                                      : (void *)((int32_t *)o.offsets + o.i);
                sub.i = 0;
                rc = qv__dec_bin(&dc->d, dc->d.root, lo, k, &sub, err);
                o.data = sub.data;
                o.cap = sub.cap;
                o.size = sub.size;
                o.i += sub.i;
            } else {
                rc = take_bin_group(dc, rows + i, k, lo, hi, &o, err);
            }
        } else if (dc->pt == QV__PT_BOOL) {
            if (contiguous) {
                rc = qv__dec_bool(&dc->d, dc->d.root, lo, k, out->values, out->bit_offset + i, err);
            } else {
                if (!tmp && !(tmp = qv__stack_push(&dc->d.stack, QV__VEC / 8 + 8, err))) {
                    rc = ENOMEM;
                    break;
                }
                rc = qv__dec_bool(&dc->d, dc->d.root, lo, hi - lo, tmp, 0, err);
                for (int64_t t = 0; !rc && t < k; t++)
                    qv_bit_put(out->values, out->bit_offset + i + t,
                               qv_bit_get(tmp, rows[i + t] - lo));
            }
        }
        i = j;
    }
    qv__stack_release(&dc->d.stack, mk);
    /* One offset per requested row, whatever path each group took. */
    QV_DCHECK(rc || dc->pt != QV__PT_BIN || o.i == n);
    if (dc->pt == QV__PT_BIN) binout_to(&o, out);
    return rc;
}

int qv_decode(const void *bytes, size_t size, enum qv_value_kind kind, int32_t fixed_width,
              int64_t count, struct qv_reservation *r, struct qv_decode_out *out,
              struct qv_error *err) {
    struct qv_decoder *dc;
    int rc = qv_decoder_open(bytes, size, kind, fixed_width, count, r, &dc, err);
    if (rc) return rc;
    rc = qv_decoder_decode_range(dc, 0, count, out, err);
    qv_decoder_close(dc);
    return rc;
}
