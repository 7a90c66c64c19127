/* Zone statistics of one column chunk: min, max (nulls and NaNs skipped),
 * NaN count; strings truncated to QV__MAX_STAT_BYTES with a flag. The null
 * count is the chunk's own. */
#include <math.h>
#include <string.h>

#include "base/cpu_internal.h"
#include "base/dcheck.h"
#include "format/format_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

__extension__ typedef unsigned __int128 u128;

static int valid(const uint8_t *validity, int64_t i) {
    return !validity || qv_bit_get(validity, i);
}

static void put_i64(uint8_t *p, int64_t v) { qv__put_u64le(p, (uint64_t)v); }

/* Min and max of one integer kind: a loop per kind (a switch per value
 * kept the loop from vectorizing; this runs over every chunk written). A
 * block of 64 values that are all valid (or a chunk without validity)
 * runs branch-free, the others value by value; the AVX2 variant is the
 * same code, where 64-bit compares vectorize (the baseline has none). */
#define MINMAX(T, ACC, MN, MX)                                                   \
    do {                                                                       \
        const T *x_ = v->values;                                               \
        for (int64_t i = 0; i < v->count;) {                                   \
            if (i + 64 <= v->count &&                                          \
                (!validity || qv__get_u64le(validity + (i >> 3)) == ~UINT64_C(0))) { \
                ACC lo_ = MN, hi_ = MX;                                        \
                for (int j = 0; j < 64; j++) {                                 \
                    ACC y_ = (ACC)x_[i + j];                                   \
                    lo_ = y_ < lo_ ? y_ : lo_;                                 \
                    hi_ = y_ > hi_ ? y_ : hi_;                                 \
                }                                                              \
                MN = lo_;                                                      \
                MX = hi_;                                                      \
                any = 1;                                                       \
                i += 64;                                                       \
                continue;                                                      \
            }                                                                  \
            const int64_t end_ = i + 64 <= v->count ? i + 64 : v->count;       \
            for (; i < end_; i++) {                                            \
                if (validity && !qv_bit_get(validity, i)) continue;            \
                ACC y_ = (ACC)x_[i];                                           \
                any = 1;                                                       \
                MN = y_ < MN ? y_ : MN;                                        \
                MX = y_ > MX ? y_ : MX;                                        \
            }                                                                  \
        }                                                                      \
    } while (0)

struct int_range {
    int64_t smin, smax;
    uint64_t umin, umax;
    int any;
};

static QV__ALWAYS_INLINE void ints_body(const struct qv_values *v, const uint8_t *validity,
                                        struct int_range *o) {
    int64_t smin = INT64_MAX, smax = INT64_MIN;
    uint64_t umin = UINT64_MAX, umax = 0;
    int any = 0;
    switch (v->kind) {
    case QV_KIND_INT8: MINMAX(int8_t, int64_t, smin, smax); break;
    case QV_KIND_INT16: MINMAX(int16_t, int64_t, smin, smax); break;
    case QV_KIND_INT32: MINMAX(int32_t, int64_t, smin, smax); break;
    case QV_KIND_INT64: MINMAX(int64_t, int64_t, smin, smax); break;
    case QV_KIND_UINT8: MINMAX(uint8_t, uint64_t, umin, umax); break;
    case QV_KIND_UINT16: MINMAX(uint16_t, uint64_t, umin, umax); break;
    case QV_KIND_UINT32: MINMAX(uint32_t, uint64_t, umin, umax); break;
    default: MINMAX(uint64_t, uint64_t, umin, umax); break;
    }
    *o = (struct int_range){smin, smax, umin, umax, any};
}
#undef MINMAX

static void ints_range_generic(const struct qv_values *v, const uint8_t *validity,
                               struct int_range *o) {
    ints_body(v, validity, o);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void ints_range_avx2(const struct qv_values *v, const uint8_t *validity,
                                            struct int_range *o) {
    ints_body(v, validity, o);
}
#endif

static void ints(const struct qv_values *v, const uint8_t *validity, struct qv__stats_buf *o) {
    int is_unsigned = v->kind == QV_KIND_UINT8 || v->kind == QV_KIND_UINT16 ||
                      v->kind == QV_KIND_UINT32 || v->kind == QV_KIND_UINT64;
    struct int_range r;
    QV__DISPATCH2(ints_range, v, validity, &r);
    if (!r.any) return;
    o->s.flags |= QV__STAT_MINMAX;
    o->s.min_len = o->s.max_len = 8;
    if (is_unsigned) {
        qv__put_u64le(o->minb, r.umin);
        qv__put_u64le(o->maxb, r.umax);
    } else {
        put_i64(o->minb, r.smin);
        put_i64(o->maxb, r.smax);
    }
}

/* Float min and max order -0.0 below +0.0 and skip NaNs: the order of
 * the keys below, which map a double's bits to a signed integer ordered
 * as the values are (negative values' magnitude bits flipped), -0.0 just
 * below +0.0. A block of 64 values that are all valid (or a chunk without
 * validity) runs branch-free: a NaN's key is replaced by the other end's
 * sentinel. Float32 values are widened to double first, as before. */
static inline int64_t float_key(uint64_t b) {
    int64_t k = (int64_t)b;
    return k ^ (int64_t)((uint64_t)(k >> 63) >> 1);
}
static inline double key_float(int64_t k) {
    uint64_t b = (uint64_t)(k ^ (int64_t)((uint64_t)(k >> 63) >> 1));
    double d;
    memcpy(&d, &b, 8);
    return d;
}
static inline uint64_t float_bits(const struct qv_values *v, int64_t i) {
    double d = v->kind == QV_KIND_FLOAT32 ? (double)((const float *)v->values)[i]
                                          : ((const double *)v->values)[i];
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}
#define FLOAT_NAN(b) (((b) & ~(UINT64_C(1) << 63)) > UINT64_C(0x7FF0000000000000))

#define FLOAT_BLOCK_OF(x_)                                                                   \
    do {                                                                                     \
        for (int j = 0; j < 64; j++) {                                                       \
            double d_ = (double)(x_)[j];                                                     \
            uint64_t b_;                                                                     \
            memcpy(&b_, &d_, 8);                                                             \
            int nan_ = FLOAT_NAN(b_);                                                        \
            int64_t k_ = float_key(b_);                                                      \
            nans += nan_;                                                                    \
            int64_t lo_ = nan_ ? INT64_MAX : k_, hi_ = nan_ ? INT64_MIN : k_;                \
            kmin = lo_ < kmin ? lo_ : kmin;                                                  \
            kmax = hi_ > kmax ? hi_ : kmax;                                                  \
        }                                                                                    \
    } while (0)
#define FLOAT_BLOCK(T) FLOAT_BLOCK_OF((const T *)v->values + i)

/* 64 valid doubles: their keys' extremes (NaNs skipped) and NaN count. */
struct float_acc {
    int64_t kmin, kmax, nans;
};
static void double_block_generic(const double *x, struct float_acc *a) {
    int64_t kmin = a->kmin, kmax = a->kmax, nans = a->nans;
    FLOAT_BLOCK_OF(x);
    a->kmin = kmin, a->kmax = kmax, a->nans = nans;
}
#if QV__X86_DISPATCH
/* The same keys four at a time: AVX2 has no 64-bit arithmetic shift, so
 * the sign mask is 0 > k; a NaN (|bits| above infinity's) gets the other
 * end's sentinel, as in FLOAT_BLOCK. */
static QV__TARGET_AVX2 void double_block_avx2(const double *x, struct float_acc *a) {
    const __m256i zero = _mm256_setzero_si256(), inf = _mm256_set1_epi64x(0x7FF0000000000000LL);
    const __m256i absm = _mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFLL);
    const __m256i smax = _mm256_set1_epi64x(INT64_MAX), smin = _mm256_set1_epi64x(INT64_MIN);
    __m256i lo = smax, hi = smin, nan_n = zero;
    for (int j = 0; j < 64; j += 4) {
        __m256i k = _mm256_loadu_si256((const __m256i *)(x + j));
        __m256i nan = _mm256_cmpgt_epi64(_mm256_and_si256(k, absm), inf);
        __m256i key = _mm256_xor_si256(k, _mm256_srli_epi64(_mm256_cmpgt_epi64(zero, k), 1));
        __m256i l = _mm256_blendv_epi8(key, smax, nan), h = _mm256_blendv_epi8(key, smin, nan);
        lo = _mm256_blendv_epi8(lo, l, _mm256_cmpgt_epi64(lo, l));
        hi = _mm256_blendv_epi8(hi, h, _mm256_cmpgt_epi64(h, hi));
        nan_n = _mm256_sub_epi64(nan_n, nan); /* nan lanes are -1 */
    }
    int64_t l4[4], h4[4], n4[4];
    _mm256_storeu_si256((__m256i *)l4, lo);
    _mm256_storeu_si256((__m256i *)h4, hi);
    _mm256_storeu_si256((__m256i *)n4, nan_n);
    for (int i = 0; i < 4; i++) {
        a->kmin = l4[i] < a->kmin ? l4[i] : a->kmin;
        a->kmax = h4[i] > a->kmax ? h4[i] : a->kmax;
        a->nans += n4[i];
    }
}
#endif

static void floats(const struct qv_values *v, const uint8_t *validity, struct qv__stats_buf *o) {
    int64_t kmin = INT64_MAX, kmax = INT64_MIN;
    int64_t nans = 0, valid_n = 0;
    int64_t i = 0;
    const int f32 = v->kind == QV_KIND_FLOAT32;
    while (i < v->count) {
        /* A whole block of valid values, branch-free; otherwise (nulls, or
         * the last values) the values of the block one by one. */
        if (i + 64 <= v->count &&
            (!validity || qv__get_u64le(validity + (i >> 3)) == ~UINT64_C(0))) {
            if (f32) {
                FLOAT_BLOCK(float);
            } else {
                struct float_acc acc = {kmin, kmax, nans};
                QV__DISPATCH2(double_block, (const double *)v->values + i, &acc);
                kmin = acc.kmin, kmax = acc.kmax, nans = acc.nans;
            }
            valid_n += 64;
            i += 64;
            continue;
        }
        const int64_t end = i + 64 <= v->count ? i + 64 : v->count;
        for (; i < end; i++) {
            if (!valid(validity, i)) continue;
            uint64_t b = float_bits(v, i);
            valid_n++;
            if (FLOAT_NAN(b)) {
                nans++;
                continue;
            }
            int64_t k = float_key(b);
            kmin = k < kmin ? k : kmin;
            kmax = k > kmax ? k : kmax;
        }
    }
    o->s.flags |= QV__STAT_NAN_COUNT;
    o->s.nan_count = nans;
    if (valid_n == nans) return; /* no value that is not NaN */
    double mn = key_float(kmin), mx = key_float(kmax);
    uint64_t b;
    o->s.flags |= QV__STAT_MINMAX;
    o->s.min_len = o->s.max_len = 8;
    memcpy(&b, &mn, 8);
    qv__put_u64le(o->minb, b);
    memcpy(&b, &mx, 8);
    qv__put_u64le(o->maxb, b);
}
#undef FLOAT_BLOCK
#undef FLOAT_BLOCK_OF

static void bools(const struct qv_values *v, const uint8_t *validity, struct qv__stats_buf *o) {
    int seen[2] = {0, 0};
    const uint8_t *bits = v->values;
    for (int64_t i = 0; i < v->count && !(seen[0] && seen[1]); i++)
        if (valid(validity, i)) seen[qv_bit_get(bits, v->bit_offset + i)] = 1;
    if (!seen[0] && !seen[1]) return;
    o->s.flags |= QV__STAT_MINMAX;
    o->s.min_len = o->s.max_len = 1;
    o->minb[0] = seen[0] ? 0 : 1;
    o->maxb[0] = seen[1] ? 1 : 0;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Truncation keeps whole UTF-8 characters for strings so the bound prints
 * cleanly; for comparison any prefix is a valid lower bound, and a max that
 * is cut is flagged so readers treat it as "at most this prefix followed by
 * anything". */
static uint32_t cut(const uint8_t *p, size_t n, int utf8) {
    if (n <= QV__MAX_STAT_BYTES) return (uint32_t)n;
    size_t k = QV__MAX_STAT_BYTES;
    if (utf8)
        while (k > 0 && (p[k] & 0xC0) == 0x80) k--;
    return (uint32_t)k;
}

/* The first 8 bytes of a string as a big-endian number, zero padded:
 * when two strings' keys differ, they order as their keys do (a string
 * that ends early is padded with zeros, below any byte it lacks, or equal
 * to a zero byte, which leaves the keys equal). Only equal keys need the
 * byte comparison, so a chunk's min and max cost one load and two integer
 * compares per string instead of two memcmp calls. */
static uint64_t prefix_key(const uint8_t *p, size_t n, const uint8_t *end) {
    uint64_t k = 0;
    if (end - p >= 8) {
        /* One load; the bytes past a short string are masked off. */
        memcpy(&k, p, 8);
        k &= n < 8 ? (UINT64_C(1) << (8 * (n & 7))) - 1 : ~UINT64_C(0); /* a select, not a branch */
    } else if (n) {
        memcpy(&k, p, n < 8 ? n : 8);
    }
    return __builtin_bswap64(k);
}

/* Order of two strings of more than eight bytes whose prefix keys are
 * equal: their first eight bytes agree, the rest decides. */
static inline int tail_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    return bytes_cmp(a + 8, an - 8, b + 8, bn - 8);
}

/* The min/max scan, specialized by the compiler for each value layout
 * (kind and width are constants at each call). */
static QV__ALWAYS_INLINE void binaries_scan(const struct qv_values *v, const uint8_t *validity,
                                            int kind, size_t width, const uint8_t *end,
                                            const uint8_t **mnp, size_t *mnlp,
                                            const uint8_t **mxp, size_t *mxlp) {
    const uint8_t *mn = NULL, *mx = NULL;
    size_t mnl = 0, mxl = 0;
    uint64_t mnk = 0, mxk = 0;
    u128 mnkey = 0, mxkey = 0;
    for (int64_t i = 0; i < v->count; i++) {
        if (validity && !qv_bit_get(validity, i)) continue;
        const uint8_t *p;
        size_t n;
        if (kind == QV_KIND_FIXED_BINARY) {
            p = (const uint8_t *)v->values + (size_t)i * width;
            n = width;
        } else if (kind == QV_KIND_BINARY) {
            const int32_t *off = v->values;
            p = v->data + off[i];
            n = (size_t)(off[i + 1] - off[i]);
        } else {
            const int64_t *off = v->values;
            p = v->data + off[i];
            n = (size_t)(off[i + 1] - off[i]);
        }
        uint64_t k = prefix_key(p, n, end);
        u128 key = (u128)k << 64 | n;
        if (!mn) {
            mn = mx = p;
            mnl = mxl = n;
            mnk = mxk = k;
            mnkey = mxkey = key;
            continue;
        }
        /* (key, length) orders two strings exactly unless their keys are
         * equal and both are longer than eight bytes (a string of eight
         * bytes or fewer whose key equals another's is a prefix of it, so
         * the shorter is the smaller); only then are the bytes past the
         * eighth compared. The tests are combined without branching: on
         * repeated values (flags, modes) the one branch left is then
         * predictable. */
        const int long_n = n > 8;
        if ((key < mnkey) | ((k == mnk) & long_n & (mnl > 8))) {
            if (k != mnk || !long_n || mnl <= 8 || tail_cmp(p, n, mn, mnl) < 0)
                mn = p, mnl = n, mnk = k, mnkey = key;
        }
        if ((key > mxkey) | ((k == mxk) & long_n & (mxl > 8))) {
            if (k != mxk || !long_n || mxl <= 8 || tail_cmp(p, n, mx, mxl) > 0)
                mx = p, mxl = n, mxk = k, mxkey = key;
        }
    }
    *mnp = mn;
    *mnlp = mnl;
    *mxp = mx;
    *mxlp = mxl;
}

static void binary_minmax(const struct qv__node *node, const uint8_t *mn, size_t mnl,
                          const uint8_t *mx, size_t mxl, struct qv__stats_buf *o);

static void binaries(const struct qv__node *node, const struct qv_values *v,
                     const uint8_t *validity, struct qv__stats_buf *o) {
    const uint8_t *mn = NULL, *mx = NULL;
    size_t mnl = 0, mxl = 0;
    int fixed = v->kind == QV_KIND_FIXED_BINARY;
    if (fixed && v->fixed_width == 0) {
        /* fixed_size_binary(0): every value is the empty string (and the
         * values pointer may be NULL). */
        for (int64_t i = 0; i < v->count; i++)
            if (valid(validity, i)) {
                o->s.flags |= QV__STAT_MINMAX;
                return;
            }
        return;
    }
    const uint8_t *end = fixed ? (const uint8_t *)v->values + (size_t)v->count * (size_t)v->fixed_width
                         : v->kind == QV_KIND_BINARY ? v->data + ((const int32_t *)v->values)[v->count]
                                                     : v->data + ((const int64_t *)v->values)[v->count];
    if (fixed)
        binaries_scan(v, validity, QV_KIND_FIXED_BINARY, (size_t)v->fixed_width, end, &mn, &mnl, &mx, &mxl);
    else if (v->kind == QV_KIND_BINARY)
        binaries_scan(v, validity, QV_KIND_BINARY, 0, end, &mn, &mnl, &mx, &mxl);
    else
        binaries_scan(v, validity, QV_KIND_LARGE_BINARY, 0, end, &mn, &mnl, &mx, &mxl);
    if (mn) binary_minmax(node, mn, mnl, mx, mxl, o);
}

/* Records binary extremes (cut to the statistics' limit). */
static void binary_minmax(const struct qv__node *node, const uint8_t *mn, size_t mnl,
                          const uint8_t *mx, size_t mxl, struct qv__stats_buf *o) {
    int utf8 = node->field->type == QV_TYPE_UTF8 || node->field->type == QV_TYPE_LARGE_UTF8;
    o->s.flags |= QV__STAT_MINMAX;
    o->s.min_len = cut(mn, mnl, utf8);
    o->s.max_len = cut(mx, mxl, utf8);
    if (o->s.min_len < mnl) o->s.flags |= QV__STAT_MIN_TRUNCATED;
    if (o->s.max_len < mxl) o->s.flags |= QV__STAT_MAX_TRUNCATED;
    memcpy(o->minb, mn, o->s.min_len);
    memcpy(o->maxb, mx, o->s.max_len);
}

/* decimal128 wider than 18 digits: signed 128-bit little-endian. */
static void decimals128(const struct qv_values *v, const uint8_t *validity,
                        struct qv__stats_buf *o) {
    __extension__ typedef __int128 i128;
    i128 mn = 0, mx = 0;
    int any = 0;
    for (int64_t i = 0; i < v->count; i++) {
        if (!valid(validity, i)) continue;
        i128 x;
        memcpy(&x, (const uint8_t *)v->values + (size_t)i * 16, 16);
        if (!any || x < mn) mn = x;
        if (!any || x > mx) mx = x;
        any = 1;
    }
    if (!any) return;
    o->s.flags |= QV__STAT_MINMAX;
    o->s.min_len = o->s.max_len = 16;
    memcpy(o->minb, &mn, 16);
    memcpy(o->maxb, &mx, 16);
}

void qv__stats_compute(const struct qv__node *node, const struct qv_values *values,
                       const uint8_t *validity, struct qv__stats_buf *out) {
    memset(&out->s, 0, sizeof out->s);
    out->s.min = out->minb;
    out->s.max = out->maxb;
    if (node->field->type == QV_TYPE_FLOAT16) return; /* bit patterns do not order */
    switch (values->kind) {
    case QV_KIND_BOOL: bools(values, validity, out); break;
    case QV_KIND_FLOAT32: case QV_KIND_FLOAT64: floats(values, validity, out); break;
    case QV_KIND_BINARY: case QV_KIND_LARGE_BINARY: binaries(node, values, validity, out); break;
    case QV_KIND_FIXED_BINARY:
        if (node->field->type == QV_TYPE_DECIMAL128) decimals128(values, validity, out);
        else binaries(node, values, validity, out);
        break;
    default: ints(values, validity, out); break;
    }
}

/* A value of a binary kind: its bytes. */
static const uint8_t *binary_at(const struct qv_values *v, int64_t i, size_t *len) {
    if (v->kind == QV_KIND_FIXED_BINARY) {
        *len = (size_t)v->fixed_width;
        return (const uint8_t *)v->values + (size_t)i * (size_t)v->fixed_width;
    }
    int64_t a, b;
    if (v->kind == QV_KIND_BINARY) {
        a = ((const int32_t *)v->values)[i];
        b = ((const int32_t *)v->values)[i + 1];
    } else {
        a = ((const int64_t *)v->values)[i];
        b = ((const int64_t *)v->values)[i + 1];
    }
    *len = (size_t)(b - a);
    return v->data + a;
}

int qv__stats_from_extremes(const struct qv__node *node, const struct qv_values *values,
                            int64_t min_row, int64_t max_row, struct qv__stats_buf *out) {
    const int bytes_ordered =
        values->kind == QV_KIND_BINARY || values->kind == QV_KIND_LARGE_BINARY ||
        (values->kind == QV_KIND_FIXED_BINARY && values->fixed_width > 0 &&
         node->field->type != QV_TYPE_DECIMAL128 && node->field->type != QV_TYPE_FLOAT16);
    if (!bytes_ordered || min_row < 0 || max_row < 0 || min_row >= values->count ||
        max_row >= values->count)
        return 0;
    memset(&out->s, 0, sizeof out->s);
    out->s.min = out->minb;
    out->s.max = out->maxb;
    size_t mnl, mxl;
    const uint8_t *mn = binary_at(values, min_row, &mnl), *mx = binary_at(values, max_row, &mxl);
    binary_minmax(node, mn, mnl, mx, mxl, out);
#ifdef QV_DEBUG
    /* The dictionary's ends are the scan's. */
    struct qv__stats_buf chk;
    qv__stats_compute(node, values, NULL, &chk);
    QV_DCHECK(chk.s.flags == out->s.flags && chk.s.min_len == out->s.min_len &&
              chk.s.max_len == out->s.max_len &&
              memcmp(chk.minb, out->minb, out->s.min_len) == 0 &&
              memcmp(chk.maxb, out->maxb, out->s.max_len) == 0);
#endif
    return 1;
}
