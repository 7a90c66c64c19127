/* Decimal128 range checks: does an unscaled value fit its precision?
 * 10^38 < 2^127, so the magnitude of any in-range value fits unsigned
 * 128-bit arithmetic, which GCC and Clang provide as an extension. */
#include "arrow/arrow_internal.h"
#include "base/cpu_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

__extension__ typedef unsigned __int128 qv__u128;
__extension__ typedef __int128 qv__i128;

/* 10^p as {low, high} 64-bit halves. */
static const uint64_t pow10_table[39][2] = {
    {UINT64_C(0x0000000000000001), UINT64_C(0x0000000000000000)}, /* 1e0 */
    {UINT64_C(0x000000000000000a), UINT64_C(0x0000000000000000)}, /* 1e1 */
    {UINT64_C(0x0000000000000064), UINT64_C(0x0000000000000000)}, /* 1e2 */
    {UINT64_C(0x00000000000003e8), UINT64_C(0x0000000000000000)}, /* 1e3 */
    {UINT64_C(0x0000000000002710), UINT64_C(0x0000000000000000)}, /* 1e4 */
    {UINT64_C(0x00000000000186a0), UINT64_C(0x0000000000000000)}, /* 1e5 */
    {UINT64_C(0x00000000000f4240), UINT64_C(0x0000000000000000)}, /* 1e6 */
    {UINT64_C(0x0000000000989680), UINT64_C(0x0000000000000000)}, /* 1e7 */
    {UINT64_C(0x0000000005f5e100), UINT64_C(0x0000000000000000)}, /* 1e8 */
    {UINT64_C(0x000000003b9aca00), UINT64_C(0x0000000000000000)}, /* 1e9 */
    {UINT64_C(0x00000002540be400), UINT64_C(0x0000000000000000)}, /* 1e10 */
    {UINT64_C(0x000000174876e800), UINT64_C(0x0000000000000000)}, /* 1e11 */
    {UINT64_C(0x000000e8d4a51000), UINT64_C(0x0000000000000000)}, /* 1e12 */
    {UINT64_C(0x000009184e72a000), UINT64_C(0x0000000000000000)}, /* 1e13 */
    {UINT64_C(0x00005af3107a4000), UINT64_C(0x0000000000000000)}, /* 1e14 */
    {UINT64_C(0x00038d7ea4c68000), UINT64_C(0x0000000000000000)}, /* 1e15 */
    {UINT64_C(0x002386f26fc10000), UINT64_C(0x0000000000000000)}, /* 1e16 */
    {UINT64_C(0x016345785d8a0000), UINT64_C(0x0000000000000000)}, /* 1e17 */
    {UINT64_C(0x0de0b6b3a7640000), UINT64_C(0x0000000000000000)}, /* 1e18 */
    {UINT64_C(0x8ac7230489e80000), UINT64_C(0x0000000000000000)}, /* 1e19 */
    {UINT64_C(0x6bc75e2d63100000), UINT64_C(0x0000000000000005)}, /* 1e20 */
    {UINT64_C(0x35c9adc5dea00000), UINT64_C(0x0000000000000036)}, /* 1e21 */
    {UINT64_C(0x19e0c9bab2400000), UINT64_C(0x000000000000021e)}, /* 1e22 */
    {UINT64_C(0x02c7e14af6800000), UINT64_C(0x000000000000152d)}, /* 1e23 */
    {UINT64_C(0x1bcecceda1000000), UINT64_C(0x000000000000d3c2)}, /* 1e24 */
    {UINT64_C(0x161401484a000000), UINT64_C(0x0000000000084595)}, /* 1e25 */
    {UINT64_C(0xdcc80cd2e4000000), UINT64_C(0x000000000052b7d2)}, /* 1e26 */
    {UINT64_C(0x9fd0803ce8000000), UINT64_C(0x00000000033b2e3c)}, /* 1e27 */
    {UINT64_C(0x3e25026110000000), UINT64_C(0x00000000204fce5e)}, /* 1e28 */
    {UINT64_C(0x6d7217caa0000000), UINT64_C(0x00000001431e0fae)}, /* 1e29 */
    {UINT64_C(0x4674edea40000000), UINT64_C(0x0000000c9f2c9cd0)}, /* 1e30 */
    {UINT64_C(0xc0914b2680000000), UINT64_C(0x0000007e37be2022)}, /* 1e31 */
    {UINT64_C(0x85acef8100000000), UINT64_C(0x000004ee2d6d415b)}, /* 1e32 */
    {UINT64_C(0x38c15b0a00000000), UINT64_C(0x0000314dc6448d93)}, /* 1e33 */
    {UINT64_C(0x378d8e6400000000), UINT64_C(0x0001ed09bead87c0)}, /* 1e34 */
    {UINT64_C(0x2b878fe800000000), UINT64_C(0x0013426172c74d82)}, /* 1e35 */
    {UINT64_C(0xb34b9f1000000000), UINT64_C(0x00c097ce7bc90715)}, /* 1e36 */
    {UINT64_C(0x00f436a000000000), UINT64_C(0x0785ee10d5da46d9)}, /* 1e37 */
    {UINT64_C(0x098a224000000000), UINT64_C(0x4b3b4ca85a86c47a)}, /* 1e38 */
};

void qv__pow10_128(int p, uint64_t *lo, uint64_t *hi) {
    *lo = pow10_table[p][0];
    *hi = pow10_table[p][1];
}

bool qv__decimal_fits(uint64_t lo, int64_t hi, int precision) {
    if (precision < 1 || precision > 38) return false;
    qv__i128 v = (qv__i128)(((qv__u128)(uint64_t)hi << 64) | lo);
    qv__u128 mag = v < 0 ? (qv__u128)0 - (qv__u128)v : (qv__u128)v;
    qv__u128 bound = ((qv__u128)pow10_table[precision][1] << 64) | pow10_table[precision][0];
    return mag < bound;
}

/* One value into its slot at dst: the value, then its sign extension. */
static inline void put_slot(uint8_t *dst, int64_t v) {
    int64_t hi = v < 0 ? -1 : 0;
    memcpy(dst, &v, 8);
    memcpy(dst + 8, &hi, 8);
}
#if QV__X86_DISPATCH
/* Four values into their slots at dst, the upper two first (so that in
 * place, slots are written only after the values under them were read). */
static QV__TARGET_AVX2 inline void put_slots4_avx2(uint8_t *dst, __m256i v) {
    __m256i h = _mm256_cmpgt_epi64(_mm256_setzero_si256(), v);
    __m256i a = _mm256_unpacklo_epi64(v, h); /* v0 h0 | v2 h2 */
    __m256i b = _mm256_unpackhi_epi64(v, h); /* v1 h1 | v3 h3 */
    _mm256_storeu_si256((__m256i *)(void *)(dst + 32), _mm256_permute2x128_si256(a, b, 0x31));
    _mm256_storeu_si256((__m256i *)(void *)dst, _mm256_permute2x128_si256(a, b, 0x20));
}
#endif

/* int64 values at p[0..8n) widened in place to 128-bit two's complement at
 * p[0..16n), last first: slot i (at 16 i) is written only after values i
 * and above were read, and 16 i >= 8 i, so nothing is overwritten before
 * it is read. The AVX2 variant moves 4 values per step (their high halves
 * from a signed compare) at about twice the speed of the scalar loop: it
 * runs over every decimal(<=18) value a scan hands out. */
static void widen_generic(uint8_t *p, int64_t n) {
    for (int64_t i = n - 1; i >= 0; i--) {
        int64_t v;
        memcpy(&v, p + (size_t)i * 8, 8);
        put_slot(p + (size_t)i * 16, v);
    }
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void widen_avx2(uint8_t *p, int64_t n) {
    int64_t i = n;
    while (i >= 4) {
        i -= 4;
        put_slots4_avx2(p + (size_t)i * 16,
                   _mm256_loadu_si256((const __m256i *)(const void *)(p + (size_t)i * 8)));
    }
    widen_generic(p, i);
}
#endif

void qv__decimal_widen64(void *p, int64_t n) {
    QV__DISPATCH2(widen, (uint8_t *)p, n);
}

/* The same, from in[0..n) to the 16-byte slots at out (not overlapping),
 * first to last. */
static void widen_to_generic(const int64_t *in, int64_t n, uint8_t *out) {
    for (int64_t i = 0; i < n; i++) put_slot(out + (size_t)i * 16, in[i]);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 void widen_to_avx2(const int64_t *in, int64_t n, uint8_t *out) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        put_slots4_avx2(out + (size_t)i * 16, _mm256_loadu_si256((const __m256i *)(const void *)(in + i)));
    widen_to_generic(in + i, n - i, out + (size_t)i * 16);
}
#endif

void qv__decimal_widen64_to(const int64_t *in, int64_t n, void *out) {
    QV__DISPATCH2(widen_to, in, n, (uint8_t *)out);
}

/* 128-bit values at src[0..16n) narrowed to their low halves at out,
 * while checking that every one (nulls included) fits b1 = 10^p - 1 as
 * validate.c's full tier does: hi is lo's sign extension and -b1 <= lo <=
 * b1. One pass for the writer's copy and its check. */
static QV__ALWAYS_INLINE bool narrow_body(const uint8_t *src, int64_t n, uint64_t b1,
                                          int64_t *out) {
    uint64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t lo, hi;
        memcpy(&lo, src + (size_t)i * 16, 8);
        memcpy(&hi, src + (size_t)i * 16 + 8, 8);
        memcpy(&out[i], &lo, 8);
        bad |= qv__decimal_unfit_bits(lo, hi, b1);
    }
    return !bad;
}
static bool narrow_generic(const uint8_t *src, int64_t n, uint64_t b1, int64_t *out) {
    return narrow_body(src, n, b1, out);
}
#if QV__X86_DISPATCH
static QV__TARGET_AVX2 bool narrow_avx2(const uint8_t *src, int64_t n, uint64_t b1, int64_t *out) {
    return narrow_body(src, n, b1, out);
}
#endif

bool qv__decimal_narrow64(const void *src, int64_t n, int precision, int64_t *out) {
    if (precision < 1 || precision > 18) return false;
    return QV__DISPATCH2(narrow, (const uint8_t *)src, n, pow10_table[precision][0] - 1, out);
}
