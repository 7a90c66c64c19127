/*
 * Predicates on encoded values: qv_decoder_filter prepares the predicate
 * for the chunk's kind and hands it to the path of the tree's root.
 *
 * Paths, by the root node (filter_int.c, filter_dict.c, filter_str.c):
 *  - constant: the predicate once, then the selection or nothing;
 *  - bitpack, and frame of reference over bitpack: the literal goes into
 *    the residual domain (an arc of residuals, see struct qv__arc), each
 *    selected vector is unpacked into L1 scratch (no base added, no
 *    widening to the kind) and compared in one branch-free loop; a literal
 *    below the reference or above the largest packed value folds to all or
 *    nothing without reading the vectors;
 *  - dictionary: the predicate once per entry (a byte per entry, kept for
 *    the next call with the same predicate), then the codes of each
 *    selected vector look their answer up;
 *  - run-end: the predicate once per run overlapping the range, then bit
 *    ranges per run;
 *  - sparse: once on the fill value, once per exception in the range;
 *  - other integer trees (delta, zig-zag, plain, zstd/lz4, FOR over other
 *    children): each selected vector decoded into scratch at its own width
 *    and compared with the same arc test;
 *  - binary trees (FSST, plain, zstd/lz4): EQ, NE and PREFIX on the decoded
 *    bytes of each selected vector. FSST compresses greedily with a table
 *    whose symbols may overlap, so equal compressed bytes are not proven by
 *    the encoder's choice alone; comparing decoded bytes is always sound.
 *  - relative (values stored against another column): ENOTSUP, the
 *    caller decodes;
 * EVAL (the caller's callback) runs only where the decoder has few values
 * of its own: constant, dictionary, run-end, sparse; elsewhere ENOTSUP.
 * Booleans, fixed binary, and floats with a comparison op answer ENOTSUP.
 *
 * Integer comparisons become one arc of the circle of B-bit patterns
 * (signed and unsigned kinds alike: the domain limits clip the literal in
 * 128-bit arithmetic, so no literal overflows), which also makes NE a
 * single test.
 */
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

/* ---- Bitmaps ---- */

static int64_t words_of(int64_t nbits) { return (nbits + 63) >> 6; }

void qv__bits_extract(const uint64_t *src, int64_t nbits, int64_t off, int64_t m,
                      uint64_t *dst) {
    const int64_t nw = words_of(nbits), w0 = off >> 6;
    const unsigned s = (unsigned)(off & 63);
    for (int64_t k = 0; k < words_of(m); k++) {
        uint64_t v = src[w0 + k] >> s;
        if (s && w0 + k + 1 < nw) v |= src[w0 + k + 1] << (64 - s);
        dst[k] = v;
    }
    if (m & 63) dst[(m - 1) >> 6] &= qv__mask((unsigned)(m & 63));
}

/* ORs m bits of src (bits past m zero) into dst at bit off. */
static void bits_or(uint64_t *dst, int64_t nbits, int64_t off, const uint64_t *src, int64_t m) {
    const int64_t nw = words_of(nbits), w0 = off >> 6;
    const unsigned s = (unsigned)(off & 63);
    for (int64_t k = 0; k < words_of(m); k++) {
        dst[w0 + k] |= src[k] << s;
        if (s && w0 + k + 1 < nw) dst[w0 + k + 1] |= src[k] >> (64 - s);
    }
}

int qv__filter_blocks(int64_t start, int64_t n, const uint64_t *sel, uint64_t *out,
                      qv__block_fn fn, void *ctx, struct qv_error *err) {
    uint64_t res[QV__VEC / 64], ls[QV__VEC / 64];
    const int64_t end = start + n;
    for (int64_t pos = start; pos < end;) {
        int64_t vend = ((pos >> QV__VEC_SHIFT) + 1) << QV__VEC_SHIFT;
        if (vend > end) vend = end;
        const int64_t m = vend - pos, nw = words_of(m), off = pos - start;
        if (sel) {
            qv__bits_extract(sel, n, off, m, ls);
            uint64_t any = 0;
            for (int64_t k = 0; k < nw; k++) any |= ls[k];
            if (!any) {
                pos = vend;
                continue;
            }
        } else {
            for (int64_t k = 0; k < nw; k++) ls[k] = ~UINT64_C(0);
            if (m & 63) ls[nw - 1] = qv__mask((unsigned)(m & 63));
        }
        int rc = fn(ctx, pos, m, res, err);
        if (rc) return rc;
        for (int64_t k = 0; k < nw; k++) res[k] &= ls[k];
        bits_or(out, n, off, res, m);
        pos = vend;
    }
    return 0;
}

/* ---- Value kernels ---- */

/* The arc test, 64 values at a time: first a byte per value (a plain
 * compare loop the compiler vectorizes at any width), then 8 bytes of 0/1
 * gathered into 8 bits with one multiply (each byte's bit lands in the top
 * byte at its own position: qv__pack_bytes64). Compiled generic and AVX2
 * (base/cpu_internal.h). */
#define ARC_BODY(T)                                                                                  static QV__ALWAYS_INLINE void arc_##T(const T *restrict x, int64_t m, T a, T d, T mask,                                                uint64_t *restrict out) {                                      uint8_t t[64] __attribute__((aligned(64)));                                                      int64_t k = 0;                                                                                   for (; (k + 1) * 64 <= m; k++) {                                                                     const T *y = x + k * 64;                                                                         for (unsigned j = 0; j < 64; j++) t[j] = (uint8_t)((T)((T)(y[j] - a) & mask) <= d);              out[k] = qv__pack_bytes64(t);                                                                          }                                                                                                if (k * 64 < m) {                                                                                    const T *y = x + k * 64;                                                                         const unsigned r = (unsigned)(m - k * 64);                                                       for (unsigned j = 0; j < 64; j++)                                                                    t[j] = j < r ? (uint8_t)((T)((T)(y[j] - a) & mask) <= d) : 0;                                out[k] = qv__pack_bytes64(t);                                                                          }                                                                                            }
ARC_BODY(uint8_t)
ARC_BODY(uint16_t)
ARC_BODY(uint32_t)
ARC_BODY(uint64_t)

static QV__ALWAYS_INLINE void arc_body(const void *x, unsigned width, int64_t m, uint64_t a,
                                       uint64_t d, uint64_t mask, uint64_t *out) {
    switch (width) {
    case 1: arc_uint8_t(x, m, (uint8_t)a, (uint8_t)d, (uint8_t)mask, out); break;
    case 2: arc_uint16_t(x, m, (uint16_t)a, (uint16_t)d, (uint16_t)mask, out); break;
    case 4: arc_uint32_t(x, m, (uint32_t)a, (uint32_t)d, (uint32_t)mask, out); break;
    default: arc_uint64_t(x, m, a, d, mask, out); break;
    }
}

static void arc_cmp_generic(const void *x, unsigned width, int64_t m, uint64_t a, uint64_t d,
                            uint64_t mask, uint64_t *out) {
    arc_body(x, width, m, a, d, mask, out);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void arc_cmp_avx2(const void *x, unsigned width, int64_t m, uint64_t a,
                                         uint64_t d, uint64_t mask, uint64_t *out) {
    arc_body(x, width, m, a, d, mask, out);
}
#endif

void qv__arc_cmp(const void *x, unsigned width, int64_t m, uint64_t a, uint64_t d,
                 uint64_t mask, uint64_t *out) {
    QV__DISPATCH2(arc_cmp, x, width, m, a, d, mask, out);
}

/* A dictionary's answers, 64 codes at a time, by shifting a 32-bit word of
 * answers by each code: a variable shift per lane (vpsrlvd, 8 codes per
 * instruction) instead of a table load per code. Codes are below 32 (the
 * caller checked them against the dictionary's size); `& 31` keeps the
 * shift defined whatever the bytes. */
static QV__ALWAYS_INLINE void code32_body(const uint32_t *restrict codes, int64_t m,
                                          uint32_t answers, uint64_t *restrict out) {
    uint8_t t[64] __attribute__((aligned(64)));
    int64_t k = 0;
    for (; (k + 1) * 64 <= m; k++) {
        const uint32_t *y = codes + k * 64;
        for (unsigned j = 0; j < 64; j++) t[j] = (uint8_t)((answers >> (y[j] & 31)) & 1);
        out[k] = qv__pack_bytes64(t);
    }
    if (k * 64 < m) {
        const uint32_t *y = codes + k * 64;
        const unsigned r = (unsigned)(m - k * 64);
        for (unsigned j = 0; j < 64; j++) t[j] = j < r ? (uint8_t)((answers >> (y[j] & 31)) & 1) : 0;
        out[k] = qv__pack_bytes64(t);
    }
}

static void code_cmp32_generic(const uint32_t *codes, int64_t m, uint32_t answers, uint64_t *out) {
    code32_body(codes, m, answers, out);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void code_cmp32_avx2(const uint32_t *codes, int64_t m, uint32_t answers,
                                            uint64_t *out) {
    code32_body(codes, m, answers, out);
}
#endif

void qv__code_cmp32(const uint32_t *codes, int64_t m, uint32_t answers, uint64_t *out) {
    QV__DISPATCH2(code_cmp32, codes, m, answers, out);
}

/* A larger dictionary's answers, a bit per entry: each code's bit looked
 * up in the bitset instead of a byte load per code and packing the bytes.
 * Up to 64 entries, two variable shifts of the two 32-bit halves (a shift
 * by 32 or more gives 0 in vpsrlvd, so each code finds its bit in one half
 * only); larger ones, 8 codes per hardware gather of their 32-bit words and
 * one variable shift. Codes are checked by the caller against dsize. */
static void code_bits_generic(const uint32_t *codes, int64_t m, const uint64_t *answers,
                              uint32_t dsize, uint64_t *out) {
    (void)dsize;
    for (int64_t k = 0; k < words_of(m); k++) out[k] = 0;
    for (int64_t j = 0; j < m; j++)
        out[j >> 6] |= ((answers[codes[j] >> 6] >> (codes[j] & 63)) & 1) << (j & 63);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void code_bits_avx2(const uint32_t *codes, int64_t m,
                                           const uint64_t *answers, uint32_t dsize,
                                           uint64_t *out) {
    /* Bit c of the little-endian words is bit c & 31 of 32-bit word c >> 5. */
    const int *words = (const int *)(const void *)answers;
    const __m256i low5 = _mm256_set1_epi32(31), k32 = _mm256_set1_epi32(32);
    const __m256i lo = _mm256_set1_epi32((int)(uint32_t)answers[0]);
    const __m256i hi = _mm256_set1_epi32((int)(uint32_t)(answers[0] >> 32));
    int64_t k = 0;
    for (; (k + 1) * 64 <= m; k++) {
        uint64_t w = 0;
        for (int g = 0; g < 8; g++) {
            __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(codes + k * 64 + g * 8));
            __m256i b;
            if (dsize <= 64) {
                b = _mm256_or_si256(_mm256_srlv_epi32(lo, c),
                                    _mm256_srlv_epi32(hi, _mm256_sub_epi32(c, k32)));
            } else {
                __m256i x = _mm256_i32gather_epi32(words, _mm256_srli_epi32(c, 5), 4);
                b = _mm256_srlv_epi32(x, _mm256_and_si256(c, low5));
            }
            b = _mm256_slli_epi32(b, 31);
            w |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(b)) << (8 * g);
        }
        out[k] = w;
    }
    if (k * 64 < m) code_bits_generic(codes + k * 64, m - k * 64, answers, dsize, out + k);
}
#endif

void qv__code_bits(const uint32_t *codes, int64_t m, const uint64_t *answers, uint32_t dsize,
                   uint64_t *out) {
    QV__DISPATCH2(code_bits, codes, m, answers, dsize, out);
}

void qv__str_cmp(const uint64_t *off, const uint8_t *data, int64_t m, const uint8_t *lit,
                 size_t len, int prefix, int neg, uint64_t *out) {
    for (int64_t k = 0; k < words_of(m); k++) out[k] = 0;
    for (int64_t j = 0; j < m; j++) {
        uint64_t a = off[j], l = off[j + 1] - a;
        int hit = (prefix ? l >= len : l == len) && (len == 0 || memcmp(data + a, lit, len) == 0);
        out[j >> 6] |= (uint64_t)(hit ^ neg) << (j & 63);
    }
}

int qv__fpred_values(const struct qv__fpred *fp, struct qv__stack *stk, const void *vals,
                     const uint64_t *off, const uint8_t *data, int64_t m, uint64_t *out,
                     struct qv_error *err) {
    const int64_t nw = words_of(m);
    if (m <= 0) return 0;
    if (fp->use_eval) {
        struct qv_values v = {.kind = fp->kind, .count = m, .values = vals};
        if (fp->is_bin) {
            /* The decoder's offsets are 64-bit; a BINARY chunk's callback
             * gets int32 ones, as its kind says. */
            v.values = off;
            v.data = data;
            if (fp->kind == QV_KIND_BINARY) {
                if (off[m] > (uint64_t)INT32_MAX)
                    return qv_error_set(err, ENOTSUP,
                                        "qv_decoder_filter: %llu bytes of values exceed int32 "
                                        "offsets",
                                        (unsigned long long)off[m]);
                int32_t *o32 = qv__stack_push(stk, (size_t)(m + 1) * 4, err);
                if (!o32) return ENOMEM;
                for (int64_t i = 0; i <= m; i++) o32[i] = (int32_t)off[i];
                v.values = o32;
            }
        }
        for (int64_t k = 0; k < nw; k++) out[k] = 0;
        int rc = fp->p->eval(fp->p->eval_ctx, &v, out, err);
        if (rc) return err && err->code ? err->code : qv_error_set(err, rc, "filter: predicate failed");
        if (m & 63) out[nw - 1] &= qv__mask((unsigned)(m & 63));
        return 0;
    }
    if (fp->is_bin) {
        qv__str_cmp(off, data, m, fp->p->bytes, fp->p->len, fp->prefix, fp->neg, out);
        return 0;
    }
    if (fp->arc.none || fp->arc.all) {
        for (int64_t k = 0; k < nw; k++) out[k] = fp->arc.all ? ~UINT64_C(0) : 0;
        if (fp->arc.all && (m & 63)) out[nw - 1] = qv__mask((unsigned)(m & 63));
        return 0;
    }
    qv__arc_cmp(vals, fp->width, m, fp->arc.a, fp->arc.d, fp->arc.mask, out);
    return 0;
}

/* ---- Preparing the predicate ---- */

static int kind_signed(enum qv_value_kind k) {
    return k == QV_KIND_INT8 || k == QV_KIND_INT16 || k == QV_KIND_INT32 || k == QV_KIND_INT64;
}

static unsigned kind_width(enum qv_value_kind k) {
    switch (k) {
    case QV_KIND_INT8:
    case QV_KIND_UINT8: return 1;
    case QV_KIND_INT16:
    case QV_KIND_UINT16: return 2;
    case QV_KIND_INT32:
    case QV_KIND_UINT32:
    case QV_KIND_FLOAT32: return 4;
    default: return 8;
    }
}

/* The arc of raw B-bit patterns whose values (signed or not) satisfy op. */
static void int_arc(const struct qv_enc_pred *p, int sgn, unsigned bits, struct qv__arc *arc) {
    __extension__ typedef __int128 i128;
    const i128 min = sgn ? -((i128)1 << (bits - 1)) : 0;
    const i128 max = sgn ? ((i128)1 << (bits - 1)) - 1 : ((i128)1 << bits) - 1;
    const i128 lo = sgn ? (i128)p->lo : (i128)p->ulo, hi = sgn ? (i128)p->hi : (i128)p->uhi;
    i128 L = lo, H = lo;
    int ne = 0;
    switch (p->op) {
    case QV_ENC_OP_NE: ne = 1; break;
    case QV_ENC_OP_LT: L = min, H = lo - 1; break;
    case QV_ENC_OP_LE: L = min, H = lo; break;
    case QV_ENC_OP_GT: L = lo + 1, H = max; break;
    case QV_ENC_OP_GE: L = lo, H = max; break;
    case QV_ENC_OP_BETWEEN: L = lo, H = hi; break;
    default: break; /* EQ */
    }
    if (L < min) L = min;
    if (H > max) H = max;
    memset(arc, 0, sizeof *arc);
    arc->mask = qv__mask(bits);
    if (L > H) arc->none = 1;
    else if (L == min && H == max) arc->all = 1;
    else {
        arc->a = (uint64_t)L & arc->mask; /* two's complement of a negative L */
        arc->d = (uint64_t)(H - L);
    }
    if (ne) {
        if (arc->none || arc->all) {
            int none = arc->none;
            arc->none = !none;
            arc->all = none;
        } else {
            /* The complement of an arc that is neither empty nor full. */
            arc->a = (arc->a + arc->d + 1) & arc->mask;
            arc->d = arc->mask - arc->d - 1;
        }
    }
}

static int prepare(const struct qv_decoder *dc, const struct qv_enc_pred *p,
                   struct qv__fpred *fp, struct qv_error *err) {
    memset(fp, 0, sizeof *fp);
    fp->p = p;
    fp->kind = qv__decoder_kind(dc);
    if (p->op < QV_ENC_OP_EQ || p->op > QV_ENC_OP_EVAL)
        return qv_error_set(err, EINVAL, "qv_decoder_filter: unknown op %d", p->op);
    fp->use_eval = p->op == QV_ENC_OP_EVAL;
    if (fp->use_eval && !p->eval)
        return qv_error_set(err, EINVAL, "qv_decoder_filter: EVAL without a callback");
    switch (fp->kind) {
    case QV_KIND_BOOL:
    case QV_KIND_FIXED_BINARY:
        return qv_error_set(err, ENOTSUP, "qv_decoder_filter: no encoded-domain path for %s",
                            qv_value_kind_name(fp->kind));
    case QV_KIND_FLOAT32:
    case QV_KIND_FLOAT64:
        if (!fp->use_eval)
            return qv_error_set(err, ENOTSUP,
                                "qv_decoder_filter: %s compares only through EVAL",
                                qv_value_kind_name(fp->kind));
        fp->width = kind_width(fp->kind);
        return 0;
    case QV_KIND_BINARY:
    case QV_KIND_LARGE_BINARY:
        fp->is_bin = 1;
        if (fp->use_eval) return 0;
        if (p->op != QV_ENC_OP_EQ && p->op != QV_ENC_OP_NE && p->op != QV_ENC_OP_PREFIX)
            return qv_error_set(err, EINVAL,
                                "qv_decoder_filter: op %d is not valid for binary values "
                                "(EQ, NE, PREFIX, EVAL)",
                                p->op);
        if (!p->bytes && p->len)
            return qv_error_set(err, EINVAL, "qv_decoder_filter: NULL operand bytes");
        fp->prefix = p->op == QV_ENC_OP_PREFIX;
        fp->neg = p->op == QV_ENC_OP_NE;
        return 0;
    default:
        fp->is_int = 1;
        fp->width = kind_width(fp->kind);
        if (fp->use_eval) return 0;
        if (p->op == QV_ENC_OP_PREFIX)
            return qv_error_set(err, EINVAL, "qv_decoder_filter: PREFIX on %s values",
                                qv_value_kind_name(fp->kind));
        int_arc(p, kind_signed(fp->kind), fp->width * 8, &fp->arc);
        return 0;
    }
}

void qv__filter_fill(const uint64_t *sel, int64_t n, uint64_t *out) {
    const int64_t nw = words_of(n);
    for (int64_t k = 0; k < nw; k++) out[k] = sel ? sel[k] : ~UINT64_C(0);
    if (n & 63) out[nw - 1] &= qv__mask((unsigned)(n & 63));
}

int qv_decoder_filter(struct qv_decoder *dc, int64_t start, int64_t n,
                      const struct qv_enc_pred *pred, const uint64_t *sel, uint64_t *out,
                      struct qv_error *err) {
    if (!dc || !pred || (!out && n > 0))
        return qv_error_set(err, EINVAL, "qv_decoder_filter: NULL argument");
    struct qv__dec *d = qv__decoder_dec(dc);
    struct qv__node *root = d->root;
    if (start < 0 || n < 0 || start > root->count || n > root->count - start)
        return qv_error_set(err, EINVAL,
                            "qv_decoder_filter: rows [%lld, +%lld) outside the chunk of %lld "
                            "values",
                            (long long)start, (long long)n, (long long)root->count);
    if (n > 0 && sel == out)
        return qv_error_set(err, EINVAL, "qv_decoder_filter: sel and out alias");
    struct qv__fpred fp;
    int rc = prepare(dc, pred, &fp, err);
    if (rc) return rc;
    for (int64_t k = 0; k < words_of(n); k++) out[k] = 0;
    if (n == 0) return 0;
    if (fp.is_int && !fp.use_eval && (fp.arc.none || fp.arc.all)) {
        /* The literal lies outside the kind or covers it: no value read. */
        if (fp.arc.all) qv__filter_fill(sel, n, out);
        return 0;
    }
    void **slot = qv__decoder_filter_slot(dc);
    if (!*slot && !(*slot = qv__mem_calloc(&d->mem, sizeof(struct qv__fstate), err)))
        return ENOMEM;
    struct qv__fstate *st = *slot;
    struct qv__mark mk = qv__stack_mark(&d->stack);
    d->want = n;
    const int word = !fp.is_bin;
    switch (root->enc) {
    case QV_ENC_CONSTANT: rc = qv__filter_constant(d, &fp, start, n, sel, out, err); break;
    case QV_ENC_DICT: rc = qv__filter_dict(d, st, &fp, start, n, sel, out, err); break;
    case QV_ENC_RELATIVE:
        /* Its values exist only once added to another column's: decoded
         * and compared by the caller. */
        rc = qv_error_set(err, ENOTSUP, "qv_decoder_filter: no encoded-domain path for relative");
        break;
    case QV_ENC_RLE:
        rc = word ? qv__filter_rle(d, st, &fp, start, n, sel, out, err)
                  : qv__corrupt(err, root, "run-end node holds %s values", qv__pt_name(root->pt));
        break;
    case QV_ENC_SPARSE:
        rc = word ? qv__filter_sparse(d, &fp, start, n, sel, out, err)
                  : qv__corrupt(err, root, "sparse node holds %s values", qv__pt_name(root->pt));
        break;
    default:
        if (fp.use_eval)
            rc = qv_error_set(err, ENOTSUP,
                              "qv_decoder_filter: EVAL has no encoded-domain path under %s",
                              qv_encoding_name(root->enc));
        else if (fp.is_bin) rc = qv__filter_decoded_bin(d, st, &fp, start, n, sel, out, err);
        else if (root->enc == QV_ENC_BITPACK ||
                 (root->enc == QV_ENC_FOR && root->child[0]->enc == QV_ENC_BITPACK &&
                  root->child[0]->pt == root->pt))
            rc = qv__filter_packed(d, &fp, start, n, sel, out, err);
        else if (root->enc == QV_ENC_RADIX ||
                 (root->enc == QV_ENC_FOR && root->child[0]->enc == QV_ENC_RADIX &&
                  root->child[0]->pt == root->pt))
            rc = qv__filter_radix(d, &fp, start, n, sel, out, err);
        else rc = qv__filter_decoded_int(d, &fp, start, n, sel, out, err);
        break;
    }
    qv__stack_release(&d->stack, mk);
    if (rc && rc != ENOTSUP) {
        /* Nothing half-answered escapes. */
        for (int64_t k = 0; k < words_of(n); k++) out[k] = 0;
    }
    return rc;
}
