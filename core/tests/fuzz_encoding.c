/*
 * libFuzzer target: decodes arbitrary bytes as each value kind, with full,
 * range and take decodes, predicates on the encoded values and the
 * inspection walk. Any crash, sanitizer
 * report, leak (reservation not back to 0) or non-errno return is a bug.
 *
 * Input layout: byte 0 picks the kind, bytes 1..2 the value count (so small
 * inputs reach deep trees), the rest is the encoded segment. Inputs whose
 * byte 0 has its top bits 11 are instead encoded first (with the cascade)
 * and the encoding mutated, which reaches valid-looking trees quickly; top
 * bits 10 do the same with zstd_dict forced on strings made of the body.
 *
 * Build (when wired): clang -fsanitize=fuzzer,address,undefined with the
 * library sources; not built by CMake yet.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/encoding.h"
#include "encoding/encoding_testing.h"
#include "encoding/relative.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

static void setup(void) {
    if (pool) return;
    struct qv_pool_options po = {0};
    po.name = "fuzz";
    po.limit = 512u << 20;
    if (qv_pool_create(&po, &pool, NULL) || qv_reservation_create(pool, NULL, &res, NULL)) abort();
}

static const enum qv_value_kind kinds[] = {
    QV_KIND_BOOL,   QV_KIND_INT8,    QV_KIND_UINT16, QV_KIND_INT32,  QV_KIND_INT64,
    QV_KIND_UINT64, QV_KIND_FLOAT32, QV_KIND_FLOAT64, QV_KIND_BINARY, QV_KIND_LARGE_BINARY,
    QV_KIND_FIXED_BINARY,
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* Issue 15's patched encoding (15): a quarter of the encoded integer
 * inputs force it at the root, so the mutations reach its decoder (the
 * cascade chooses it only for data with outliers); another quarter force
 * one of the entropy stage's byte layouts wherever it can hold a node:
 * sequential (format 4.0: zstd frames of for over narrower plain
 * residuals) or, when bit 6 is set too, ans frames over sequential bytes
 * (format 5.0, encoding 18; values of at most 8 bits above their
 * minimum; blocks of both coded kinds, kind 2 from format 6.0). An
 * eighth force bucket (format 7.0, encoding 19: tokens and extra bits).
 * Where bit 7 is set too, sequential bits (format 8.0: zstd frames over
 * seqpack residuals) take the place of sequential bytes, and seqpack
 * (encoding 20) is forced at the root of the inputs that would otherwise
 * be left to the cascade (selector bits 4-7 = 1011); both with the values
 * narrowed to 1 or 4 bits (narrow_values), which seqpack needs. Radix
 * (format 9.0, encoding 21) is forced at the root of those with selector
 * bits 4-7 = 0011, the values narrowed to 11 or 256 values (sel bit 3). */
static int skew_int(enum qv_value_kind kind) {
    return kind == QV_KIND_INT8 || kind == QV_KIND_UINT16 || kind == QV_KIND_INT32 ||
           kind == QV_KIND_INT64 || kind == QV_KIND_UINT64;
}
static int skew_force(enum qv_value_kind kind, uint8_t sel) {
    if (!skew_int(kind)) return QV_ENC_AUTO;
    if ((sel & 0x30) == 0x10) return QV_ENC_PATCHED;
    if ((sel & 0xF0) == 0xB0) return QV_ENC_SEQPACK;
    if ((sel & 0xF0) == 0x30) return QV_ENC_RADIX;
    return (sel & 0x70) == 0x70 ? QV_ENC_BUCKET : QV_ENC_AUTO;
}
static int skew_layout(enum qv_value_kind kind, uint8_t sel) {
    return skew_int(kind) && (sel & 0x30) == 0x20 ? (sel & 0x40 ? 4 : sel & 0x80 ? 5 : 3) : 0;
}
/* Values of kind (n of them, w bytes each, little-endian) narrowed to
 * their first byte modulo m. */
static void narrow_values(uint8_t *v, int64_t n, unsigned w, unsigned m) {
    for (int64_t i = 0; i < n; i++) {
        const uint8_t b = (uint8_t)(v[(size_t)i * w] % m);
        memset(v + (size_t)i * w, 0, w);
        v[(size_t)i * w] = b;
    }
}

static int visit(void *ctx, const struct qv_enc_node_info *info) {
    (void)ctx;
    (void)info;
    return 0;
}

static size_t out_bytes(enum qv_value_kind k, int64_t n) {
    switch (k) {
    case QV_KIND_BOOL: return (size_t)(n + 7) / 8 + 8;
    case QV_KIND_INT8: return (size_t)n;
    case QV_KIND_UINT16: return (size_t)n * 2;
    case QV_KIND_INT32:
    case QV_KIND_FLOAT32:
    case QV_KIND_BINARY: return (size_t)(n + 1) * 4;
    case QV_KIND_FIXED_BINARY: return (size_t)n * 16;
    default: return (size_t)(n + 1) * 8;
    }
}

/* A relative chunk (17) decodes against another chunk's decoder: a
 * reference of `count` values of the kind (a fixed ramp), encoded by the
 * cascade and attached. Attaching must refuse the chunk itself and a
 * reference of another count. *ref_enc and *ref are the caller's to free. */
static void attach_reference(struct qv_decoder *d, enum qv_value_kind kind, int64_t count,
                             struct qv_encoded *ref_enc, struct qv_decoder **ref) {
    struct qv_error err;
    memset(ref_enc, 0, sizeof *ref_enc);
    *ref = NULL;
    if (qv_decoder_reference_node(d) < 0) return;
    if (qv_decoder_set_reference(d, d, &err) == 0) abort();
    size_t w = kind == QV_KIND_INT8 ? 1 : kind == QV_KIND_UINT16 ? 2 : kind == QV_KIND_INT32 ? 4 : 8;
    uint8_t *ramp = calloc((size_t)count + 1, w);
    if (!ramp) abort();
    for (int64_t i = 0; i < count; i++) {
        uint64_t v = (uint64_t)i * 7919u;
        memcpy(ramp + (size_t)i * w, &v, w < 8 ? w : 8);
    }
    struct qv_values v = {.kind = kind, .count = count, .values = ramp};
    if (qv_encode(&v, NULL, res, ref_enc, &err) == 0 &&
        qv_decoder_open(ref_enc->data, ref_enc->size, kind, 0, count, res, ref, &err) == 0)
        qv_decoder_set_reference(d, *ref, &err);
    free(ramp);
}

static int is_int_kind(enum qv_value_kind k) {
    return k >= QV_KIND_INT8 && k <= QV_KIND_UINT64;
}

static void decode_all(const uint8_t *bytes, size_t size, enum qv_value_kind kind, int64_t count) {
    const uint64_t base = qv_reservation_used(res);
    struct qv_error err;
    struct qv_decoder *d;
    struct qv_encoded ref_enc = {0};
    struct qv_decoder *ref = NULL;
    int rc = qv_decoder_open(bytes, size, kind, 16, count, res, &d, &err);
    if (rc == 0) {
        /* Every other relative input decodes without a reference (the
         * refusal path), the rest against one. */
        if (is_int_kind(kind) && (size & 8)) attach_reference(d, kind, count, &ref_enc, &ref);
        struct qv_decode_out o;
        memset(&o, 0, sizeof o);
        o.values = malloc(out_bytes(kind, count) + 16);
        rc = qv_decoder_decode_range(d, 0, count, &o, &err);
        if (count > 3) {
            int64_t rows[3] = {0, count / 2, count - 1};
            rc |= qv_decoder_take(d, rows, 3, &o, &err);
            rc |= qv_decoder_decode_range(d, count / 3, count / 3, &o, &err);
        }
        if (o.data) qv_free(res, o.data, o.data_capacity);
        free(o.values);
        /* Predicates on the encoded values: a range, EQ or PREFIX, on the
         * whole chunk and on a window with a selection. */
        uint64_t *bits = calloc((size_t)count / 64 + 2, 16);
        if (!bits) abort();
        uint64_t *sel = bits + count / 64 + 2;
        for (int64_t i = 0; i < count; i += 3) sel[i >> 6] |= UINT64_C(1) << (i & 63);
        const int bin = kind == QV_KIND_BINARY || kind == QV_KIND_LARGE_BINARY;
        struct qv_enc_pred p = {.op = bin ? QV_ENC_OP_PREFIX : QV_ENC_OP_BETWEEN,
                                .lo = -3, .hi = 40, .ulo = 2, .uhi = 1000,
                                .bytes = (const uint8_t *)"ab", .len = 2};
        qv_decoder_filter(d, 0, count, &p, NULL, bits, &err);
        p.op = QV_ENC_OP_EQ;
        qv_decoder_filter(d, count / 4, count - count / 4, &p, sel, bits, &err);
        free(bits);
        qv_decoder_close(d);
        qv_decoder_close(ref);
        qv_encoded_release(res, &ref_enc);
    }
    qv_enc_walk(bytes, size, res, visit, NULL, &err);
    if (qv_reservation_used(res) != base) abort(); /* leak */
}

/* zstd_dict (id 16) forced: the body repeated into at least 16 KiB of
 * strings (enough for a trained dictionary), cut at lengths the body
 * gives; the encoding is then mutated at positions the tail picks. */
static void fuzz_zstd_dict(const uint8_t *body, size_t blen) {
    size_t total = blen;
    while (total < (16u << 10)) total *= 2;
    uint8_t *text = malloc(total);
    int32_t *offs = malloc((2 * total + 2) * sizeof *offs);
    if (!text || !offs) abort();
    for (size_t i = 0; i < total; i++) text[i] = body[i % blen] ^ (uint8_t)(i / blen);
    int64_t n = 0;
    for (size_t at = 0; at < total;) {
        offs[n++] = (int32_t)at;
        size_t step = body[(size_t)n % blen] % 48;
        if (!step && n % 4) step = 1; /* some empty strings, always progress */
        at = at + step > total ? total : at + step;
    }
    offs[n] = (int32_t)total;
    struct qv_values v;
    memset(&v, 0, sizeof v);
    v.kind = QV_KIND_BINARY;
    v.count = n;
    v.values = offs;
    v.data = text;
    struct qv_encode_options o = {0};
    o.force = QV_ENC_ZSTD_DICT;
    struct qv_encoded e;
    struct qv_error err;
    if (qv_encode(&v, &o, res, &e, &err) == 0) {
        for (size_t i = 0; i + 3 < blen && i < 24; i += 3)
            e.data[((size_t)body[i] << 8 | body[i + 1]) * 7 % e.size] ^= body[i + 2];
        decode_all(e.data, e.size, QV_KIND_BINARY, n);
        qv_encoded_release(res, &e);
    }
    free(offs);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (size < 3) return 0;
    enum qv_value_kind kind = kinds[data[0] % NKINDS];
    int64_t count = (int64_t)data[1] | (int64_t)data[2] << 8;
    const uint8_t *body = data + 3;
    size_t blen = size - 3;
    /* Decoders expect what readers hand them: an 8-aligned copy. */
    uint8_t *copy = malloc(blen + 8);
    if (!copy) return 0;
    memcpy(copy, body, blen);
    if ((data[0] & 0xC0) == 0x80 && blen >= 8) {
        fuzz_zstd_dict(body, blen);
    } else if ((data[0] & 0xC0) == 0xC0 && blen >= 8) {
        /* Encode the body as values of the kind, then flip bytes of the
         * encoding chosen by the input's tail. */
        struct qv_values v;
        memset(&v, 0, sizeof v);
        v.kind = kind;
        v.fixed_width = 16;
        int64_t n = 0;
        int32_t *offs = NULL;
        switch (kind) {
        case QV_KIND_BOOL: n = (int64_t)blen * 8; break;
        case QV_KIND_BINARY:
            n = (int64_t)blen / 4;
            offs = malloc((size_t)(n + 1) * 4);
            for (int64_t i = 0; i <= n; i++) offs[i] = (int32_t)(i * 4 - (i % 3));
            offs[0] = 0;
            offs[n] = (int32_t)blen;
            for (int64_t i = 1; i <= n; i++) if (offs[i] < offs[i - 1]) offs[i] = offs[i - 1];
            v.values = offs;
            v.data = copy;
            break;
        case QV_KIND_LARGE_BINARY: kind = QV_KIND_BINARY; n = 0; break;
        default: n = (int64_t)(blen / out_bytes(kind, 1)); break;
        }
        if (kind != QV_KIND_BINARY) {
            v.kind = kind;
            v.values = copy;
        }
        v.count = n;
        struct qv_encoded e;
        struct qv_error err;
        struct qv_encode_options eo;
        memset(&eo, 0, sizeof eo);
        const uint8_t sel = blen > 8 ? body[blen - 1] : 0;
        eo.force = skew_force(kind, sel);
        const int layout = skew_layout(kind, sel);
        if (eo.force == QV_ENC_SEQPACK || layout == 5)
            narrow_values(copy, n, (unsigned)out_bytes(kind, 1), sel & 8 ? 2 : 16);
        if (eo.force == QV_ENC_RADIX)
            narrow_values(copy, n, (unsigned)out_bytes(kind, 1), sel & 8 ? 11 : 256);
        /* Integers: every other such input stored as relative differences. */
        int rel = is_int_kind(kind) && (body[0] & 1);
        qv_encode_force_entropy_layout(layout);
        int erc = rel ? qv__relative_encode(&v, body[1], NULL, res, &e, &err)
                      : qv_encode(&v, &eo, res, &e, &err);
        qv_encode_force_entropy_layout(0);
        if (erc == 0) {
            for (size_t i = 0; i + 1 < blen && i < 16; i += 2) e.data[body[i] % e.size] ^= body[i + 1];
            decode_all(e.data, e.size, kind, n);
            qv_encoded_release(res, &e);
        }
        free(offs);
    } else {
        decode_all(copy, blen, kind, count);
    }
    free(copy);
    if (qv_reservation_used(res) != 0) abort();
    return 0;
}

#ifdef QV_FUZZ_STANDALONE
/* Replays files given on the command line (for builds without libFuzzer). */
#include <stdio.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) continue;
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    return 0;
}
#endif
