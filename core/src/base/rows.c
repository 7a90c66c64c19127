/* Row list checks (base/rows.h). */
#include "base/rows.h"

#include "base/cpu_internal.h"

#if QV__X86_DISPATCH
#include <immintrin.h>
#endif

static int64_t first_bad_scan(const int64_t *rows, int64_t n, int64_t limit, bool strict) {
    for (int64_t i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= limit) return i;
        if (i && (strict ? rows[i] <= rows[i - 1] : rows[i] < rows[i - 1])) return i;
    }
    return -1;
}

/* One pass without branches on the rows: any fault sets a bit. */
static QV__ALWAYS_INLINE bool any_bad_body(const int64_t *rows, int64_t n, int64_t limit,
                                           bool strict) {
    uint64_t bad = (uint64_t)rows[0] >= (uint64_t)limit;
    for (int64_t i = 1; i < n; i++)
        bad |= ((uint64_t)rows[i] >= (uint64_t)limit) |
               (strict ? rows[i] <= rows[i - 1] : rows[i] < rows[i - 1]);
    return bad != 0;
}

static bool any_bad_generic(const int64_t *rows, int64_t n, int64_t limit, bool strict) {
    return any_bad_body(rows, n, limit, strict);
}

#if QV__X86_DISPATCH
static QV__TARGET_AVX2 bool any_bad_avx2(const int64_t *rows, int64_t n, int64_t limit,
                                         bool strict) {
    /* Row i against row i - 1, four at a time: below 0, above limit - 1
     * (limit >= 1 here), or not above (strict) / below the one before. */
    const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi64x(limit - 1);
    const __m256i ones = _mm256_set1_epi64x(-1);
    __m256i acc = zero;
    int64_t i = 1;
    for (; i + 4 <= n; i += 4) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(rows + i));
        const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(rows + i - 1));
        const __m256i order = strict ? _mm256_xor_si256(_mm256_cmpgt_epi64(v, p), ones)
                                     : _mm256_cmpgt_epi64(p, v);
        acc = _mm256_or_si256(acc, _mm256_or_si256(order, _mm256_or_si256(
                                                             _mm256_cmpgt_epi64(zero, v),
                                                             _mm256_cmpgt_epi64(v, top))));
    }
    if (!_mm256_testz_si256(acc, acc)) return true;
    /* Row 0 and the tail (each with the row before it). */
    return any_bad_body(rows, 1, limit, strict) ||
           (i < n && any_bad_body(rows + i - 1, n - i + 1, limit, strict));
}
#endif

int64_t qv__rows_first_bad(const int64_t *rows, int64_t n, int64_t limit, bool strict) {
    if (n <= 0) return -1;
    if (limit <= 0) return 0;
    if (!QV__DISPATCH2(any_bad, rows, n, limit, strict)) return -1;
    return first_bad_scan(rows, n, limit, strict);
}
