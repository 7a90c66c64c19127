/* Evaluation of a bound predicate on a batch, vectorized per column.
 *
 * Three-valued logic is carried as two bitmaps per node, T (rows where the
 * node is TRUE) and F (rows where it is FALSE); rows in neither are NULL.
 * Then AND is T = Ta & Tb, F = Fa | Fb; OR is T = Ta | Tb, F = Fa & Fb; NOT
 * swaps T and F, at no cost. A leaf computes its comparison over every slot
 * with a kernel chosen at bind time for the column's physical type and the
 * operator (one tight loop, no per-value dispatch), then masks with the
 * validity of the referenced path: T = V & C, F = V & ~C.
 *
 * Bits past the row count are kept zero in every T and F bitmap, so whole
 * words can be combined and tested. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu_internal.h"
#include "scan/expr_internal.h"

/* ---- Bitmaps ---- */

static int64_t words_for(int64_t n) { return (n + 63) >> 6; }

static uint64_t tail_mask(int64_t n) {
    return (n & 63) ? (UINT64_C(1) << (n & 63)) - 1 : ~UINT64_C(0);
}

/* Copies bits [off, off + n) of `bits` into whole words, tail zeroed. Reads
 * only the bytes those bits live in. */
static void load_bits(const uint8_t *bits, int64_t off, int64_t n, uint64_t *out) {
    int64_t nw = words_for(n);
    const uint8_t *p = bits + (off >> 3);
    int sh = (int)(off & 7);
    int64_t nbytes = (sh + n + 7) >> 3;
    for (int64_t w = 0; w < nw; w++) {
        int64_t b0 = w * 8, avail = nbytes - b0;
        uint64_t lo = 0;
        if (avail >= 8) {
            memcpy(&lo, p + b0, 8); /* Arrow bitmaps are little-endian */
        } else {
            for (int64_t k = 0; k < avail; k++) lo |= (uint64_t)p[b0 + k] << (8 * k);
        }
        uint64_t word = lo >> sh;
        if (sh && avail > 8) word |= (uint64_t)p[b0 + 8] << (64 - sh);
        out[w] = word;
    }
    if (nw) out[nw - 1] &= tail_mask(n);
}

static void fill_words(uint64_t *w, int64_t n, bool ones) {
    int64_t nw = words_for(n);
    memset(w, ones ? 0xff : 0, (size_t)nw * 8);
    if (ones && nw) w[nw - 1] &= tail_mask(n);
}

static bool all_zero(const uint64_t *w, int64_t n) {
    int64_t nw = words_for(n);
    for (int64_t i = 0; i < nw; i++)
        if (w[i]) return false;
    return true;
}

static bool all_ones(const uint64_t *w, int64_t n) {
    int64_t nw = words_for(n);
    for (int64_t i = 0; i + 1 < nw; i++)
        if (~w[i]) return false;
    return nw == 0 || w[nw - 1] == tail_mask(n);
}

/* ---- Kernels ----
 * Full words are filled by a fixed 64-iteration loop the compiler can
 * unroll and vectorize; the tail word by a short one. */

#define BITS_LOOP(EXPR)                                                     \
    do {                                                                    \
        int64_t full_ = n >> 6, w_;                                         \
        for (w_ = 0; w_ < full_; w_++) {                                    \
            uint64_t word_ = 0;                                             \
            for (int j_ = 0; j_ < 64; j_++) {                               \
                int64_t i = (w_ << 6) + j_;                                 \
                word_ |= (uint64_t)(EXPR) << j_;                            \
            }                                                               \
            out[w_] = word_;                                                \
        }                                                                   \
        if (n & 63) {                                                       \
            uint64_t word_ = 0;                                             \
            for (int j_ = 0; j_ < (int)(n & 63); j_++) {                    \
                int64_t i = (full_ << 6) + j_;                              \
                word_ |= (uint64_t)(EXPR) << j_;                            \
            }                                                               \
            out[full_] = word_;                                             \
        }                                                                   \
    } while (0)

#define KARGS const struct qv__xplan *p, const struct ArrowArray *a, int64_t slot, int64_t n, \
              uint64_t *out

static inline int64_t ld_d64(const uint8_t *b, int64_t i) {
    int64_t x;
    memcpy(&x, b + i * 16, 8); /* precision <= 18: the low half holds the value */
    return x;
}
static inline qv__xi128 ld_d128(const uint8_t *b, int64_t i) {
    qv__xi128 x;
    memcpy(&x, b + i * 16, 16);
    return x;
}

double qv__half_to_double(uint16_t h) {
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = ldexp((double)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp((double)(m | 1024), e - 25);
    return sign ? -v : v;
}

/* Comparisons against a constant write one byte per value into a 64-byte
 * block first and pack the block into a word after: the byte loop is a plain
 * elementwise compare that compilers vectorize (the shift-or into a word is
 * not), and the packing costs one multiply per 8 values. With AVX2 (and
 * SSE4.2 for the 64-bit compares SSE2 lacks) the same loop runs 4 to 8
 * values per instruction, so the numeric kernels are compiled once per
 * level of base/cpu_internal.h and the table is chosen at bind time. */
static inline uint64_t pack_bytes(const uint8_t *r) {
    uint64_t word = 0;
    for (int b = 0; b < 8; b++) {
        uint64_t x;
        memcpy(&x, r + 8 * b, 8);
        /* Byte j of x (0 or 1) lands on bit 56 + j of the product with no
         * carries, since the partial products fall on distinct bits. */
        word |= ((x * UINT64_C(0x0102040810204080)) >> 56) << (8 * b);
    }
    return word;
}

#define CMP_LOOP(EXPR)                                                      \
    do {                                                                    \
        int64_t full_ = n >> 6, w_;                                         \
        for (w_ = 0; w_ < full_; w_++) {                                    \
            uint8_t r_[64];                                                 \
            for (int j_ = 0; j_ < 64; j_++) {                               \
                int64_t i = (w_ << 6) + j_;                                 \
                r_[j_] = (uint8_t)(EXPR);                                   \
            }                                                               \
            out[w_] = pack_bytes(r_);                                       \
        }                                                                   \
        if (n & 63) {                                                       \
            uint64_t word_ = 0;                                             \
            for (int j_ = 0; j_ < (int)(n & 63); j_++) {                    \
                int64_t i = (full_ << 6) + j_;                              \
                word_ |= (uint64_t)(EXPR) << j_;                            \
            }                                                               \
            out[full_] = word_;                                             \
        }                                                                   \
    } while (0)

/* Comparison kernels, one per (type, operator) and level. T is the element
 * type, KT the type the constant is compared in, STRIDE the elements per
 * value, LOAD reads value i (relative to the first slot) from v; LV is the
 * level's suffix and ATTR its target attribute. */
#define GEN_CMP1(NAME, SUF, OP, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR) \
    static ATTR void NAME##_##SUF##LV(KARGS) {                        \
        const T *v = (const T *)a->buffers[1] + slot * STRIDE;        \
        const KT k = (KT)(KEXPR);                                     \
        CMP_LOOP(LOAD OP k);                                          \
    }
#define GEN_CMP(NAME, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)                 \
    GEN_CMP1(NAME, eq, ==, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)            \
    GEN_CMP1(NAME, ne, !=, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)            \
    GEN_CMP1(NAME, lt, <, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)             \
    GEN_CMP1(NAME, le, <=, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)            \
    GEN_CMP1(NAME, gt, >, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)             \
    GEN_CMP1(NAME, ge, >=, T, STRIDE, KT, KEXPR, LOAD, LV, ATTR)

/* The types whose compares vectorize; f16 (a conversion per value) and
 * decimal128 (128-bit compares) are generic only. */
#define GEN_SIMD_CMPS(LV, ATTR)                                        \
    GEN_CMP(k_i8, int8_t, 1, int8_t, p->ki, v[i], LV, ATTR)            \
    GEN_CMP(k_i16, int16_t, 1, int16_t, p->ki, v[i], LV, ATTR)         \
    GEN_CMP(k_i32, int32_t, 1, int32_t, p->ki, v[i], LV, ATTR)         \
    GEN_CMP(k_i64, int64_t, 1, int64_t, p->ki, v[i], LV, ATTR)         \
    GEN_CMP(k_u8, uint8_t, 1, uint8_t, p->ku, v[i], LV, ATTR)          \
    GEN_CMP(k_u16, uint16_t, 1, uint16_t, p->ku, v[i], LV, ATTR)       \
    GEN_CMP(k_u32, uint32_t, 1, uint32_t, p->ku, v[i], LV, ATTR)       \
    GEN_CMP(k_u64, uint64_t, 1, uint64_t, p->ku, v[i], LV, ATTR)       \
    GEN_CMP(k_f32, float, 1, double, p->kf, (double)v[i], LV, ATTR)    \
    GEN_CMP(k_f64, double, 1, double, p->kf, v[i], LV, ATTR)           \
    GEN_CMP(k_d64, uint8_t, 16, int64_t, p->ki, ld_d64(v, i), LV, ATTR)

GEN_SIMD_CMPS(, )
GEN_CMP(k_f16, uint16_t, 1, double, p->kf, qv__half_to_double(v[i]), , )
GEN_CMP(k_d128, uint8_t, 16, qv__xi128, p->kq, ld_d128(v, i), , )
/* QV_NAN_LARGEST: values compared as qv__fkey keys against the constant's key. */
GEN_CMP(k_t16, uint16_t, 1, int64_t, p->ki, qv__fkey(qv__half_to_double(v[i])), , )
GEN_CMP(k_t32, float, 1, int64_t, p->ki, qv__fkey((double)v[i]), , )
GEN_CMP(k_t64, double, 1, int64_t, p->ki, qv__fkey(v[i]), , )
#if QV__X86_DISPATCH
GEN_SIMD_CMPS(_sse42, QV__TARGET_SSE42)
GEN_SIMD_CMPS(_avx2, QV__TARGET_AVX2)
#endif

/* Bool columns: the comparison's result for false and for true was worked
 * out at bind time, so a word of values maps to a word of results. */
static void k_bool(KARGS) {
    load_bits(a->buffers[1], slot, n, out);
    int64_t nw = words_for(n);
    for (int64_t w = 0; w < nw; w++) out[w] = (p->t1 ? out[w] : 0) | (p->t0 ? ~out[w] : 0);
}

/* Variable-length values. Offsets between the first and the last are not
 * checked by cheap validation, so each is clamped into the validated range:
 * a malformed array gives wrong answers for its malformed slots, never a bad
 * read. */
static const uint8_t empty_bytes[1];

#define VAR_SETUP(OT)                                                     \
    const OT *o = (const OT *)a->buffers[1];                              \
    const uint8_t *d = a->buffers[2] ? a->buffers[2] : empty_bytes;       \
    const int64_t first = o[a->offset], last = o[a->offset + a->length];  \
    o += slot;                                                            \
    (void)first;                                                          \
    (void)last

static inline void var_at(const void *ov, bool wide, int64_t i, int64_t first, int64_t last,
                          int64_t *s, int64_t *len) {
    int64_t b = wide ? ((const int64_t *)ov)[i] : ((const int32_t *)ov)[i];
    int64_t e = wide ? ((const int64_t *)ov)[i + 1] : ((const int32_t *)ov)[i + 1];
    if (b < first || e > last || e < b) b = e = first;
    *s = b;
    *len = e - b;
}

static inline bool var_eq(const uint8_t *d, const void *o, bool wide, int64_t i, int64_t first,
                          int64_t last, const struct qv__bytes *k) {
    int64_t s, len;
    var_at(o, wide, i, first, last, &s, &len);
    return (size_t)len == k->n && (len == 0 || memcmp(d + s, k->p, k->n) == 0);
}

static inline int var_cmp(const uint8_t *d, const void *o, bool wide, int64_t i, int64_t first,
                          int64_t last, const struct qv__bytes *k) {
    int64_t s, len;
    var_at(o, wide, i, first, last, &s, &len);
    return qv__bytes_cmp(d + s, (size_t)len, k->p, k->n);
}

static inline bool var_starts(const uint8_t *d, const void *o, bool wide, int64_t i,
                              int64_t first, int64_t last, const struct qv__bytes *k) {
    int64_t s, len;
    var_at(o, wide, i, first, last, &s, &len);
    return (size_t)len >= k->n && memcmp(d + s, k->p, k->n) == 0;
}

#define GEN_VAR(NAME, OT, WIDE)                                                                     \
    static void NAME##_eq(KARGS) { VAR_SETUP(OT); BITS_LOOP(var_eq(d, o, WIDE, i, first, last, &p->kb)); }   \
    static void NAME##_ne(KARGS) { VAR_SETUP(OT); BITS_LOOP(!var_eq(d, o, WIDE, i, first, last, &p->kb)); }  \
    static void NAME##_lt(KARGS) { VAR_SETUP(OT); BITS_LOOP(var_cmp(d, o, WIDE, i, first, last, &p->kb) < 0); } \
    static void NAME##_le(KARGS) { VAR_SETUP(OT); BITS_LOOP(var_cmp(d, o, WIDE, i, first, last, &p->kb) <= 0); } \
    static void NAME##_gt(KARGS) { VAR_SETUP(OT); BITS_LOOP(var_cmp(d, o, WIDE, i, first, last, &p->kb) > 0); } \
    static void NAME##_ge(KARGS) { VAR_SETUP(OT); BITS_LOOP(var_cmp(d, o, WIDE, i, first, last, &p->kb) >= 0); } \
    static void NAME##_starts(KARGS) { VAR_SETUP(OT); BITS_LOOP(var_starts(d, o, WIDE, i, first, last, &p->kb)); }

GEN_VAR(k_bin32, int32_t, false)
GEN_VAR(k_bin64, int64_t, true)

#define FIX_SETUP                                                             \
    const size_t w = (size_t)p->width;                                        \
    const uint8_t *v = (const uint8_t *)a->buffers[1] + (size_t)slot * w;     \
    const uint8_t *k = p->kb.p;                                               \
    const size_t kn = p->kb.n

static void k_fix_eq(KARGS) { FIX_SETUP; BITS_LOOP(w == kn && (w == 0 || memcmp(v + (size_t)i * w, k, w) == 0)); }
static void k_fix_ne(KARGS) { FIX_SETUP; BITS_LOOP(!(w == kn && (w == 0 || memcmp(v + (size_t)i * w, k, w) == 0))); }
static void k_fix_lt(KARGS) { FIX_SETUP; BITS_LOOP(qv__bytes_cmp(v + (size_t)i * w, w, k, kn) < 0); }
static void k_fix_le(KARGS) { FIX_SETUP; BITS_LOOP(qv__bytes_cmp(v + (size_t)i * w, w, k, kn) <= 0); }
static void k_fix_gt(KARGS) { FIX_SETUP; BITS_LOOP(qv__bytes_cmp(v + (size_t)i * w, w, k, kn) > 0); }
static void k_fix_ge(KARGS) { FIX_SETUP; BITS_LOOP(qv__bytes_cmp(v + (size_t)i * w, w, k, kn) >= 0); }
static void k_fix_starts(KARGS) { FIX_SETUP; BITS_LOOP(w >= kn && memcmp(v + (size_t)i * w, k, kn) == 0); }

#define ROW6(N, LV) {N##_eq##LV, N##_ne##LV, N##_lt##LV, N##_le##LV, N##_gt##LV, N##_ge##LV}
#define CMP_TABLE(LV)                                                                          \
    {                                                                                          \
        [QV__VT_BOOL] = {k_bool, k_bool, k_bool, k_bool, k_bool, k_bool},                      \
        [QV__VT_I8] = ROW6(k_i8, LV),     [QV__VT_I16] = ROW6(k_i16, LV),                      \
        [QV__VT_I32] = ROW6(k_i32, LV),   [QV__VT_I64] = ROW6(k_i64, LV),                      \
        [QV__VT_U8] = ROW6(k_u8, LV),     [QV__VT_U16] = ROW6(k_u16, LV),                      \
        [QV__VT_U32] = ROW6(k_u32, LV),   [QV__VT_U64] = ROW6(k_u64, LV),                      \
        [QV__VT_F16] = ROW6(k_f16, ),     [QV__VT_F32] = ROW6(k_f32, LV),                      \
        [QV__VT_F64] = ROW6(k_f64, LV),   [QV__VT_D64] = ROW6(k_d64, LV),                      \
        [QV__VT_D128] = ROW6(k_d128, ),   [QV__VT_BIN32] = ROW6(k_bin32, ),                    \
        [QV__VT_BIN64] = ROW6(k_bin64, ), [QV__VT_FIXBIN] = ROW6(k_fix, ),                     \
    }
static const qv__xkernel cmp_table_generic[QV__VT_COUNT_][6] = CMP_TABLE();
#if QV__X86_DISPATCH
static const qv__xkernel cmp_table_sse42[QV__VT_COUNT_][6] = CMP_TABLE(_sse42);
static const qv__xkernel cmp_table_avx2[QV__VT_COUNT_][6] = CMP_TABLE(_avx2);
#endif

qv__xkernel qv__kernel_cmp(int vt, int op) {
    if (vt < 0 || vt >= QV__VT_COUNT_ || op < 0 || op > QV_CMP_GE) return NULL;
#if QV__X86_DISPATCH
    switch (qv__cpu_level()) {
    case QV__CPU_AVX2: return cmp_table_avx2[vt][op];
    case QV__CPU_SSE42: return cmp_table_sse42[vt][op];
    default: break;
    }
#endif
    return cmp_table_generic[vt][op];
}

qv__xkernel qv__kernel_cmp_total(int vt, int op) {
    static const qv__xkernel t16[6] = ROW6(k_t16, ), t32[6] = ROW6(k_t32, ), t64[6] = ROW6(k_t64, );
    if (op < 0 || op > QV_CMP_GE) return NULL;
    switch (vt) {
    case QV__VT_F16: return t16[op];
    case QV__VT_F32: return t32[op];
    case QV__VT_F64: return t64[op];
    default: return NULL;
    }
}

qv__xkernel qv__kernel_starts(int vt) {
    switch (vt) {
    case QV__VT_BIN32: return k_bin32_starts;
    case QV__VT_BIN64: return k_bin64_starts;
    case QV__VT_FIXBIN: return k_fix_starts;
    default: return NULL;
    }
}

/* ---- IN: binary search in the sorted distinct values ---- */

/* Short lists are scanned without branches (the common IN (a, b, c)), long
 * ones binary-searched. */
#define GEN_FIND(NAME, T)                                           \
    static inline bool NAME(const T *s, int64_t n, T x) {           \
        if (n <= 16) {                                              \
            bool m = false;                                         \
            for (int64_t k = 0; k < n; k++) m |= s[k] == x;         \
            return m;                                               \
        }                                                           \
        int64_t lo = 0, hi = n;                                     \
        while (lo < hi) {                                           \
            int64_t mid = lo + ((hi - lo) >> 1);                    \
            if (s[mid] < x) lo = mid + 1;                           \
            else hi = mid;                                          \
        }                                                           \
        return lo < n && s[lo] == x;                                \
    }
GEN_FIND(find_i64, int64_t)
GEN_FIND(find_u64, uint64_t)
GEN_FIND(find_f64, double)
GEN_FIND(find_i128, qv__xi128)

static inline bool find_bytes(const struct qv__bytes *s, int64_t n, const uint8_t *x, size_t xn) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if (qv__bytes_cmp(s[mid].p, s[mid].n, x, xn) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && qv__bytes_cmp(s[lo].p, s[lo].n, x, xn) == 0;
}

#define GEN_IN(NAME, T, STRIDE, ST, FIND, LOAD)                      \
    static void NAME(KARGS) {                                        \
        const T *v = (const T *)a->buffers[1] + slot * STRIDE;       \
        const ST *set = (const ST *)p->set;                          \
        const int64_t ns = p->n_set;                                 \
        BITS_LOOP(FIND(set, ns, (ST)(LOAD)));                        \
    }
GEN_IN(in_i8, int8_t, 1, int64_t, find_i64, v[i])
GEN_IN(in_i16, int16_t, 1, int64_t, find_i64, v[i])
GEN_IN(in_i32, int32_t, 1, int64_t, find_i64, v[i])
GEN_IN(in_i64, int64_t, 1, int64_t, find_i64, v[i])
GEN_IN(in_u8, uint8_t, 1, uint64_t, find_u64, v[i])
GEN_IN(in_u16, uint16_t, 1, uint64_t, find_u64, v[i])
GEN_IN(in_u32, uint32_t, 1, uint64_t, find_u64, v[i])
GEN_IN(in_u64, uint64_t, 1, uint64_t, find_u64, v[i])
GEN_IN(in_f16, uint16_t, 1, double, find_f64, qv__half_to_double(v[i]))
GEN_IN(in_f32, float, 1, double, find_f64, v[i])
GEN_IN(in_f64, double, 1, double, find_f64, v[i])
GEN_IN(in_d64, uint8_t, 16, int64_t, find_i64, ld_d64(v, i))
GEN_IN(in_t16, uint16_t, 1, int64_t, find_i64, qv__fkey(qv__half_to_double(v[i])))
GEN_IN(in_t32, float, 1, int64_t, find_i64, qv__fkey((double)v[i]))
GEN_IN(in_t64, double, 1, int64_t, find_i64, qv__fkey(v[i]))
GEN_IN(in_d128, uint8_t, 16, qv__xi128, find_i128, ld_d128(v, i))

static inline bool var_in(const uint8_t *d, const void *o, bool wide, int64_t i, int64_t first,
                          int64_t last, const struct qv__xplan *p) {
    int64_t s, len;
    var_at(o, wide, i, first, last, &s, &len);
    return find_bytes(p->set, p->n_set, d + s, (size_t)len);
}
static void in_bin32(KARGS) { VAR_SETUP(int32_t); BITS_LOOP(var_in(d, o, false, i, first, last, p)); }
static void in_bin64(KARGS) { VAR_SETUP(int64_t); BITS_LOOP(var_in(d, o, true, i, first, last, p)); }
static void in_fix(KARGS) { FIX_SETUP; (void)k; (void)kn; BITS_LOOP(find_bytes(p->set, p->n_set, v + (size_t)i * w, w)); }

qv__xkernel qv__kernel_in(int vt) {
    switch (vt) {
    case QV__VT_BOOL: return k_bool; /* t0 / t1: whether false / true is listed */
    case QV__VT_I8: return in_i8;
    case QV__VT_I16: return in_i16;
    case QV__VT_I32: return in_i32;
    case QV__VT_I64: return in_i64;
    case QV__VT_U8: return in_u8;
    case QV__VT_U16: return in_u16;
    case QV__VT_U32: return in_u32;
    case QV__VT_U64: return in_u64;
    case QV__VT_F16: return in_f16;
    case QV__VT_F32: return in_f32;
    case QV__VT_F64: return in_f64;
    case QV__VT_D64: return in_d64;
    case QV__VT_D128: return in_d128;
    case QV__VT_BIN32: return in_bin32;
    case QV__VT_BIN64: return in_bin64;
    case QV__VT_FIXBIN: return in_fix;
    default: return NULL;
    }
}

qv__xkernel qv__kernel_in_total(int vt) {
    switch (vt) {
    case QV__VT_F16: return in_t16;
    case QV__VT_F32: return in_t32;
    case QV__VT_F64: return in_t64;
    default: return NULL;
    }
}

static int c_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}
static int c_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}
static int c_f64(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static int c_i128(const void *a, const void *b) {
    qv__xi128 x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return (x > y) - (x < y);
}
static int c_bytes(const void *a, const void *b) {
    const struct qv__bytes *x = a, *y = b;
    return qv__bytes_cmp(x->p, x->n, y->p, y->n);
}

int64_t qv__set_sort(int vt, void *set, int64_t n) {
    int (*cmp)(const void *, const void *);
    size_t elem;
    switch (vt) {
    case QV__VT_U8: case QV__VT_U16: case QV__VT_U32: case QV__VT_U64:
        cmp = c_u64, elem = sizeof(uint64_t);
        break;
    case QV__VT_D128: cmp = c_i128, elem = sizeof(qv__xi128); break;
    case QV__VT_F16: case QV__VT_F32: case QV__VT_F64: cmp = c_f64, elem = sizeof(double); break;
    case QV__VT_BIN32: case QV__VT_BIN64: case QV__VT_FIXBIN:
        cmp = c_bytes, elem = sizeof(struct qv__bytes);
        break;
    default: cmp = c_i64, elem = sizeof(int64_t); break;
    }
    if (n <= 1) return n;
    qsort(set, (size_t)n, elem, cmp);
    /* -0.0 and 0.0 compare equal, so one of them stands for both. */
    int64_t k = 1;
    char *s = set;
    for (int64_t i = 1; i < n; i++)
        if (cmp(s + (size_t)(k - 1) * elem, s + (size_t)i * elem) != 0) {
            if (k != i) memcpy(s + (size_t)k * elem, s + (size_t)i * elem, elem);
            k++;
        }
    return k;
}

/* ---- Column against column ----
 * Both sides are widened block by block (64 values) into a common type:
 * 128-bit integers for integer-like columns, doubles for floats, byte
 * ranges for strings; then compared. */

bool qv__cmpcol_supported(const struct qv__xref *a, const struct qv__xref *b) {
    if (a->mode != b->mode) return false;
    switch (a->mode) {
    case QV__LM_NUM: return a->scale == b->scale;
    case QV__LM_TIME: return a->ns_per_unit == b->ns_per_unit;
    case QV__LM_BOOL:
    case QV__LM_FLOAT:
    case QV__LM_BYTES: return true;
    default: return false;
    }
}

static void block_i(int vt, const struct ArrowArray *a, int64_t slot, int m, qv__xi128 *dst) {
    const void *b = a->buffers[1];
    switch (vt) {
    case QV__VT_BOOL:
        for (int j = 0; j < m; j++) dst[j] = qv_bit_get(b, slot + j);
        break;
    case QV__VT_I8: for (int j = 0; j < m; j++) dst[j] = ((const int8_t *)b)[slot + j]; break;
    case QV__VT_I16: for (int j = 0; j < m; j++) dst[j] = ((const int16_t *)b)[slot + j]; break;
    case QV__VT_I32: for (int j = 0; j < m; j++) dst[j] = ((const int32_t *)b)[slot + j]; break;
    case QV__VT_I64: for (int j = 0; j < m; j++) dst[j] = ((const int64_t *)b)[slot + j]; break;
    case QV__VT_U8: for (int j = 0; j < m; j++) dst[j] = ((const uint8_t *)b)[slot + j]; break;
    case QV__VT_U16: for (int j = 0; j < m; j++) dst[j] = ((const uint16_t *)b)[slot + j]; break;
    case QV__VT_U32: for (int j = 0; j < m; j++) dst[j] = ((const uint32_t *)b)[slot + j]; break;
    case QV__VT_U64: for (int j = 0; j < m; j++) dst[j] = ((const uint64_t *)b)[slot + j]; break;
    case QV__VT_D64: for (int j = 0; j < m; j++) dst[j] = ld_d64(b, slot + j); break;
    case QV__VT_D128: for (int j = 0; j < m; j++) dst[j] = ld_d128(b, slot + j); break;
    default: memset(dst, 0, (size_t)m * sizeof *dst); break;
    }
}

static void block_f(int vt, const struct ArrowArray *a, int64_t slot, int m, double *dst) {
    const void *b = a->buffers[1];
    switch (vt) {
    case QV__VT_F16:
        for (int j = 0; j < m; j++) dst[j] = qv__half_to_double(((const uint16_t *)b)[slot + j]);
        break;
    case QV__VT_F32: for (int j = 0; j < m; j++) dst[j] = ((const float *)b)[slot + j]; break;
    default: for (int j = 0; j < m; j++) dst[j] = ((const double *)b)[slot + j]; break;
    }
}

static void block_b(int vt, int32_t width, const struct ArrowArray *a, int64_t slot, int m,
                    struct qv__bytes *dst) {
    if (vt == QV__VT_FIXBIN) {
        const uint8_t *v = (const uint8_t *)a->buffers[1] + (size_t)slot * (size_t)width;
        for (int j = 0; j < m; j++) {
            dst[j].p = v + (size_t)j * (size_t)width;
            dst[j].n = (size_t)width;
        }
        return;
    }
    bool wide = vt == QV__VT_BIN64;
    const void *ov = a->buffers[1];
    const uint8_t *d = a->buffers[2] ? a->buffers[2] : empty_bytes;
    int64_t first = wide ? ((const int64_t *)ov)[a->offset] : ((const int32_t *)ov)[a->offset];
    int64_t last = wide ? ((const int64_t *)ov)[a->offset + a->length]
                        : ((const int32_t *)ov)[a->offset + a->length];
    for (int j = 0; j < m; j++) {
        int64_t s, len;
        var_at(ov, wide, slot + j, first, last, &s, &len);
        dst[j].p = d + s;
        dst[j].n = (size_t)len;
    }
}

static bool op_holds(int c, int op) {
    switch (op) {
    case QV_CMP_EQ: return c == 0;
    case QV_CMP_NE: return c != 0;
    case QV_CMP_LT: return c < 0;
    case QV_CMP_LE: return c <= 0;
    case QV_CMP_GT: return c > 0;
    default: return c >= 0;
    }
}

static bool fcmp(double x, int op, double y) {
    switch (op) {
    case QV_CMP_EQ: return x == y;
    case QV_CMP_NE: return x != y;
    case QV_CMP_LT: return x < y;
    case QV_CMP_LE: return x <= y;
    case QV_CMP_GT: return x > y;
    default: return x >= y;
    }
}

void qv__cmpcol_eval(const struct qv__xplan *p, const struct qv__xref *ra,
                     const struct ArrowArray *a, int64_t sa, const struct qv__xref *rb,
                     const struct ArrowArray *b, int64_t sb, int64_t n, uint64_t *out) {
    union {
        qv__xi128 i[2][64];
        double f[2][64];
        struct qv__bytes s[2][64];
    } blk;
    for (int64_t base = 0, w = 0; base < n; base += 64, w++) {
        int m = n - base < 64 ? (int)(n - base) : 64;
        uint64_t word = 0;
        switch (ra->mode) {
        case QV__LM_FLOAT:
            block_f(ra->vt, a, sa + base, m, blk.f[0]);
            block_f(rb->vt, b, sb + base, m, blk.f[1]);
            if (ra->ftotal)
                for (int j = 0; j < m; j++) {
                    int64_t x = qv__fkey(blk.f[0][j]), y = qv__fkey(blk.f[1][j]);
                    word |= (uint64_t)op_holds((x > y) - (x < y), p->op) << j;
                }
            else
                for (int j = 0; j < m; j++)
                    word |= (uint64_t)fcmp(blk.f[0][j], p->op, blk.f[1][j]) << j;
            break;
        case QV__LM_BYTES:
            block_b(ra->vt, ra->field->byte_width, a, sa + base, m, blk.s[0]);
            block_b(rb->vt, rb->field->byte_width, b, sb + base, m, blk.s[1]);
            for (int j = 0; j < m; j++) {
                int c = qv__bytes_cmp(blk.s[0][j].p, blk.s[0][j].n, blk.s[1][j].p, blk.s[1][j].n);
                word |= (uint64_t)op_holds(c, p->op) << j;
            }
            break;
        default:
            block_i(ra->vt, a, sa + base, m, blk.i[0]);
            block_i(rb->vt, b, sb + base, m, blk.i[1]);
            for (int j = 0; j < m; j++) {
                qv__xi128 x = blk.i[0][j], y = blk.i[1][j];
                word |= (uint64_t)op_holds((x > y) - (x < y), p->op) << j;
            }
            break;
        }
        out[w] = word;
    }
}

/* ---- The evaluator ---- */

struct ectx {
    const struct qv__xbinding *b;
    const struct ArrowArray *batch;
    const int32_t *map;
    int64_t n, nw;
    uint64_t *levels; /* 2 bitmaps per plan level */
    uint64_t *V, *V2, *C;
};

static const struct ArrowArray *column_of(const struct ectx *x, int32_t column) {
    int32_t child = x->map ? x->map[column] : column;
    return x->batch->children[child];
}

/* Validity of a reference's path over the batch rows into V, and the leaf
 * array with the physical slot of the batch's first row. */
static void ref_validity(const struct ectx *x, const struct qv__xref *r, uint64_t *V,
                         uint64_t *tmp, const struct ArrowArray **leaf, int64_t *slot) {
    const struct ArrowArray *arr = column_of(x, r->column);
    int64_t s = arr->offset + x->batch->offset;
    fill_words(V, x->n, true);
    for (int32_t level = 0;; level++) {
        const struct qv_field *f = r->fields[level];
        if (f->type == QV_TYPE_NULL) {
            fill_words(V, x->n, false);
        } else if (arr->null_count != 0 && arr->n_buffers > 0 && arr->buffers[0]) {
            load_bits(arr->buffers[0], s, x->n, tmp);
            for (int64_t w = 0; w < x->nw; w++) V[w] &= tmp[w];
        }
        if (level == r->depth) break;
        arr = arr->children[r->path[level]];
        s += arr->offset;
    }
    *leaf = arr;
    *slot = s;
}

static void eval(const struct ectx *x, const struct qv__xplan *p, int32_t level, uint64_t *T,
                 uint64_t *F, unsigned need) {
    const int64_t nw = x->nw, n = x->n;
    switch (p->kind) {
    case QV__P_CONST:
        fill_words(T, n, p->truth == QV__TV_T);
        fill_words(F, n, p->truth == QV__TV_F);
        return;
    case QV__P_NNCONST: {
        const struct ArrowArray *leaf;
        int64_t slot;
        ref_validity(x, &x->b->refs[p->ref], x->V, x->C, &leaf, &slot);
        memcpy(p->truth == QV__TV_T ? T : F, x->V, (size_t)nw * 8);
        memset(p->truth == QV__TV_T ? F : T, 0, (size_t)nw * 8);
        return;
    }
    case QV__P_ISNULL: {
        const struct ArrowArray *leaf;
        int64_t slot;
        ref_validity(x, &x->b->refs[p->ref], x->V, x->C, &leaf, &slot);
        uint64_t *isnull = p->negate ? F : T, *notnull = p->negate ? T : F;
        for (int64_t w = 0; w < nw; w++) {
            notnull[w] = x->V[w];
            isnull[w] = ~x->V[w];
        }
        if (nw) isnull[nw - 1] &= tail_mask(n);
        return;
    }
    case QV__P_CMP:
    case QV__P_IN:
    case QV__P_STARTS: {
        const struct ArrowArray *leaf;
        int64_t slot;
        ref_validity(x, &x->b->refs[p->ref], x->V, x->C, &leaf, &slot);
        p->fn(p, leaf, slot, n, x->C);
        if (p->kind == QV__P_IN && p->set_null) {
            /* No match against a list holding NULL is NULL, not FALSE. */
            for (int64_t w = 0; w < nw; w++) {
                T[w] = x->V[w] & x->C[w];
                F[w] = 0;
            }
            return;
        }
        for (int64_t w = 0; w < nw; w++) {
            T[w] = x->V[w] & x->C[w];
            F[w] = x->V[w] & ~x->C[w];
        }
        return;
    }
    case QV__P_CMPCOL: {
        const struct ArrowArray *la, *lb;
        int64_t sa, sb;
        const struct qv__xref *ra = &x->b->refs[p->ref], *rb = &x->b->refs[p->ref2];
        ref_validity(x, ra, x->V, x->C, &la, &sa);
        ref_validity(x, rb, x->V2, x->C, &lb, &sb);
        qv__cmpcol_eval(p, ra, la, sa, rb, lb, sb, n, x->C);
        for (int64_t w = 0; w < nw; w++) {
            uint64_t v = x->V[w] & x->V2[w];
            T[w] = v & x->C[w];
            F[w] = v & ~x->C[w];
        }
        return;
    }
    case QV__P_NOT:
        eval(x, p->kids[0], level + 1, F, T,
             ((need & QV__TV_T) ? QV__TV_F : 0) | ((need & QV__TV_F) ? QV__TV_T : 0));
        return;
    case QV__P_AND:
    case QV__P_OR: {
        bool is_and = p->kind == QV__P_AND;
        uint64_t *T2 = x->levels + (size_t)(level + 1) * 2 * (size_t)nw, *F2 = T2 + nw;
        eval(x, p->kids[0], level + 1, T, F, need);
        for (int32_t k = 1; k < p->n_kids; k++) {
            /* Stop once the outcome the caller needs is settled: an AND
             * whose T is empty (when F is not needed) or whose F is full. */
            if (is_and ? ((!(need & QV__TV_F) && all_zero(T, n)) || all_ones(F, n))
                       : ((!(need & QV__TV_T) && all_zero(F, n)) || all_ones(T, n)))
                break;
            eval(x, p->kids[k], level + 1, T2, F2, need);
            if (is_and)
                for (int64_t w = 0; w < nw; w++) {
                    T[w] &= T2[w];
                    F[w] |= F2[w];
                }
            else
                for (int64_t w = 0; w < nw; w++) {
                    T[w] |= T2[w];
                    F[w] &= F2[w];
                }
        }
        return;
    }
    default:
        fill_words(T, n, false);
        fill_words(F, n, false);
        return;
    }
}

/* Evaluates plan p over the batch's rows (batch->length > 0) in bitmaps
 * taken from scratch: two per plan level (a node's operands use the levels
 * below it; a sub-plan is never deeper than the whole plan, so the
 * binding's depth bounds every plan of it), then V, V2 and C. Returns the
 * bitmaps, the first holding the rows where p is TRUE, for the caller to
 * free (*bytes); NULL with err set when scratch is short. */
static uint64_t *eval_in_scratch(const struct qv__xbinding *b, const struct qv__xplan *p,
                                 const struct ArrowArray *batch, const int32_t *map,
                                 struct qv_reservation *scratch, size_t *bytes,
                                 struct qv_error *err) {
    int64_t n = batch->length, nw = words_for(n);
    size_t nbitmaps = 2 * ((size_t)b->levels + 1) + 3;
    *bytes = nbitmaps * (size_t)nw * 8;
    uint64_t *mem = qv_alloc(scratch, *bytes, err);
    if (!mem) {
        qv_error_wrap(err, ENOMEM, "filter: scratch bitmaps: ");
        return NULL;
    }
    struct ectx x = {.b = b, .batch = batch, .map = map, .n = n, .nw = nw, .levels = mem};
    x.V = mem + (nbitmaps - 3) * (size_t)nw;
    x.V2 = x.V + nw;
    x.C = x.V2 + nw;
    eval(&x, p, 0, mem, mem + nw, QV__TV_T);
    return mem;
}

int qv_expr_eval(const struct qv_expr *e, const struct ArrowArray *batch,
                 const int32_t *batch_child_of_column, uint8_t *selected, int64_t *n_selected,
                 struct qv_reservation *scratch, struct qv_error *err) {
    if (n_selected) *n_selected = 0;
    if (!e || !e->binding) return qv_error_set(err, EINVAL, "filter: evaluating an unbound filter");
    const struct qv__xbinding *b = e->binding;
    if (!batch || !batch->release)
        return qv_error_set(err, EINVAL, "filter: the batch is NULL or released");
    if (batch->length < 0 || batch->offset < 0 || batch->n_children < 0 ||
        batch->offset > INT64_MAX / 2 - batch->length)
        return qv_error_set(err, EINVAL, "filter: batch length %lld / offset %lld invalid",
                            (long long)batch->length, (long long)batch->offset);
    if (!selected && batch->length > 0)
        return qv_error_set(err, EINVAL, "filter: no selection bitmap given");
    if (!scratch && batch->length > 0)
        return qv_error_set(err, EINVAL, "filter: no scratch reservation given");
    const struct qv_field *root = &b->schema->root;
    for (int32_t i = 0; i < b->n_columns; i++) {
        int32_t c = b->columns[i];
        int32_t child = batch_child_of_column ? batch_child_of_column[c] : c;
        const char *name = root->children[c].name;
        if (child < 0 || child >= batch->n_children || !batch->children || !batch->children[child])
            return qv_error_set(err, EINVAL,
                                "filter: column '%s' (column %d) is not in the batch (child %d of "
                                "%lld)",
                                name, (int)c, (int)child, (long long)batch->n_children);
        const struct ArrowArray *col = batch->children[child];
        if (!col->release)
            return qv_error_set(err, EINVAL, "filter: column '%s' of the batch is released", name);
        if (col->length < batch->offset + batch->length)
            return qv_error_set(err, EINVAL,
                                "filter: column '%s' has %lld slots, the batch needs %lld", name,
                                (long long)col->length,
                                (long long)(batch->offset + batch->length));
        int rc = qv_arrow_array_validate(col, &root->children[c], QV_VALIDATE_CHEAP, err);
        if (rc) return qv_error_wrap(err, rc, "filter: column '%s' of the batch: ", name);
    }
    int64_t n = batch->length;
    if (n == 0) return 0;
    int64_t nw = words_for(n);
    size_t bytes;
    uint64_t *T = eval_in_scratch(b, b->plan, batch, batch_child_of_column, scratch, &bytes, err);
    if (!T) return ENOMEM;
    int64_t count = 0;
    for (int64_t w = 0; w < nw; w++) {
        uint64_t v = T[w];
        count += __builtin_popcountll(v);
        int64_t nb = (w == nw - 1) ? qv_bytes_for_bits(n) - w * 8 : 8;
        for (int64_t k = 0; k < nb; k++) selected[w * 8 + k] = (uint8_t)(v >> (8 * k));
    }
    qv_free(scratch, T, bytes);
    if (n_selected) *n_selected = count;
    return 0;
}

int qv__expr_eval_node(const struct qv__xbinding *b, const struct qv__xplan *p,
                       const struct ArrowArray *batch, const int32_t *map, uint64_t *T,
                       struct qv_reservation *scratch, struct qv_error *err) {
    int64_t n = batch->length;
    if (n == 0) return 0;
    int64_t nw = words_for(n);
    size_t bytes;
    uint64_t *mem = eval_in_scratch(b, p, batch, map, scratch, &bytes, err);
    if (!mem) return ENOMEM;
    memcpy(T, mem, (size_t)nw * 8);
    qv_free(scratch, mem, bytes);
    return 0;
}
