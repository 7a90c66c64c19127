/* The run-time choice of SIMD variants (base/cpu.c): the level and its
 * names, QUIVER_SIMD, and every kernel with variants checked at every level
 * this CPU supports against a plain reference written here, so that the
 * generic path (what aarch64 and old x86-64 run) is tested on a machine
 * that would otherwise always take AVX2. (The dictionary filter's kernels
 * are checked the same way in test_enc_code32.c.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arrow/arrow_internal.h"
#include "base/cpu_internal.h"
#include "base/rows.h"
#include "encoding/enc_internal.h"
#include "quiver/arrow.h"
#include "quiver/base.h"
#include "scan/expr_internal.h"

static uint64_t rs = 12345;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int initial_level = -1;

/* The levels to run the kernels at: every one up to what the CPU has. */
static int max_level(void) { return qv__cpu_supported(); }

static int setup(void **state) {
    (void)state;
    if (initial_level < 0) initial_level = qv__cpu_level();
    return 0;
}
static int teardown(void **state) {
    (void)state;
    qv__cpu_set_level(initial_level);
    return 0;
}

static void test_level_and_environment(void **state) {
    (void)state;
    int have = qv__cpu_supported();
    assert_in_range(have, QV__CPU_BASELINE, QV__CPU_AVX2);
#if !QV__X86_DISPATCH
    assert_int_equal(have, QV__CPU_BASELINE);
#endif
    /* The level chosen at the first call honours QUIVER_SIMD (this test runs
     * under ctest both with and without QUIVER_SIMD=baseline). */
    const char *env = getenv("QUIVER_SIMD");
    if (env && strcmp(env, "baseline") == 0) assert_int_equal(initial_level, QV__CPU_BASELINE);
    else if (!env || !*env || strcmp(env, "auto") == 0) assert_int_equal(initial_level, have);
    assert_true(initial_level <= have);
    /* Under an emulated CPU (ctest's qemu runs) the test is told what the
     * detection must find. */
    const char *expect = getenv("QV_TEST_EXPECT_SIMD");
    if (expect && *expect) assert_string_equal(qv__cpu_level_name(have), expect);

    assert_string_equal(qv__cpu_level_name(QV__CPU_BASELINE), "baseline");
    assert_string_equal(qv__cpu_level_name(QV__CPU_SSE42), "sse4.2");
    assert_string_equal(qv__cpu_level_name(QV__CPU_AVX2), "avx2");

    /* A request above what the CPU has is lowered to it; below baseline is
     * the baseline. */
    qv__cpu_set_level(QV__CPU_AVX2 + 5);
    assert_int_equal(qv__cpu_level(), have);
    assert_int_equal(qv__cpu_set_level(-3), have);
    assert_int_equal(qv__cpu_level(), QV__CPU_BASELINE);
}

static void test_unpack_every_width(void **state) {
    (void)state;
    uint64_t in[QV__VEC];
    uint32_t tmp[QV__VEC];
    uint8_t *packed = aligned_alloc(64, 128 * 64);
    uint32_t *o32 = aligned_alloc(64, QV__VEC * 4);
    uint64_t *o64 = aligned_alloc(64, QV__VEC * 8);
    assert_non_null(packed);
    assert_non_null(o32);
    assert_non_null(o64);
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (unsigned w = 0; w <= 64; w++) {
            for (int i = 0; i < QV__VEC; i++) in[i] = rnd() & qv__mask(w);
            memset(packed, 0, 128 * 64);
            qv__pack_vec(in, QV__VEC, w, packed, tmp);
            const uint64_t base = rnd() & 0xffff;
            if (w <= 32) {
                qv__unpack32((const uint32_t *)(void *)packed, w, o32, (uint32_t)base);
                for (int i = 0; i < QV__VEC; i++) {
                    uint32_t want = (uint32_t)(qv__bitpack_get(packed, w, (unsigned)i) + base);
                    if (o32[i] != want)
                        fail_msg("%s: unpack32 width %u value %d: %u, want %u",
                                 qv__cpu_level_name(level), w, i, o32[i], want);
                }
            }
            qv__unpack64(packed, w, o64, base);
            for (int i = 0; i < QV__VEC; i++) {
                uint64_t want = in[i] + base;
                if (o64[i] != want)
                    fail_msg("%s: unpack64 width %u value %d: %llu, want %llu",
                             qv__cpu_level_name(level), w, i, (unsigned long long)o64[i],
                             (unsigned long long)want);
            }
        }
    }
    free(packed);
    free(o32);
    free(o64);
}

static void test_bits_count(void **state) {
    (void)state;
    uint8_t bits[300];
    for (size_t i = 0; i < sizeof bits; i++) bits[i] = (uint8_t)rnd();
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (int k = 0; k < 400; k++) {
            int64_t off = (int64_t)(rnd() % 700), len = (int64_t)(rnd() % (8 * 300 - 700));
            if (k < 64) off = k, len = 2 * k; /* short and unaligned heads */
            int64_t want = 0;
            for (int64_t i = off; i < off + len; i++) want += qv_bit_get(bits, i);
            assert_int_equal(qv_bits_count(bits, off, len), want);
        }
    }
}

/* Row lists (base/rows.h): sorted lists of every length up to 40 (the
 * vector loop's tails), then one fault put anywhere: a row below 0, one at
 * the limit, far above it (INT64_MAX), a step back, a repeat (bad only
 * when strict); the first fault found must be the reference's. */
static int64_t rows_ref(const int64_t *r, int64_t n, int64_t limit, bool strict) {
    for (int64_t i = 0; i < n; i++)
        if (r[i] < 0 || r[i] >= limit || (i && (strict ? r[i] <= r[i - 1] : r[i] < r[i - 1])))
            return i;
    return -1;
}

static void test_rows_first_bad(void **state) {
    (void)state;
    int64_t r[40];
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        assert_int_equal(qv__rows_first_bad(r, 0, 0, true), -1);
        for (int64_t n = 1; n <= 40; n++) {
            for (int rep = 0; rep < 60; rep++) {
                for (int64_t i = 0; i < n; i++) r[i] = i * 3 + (int64_t)(rnd() % 3);
                const int64_t limit = r[n - 1] + 1 + (int64_t)(rnd() % 2);
                const bool strict = rep & 1;
                assert_int_equal(qv__rows_first_bad(r, n, limit, strict), -1);
                assert_int_equal(qv__rows_first_bad(r, n, limit, strict),
                                 rows_ref(r, n, limit, strict));
                const int64_t at = (int64_t)(rnd() % (uint64_t)n);
                switch (rep % 5) {
                case 0: r[at] = -1 - (int64_t)(rnd() % 5); break;
                case 1: r[at] = limit; break;
                case 2: r[at] = INT64_MAX; break;
                case 3: r[at] = at ? r[at - 1] - 1 : -1; break;
                default: r[at] = at ? r[at - 1] : limit + 7; break;
                }
                assert_int_equal(qv__rows_first_bad(r, n, limit, strict),
                                 rows_ref(r, n, limit, strict));
                assert_int_equal(qv__rows_first_bad(r, n, 0, strict), 0);
            }
        }
    }
}

static void test_widen_narrow(void **state) {
    (void)state;
    enum { N = 1000 };
    uint8_t raw[N * 8];
    uint64_t wide[N], back[N];
    uint8_t narrow[N * 8];
    for (size_t i = 0; i < sizeof raw; i++) raw[i] = (uint8_t)rnd();
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (unsigned width = 1; width <= 8; width *= 2) {
            for (int64_t n = 0; n <= N; n += n < 40 ? 1 : 97) {
                qv__widen(raw, width, n, wide);
                for (int64_t i = 0; i < n; i++) {
                    uint64_t want = 0;
                    memcpy(&want, raw + i * width, width); /* little-endian x86 and aarch64 */
                    assert_int_equal(wide[i], want);
                    back[i] = want | (width < 8 ? rnd() << (8 * width) : 0);
                }
                memset(narrow, 0xee, sizeof narrow);
                qv__narrow(back, width, n, narrow);
                assert_memory_equal(narrow, raw, (size_t)n * width);
                if (n < N) assert_int_equal(narrow[n * width], 0xee);
            }
        }
    }
}

/* Decimal widening in place (int64 -> 128-bit two's complement): every
 * length around the 4-value steps, the signs' edges, and nothing written
 * past 16 n bytes. */
static void test_decimal_widen(void **state) {
    (void)state;
    enum { N = 300 };
    static int64_t v[N];
    static uint8_t buf[N * 16 + 16];
    const int64_t edges[] = {0, -1, 1, INT64_MIN, INT64_MAX, INT64_MIN + 1, -99999999999, 5};
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (int64_t n = 0; n <= N; n += n < 20 ? 1 : 37) {
            for (int64_t i = 0; i < n; i++) v[i] = i % 3 ? (int64_t)rnd() : edges[(i / 3) % 8];
            for (int to = 0; to < 2; to++) { /* in place, then apart (qv__decimal_widen64_to) */
                memset(buf, 0xee, sizeof buf);
                if (to) {
                    qv__decimal_widen64_to(v, n, buf);
                } else {
                    memcpy(buf, v, (size_t)n * 8);
                    qv__decimal_widen64(buf, n);
                }
                for (int64_t i = 0; i < n; i++) {
                    int64_t lo, hi;
                    memcpy(&lo, buf + i * 16, 8);
                    memcpy(&hi, buf + i * 16 + 8, 8);
                    assert_int_equal(lo, v[i]);
                    assert_int_equal(hi, v[i] < 0 ? -1 : 0);
                }
                assert_int_equal(buf[n * 16], 0xee); /* the byte after the last slot */
            }
            /* Back to int64 (qv__decimal_narrow64): every value copied; true
             * only when all fit 18 digits (the edges include INT64_MIN and
             * INT64_MAX, which do not), and at any precision once one is
             * too wide for it. */
            static int64_t back[N];
            int fits18 = 1;
            for (int64_t i = 0; i < n; i++)
                fits18 &= v[i] > -1000000000000000000 && v[i] < 1000000000000000000;
            assert_int_equal(qv__decimal_narrow64(buf, n, 18, back), fits18);
            for (int64_t i = 0; i < n; i++) assert_int_equal(back[i], v[i]);
            if (n > 0) {
                int64_t keep = v[n - 1];
                v[n - 1] = 100000; /* six digits */
                qv__decimal_widen64_to(v, n, buf);
                assert_false(qv__decimal_narrow64(buf, n, 5, back));
                v[n - 1] = keep;
            }
        }
    }
}

/* Full validation's loops (arrow/validate.c: offsets monotone, ASCII,
 * decimals within precision) at every level: a valid array of every length
 * around the vector steps passes, and one fault at any position is found
 * and named. */
static void no_release(struct ArrowArray *a) { a->release = NULL; }

/* Slots [off, off + n) of the buffers, validated in full; the message to
 * msg (256 bytes). */
static int validate_at(const struct qv_field *f, int64_t off, int64_t n, const void *offsets,
                       const void *data, char *msg) {
    const void *bufs[3] = {NULL, offsets, data};
    struct ArrowArray a = {.length = n, .offset = off,
                           .n_buffers = f->type == QV_TYPE_DECIMAL128 ? 2 : 3, .buffers = bufs,
                           .release = no_release};
    if (f->type == QV_TYPE_DECIMAL128) bufs[1] = data;
    struct qv_error err = {0};
    int rc = qv_arrow_array_validate(&a, f, QV_VALIDATE_FULL, &err);
    memcpy(msg, err.message, 255);
    msg[255] = 0;
    return rc;
}

static void test_validate_loops(void **state) {
    (void)state;
    enum { N = 200 };
    static int32_t o32[N + 1];
    static int64_t o64[N + 1];
    static uint8_t text[N * 2];
    static int64_t dec[N * 2];
    const struct qv_field utf8 = {.name = "s", .type = QV_TYPE_UTF8};
    const struct qv_field lutf8 = {.name = "s", .type = QV_TYPE_LARGE_UTF8};
    const struct qv_field d15 = {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 15, .scale = 2};
    const int64_t big = 999999999999999; /* 10^15 - 1 */
    char msg[256], want[96];
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (int64_t n = 1; n <= N; n += n < 70 ? 1 : 29) {
            /* n values of 2 bytes each, ASCII; decimals at the bounds. */
            for (int64_t i = 0; i <= n; i++) o32[i] = (int32_t)(2 * i), o64[i] = 2 * i;
            for (int64_t i = 0; i < 2 * n; i++) text[i] = (uint8_t)('a' + i % 26);
            for (int64_t i = 0; i < n; i++) {
                int64_t v = i % 3 == 0 ? big : i % 3 == 1 ? -big : (int64_t)(rnd() % 1000) - 500;
                dec[2 * i] = v;
                dec[2 * i + 1] = v < 0 ? -1 : 0;
            }
            assert_int_equal(validate_at(&utf8, 0, n, o32, text, msg), 0);
            assert_int_equal(validate_at(&lutf8, 0, n, o64, text, msg), 0);
            assert_int_equal(validate_at(&d15, 0, n, NULL, dec, msg), 0);
            for (int64_t k = 1; k < n; k += 1 + k / 3) {
                /* offset k below offset k - 1 */
                o32[k] = o32[k - 1] - 1;
                o64[k] = o64[k - 1] - 1;
                snprintf(want, sizeof want, "offsets not monotone at index %lld", (long long)k);
                assert_int_equal(validate_at(&utf8, 0, n, o32, text, msg), EINVAL);
                assert_non_null(strstr(msg, want));
                assert_int_equal(validate_at(&lutf8, 0, n, o64, text, msg), EINVAL);
                assert_non_null(strstr(msg, want));
                o32[k] = (int32_t)(2 * k);
                o64[k] = 2 * k;
                /* a byte that is not UTF-8 in value k */
                text[2 * k] = 0xff;
                snprintf(want, sizeof want, "value at index %lld is not valid UTF-8", (long long)k);
                assert_int_equal(validate_at(&utf8, 0, n, o32, text, msg), EINVAL);
                assert_non_null(strstr(msg, want));
                text[2 * k] = 'a';
                /* a decimal one past the precision, and one whose high half
                 * is not the low half's sign */
                const int64_t keep = dec[2 * k], keep_hi = dec[2 * k + 1];
                dec[2 * k] = k % 2 ? big + 1 : -big - 1;
                dec[2 * k + 1] = dec[2 * k] < 0 ? -1 : 0;
                snprintf(want, sizeof want, "value at index %lld does not fit", (long long)k);
                assert_int_equal(validate_at(&d15, 0, n, NULL, dec, msg), EINVAL);
                assert_non_null(strstr(msg, want));
                dec[2 * k] = 5;
                dec[2 * k + 1] = -1;
                assert_int_equal(validate_at(&d15, 0, n, NULL, dec, msg), EINVAL);
                assert_non_null(strstr(msg, want));
                dec[2 * k] = keep;
                dec[2 * k + 1] = keep_hi;
            }
        }
    }
}

/* The same loops on arrays with a nonzero offset (slots [off, off + n) of
 * longer buffers), at every level: with valid values around the slots (a
 * loop looking at the wrong span misses the fault) and with garbage there
 * (offsets decreasing, bytes 0xff, decimals out of range: ignored), a
 * fault in slot off + k is found and named as index k. Decimals at precision 18 with int64's extremes
 * (beyond 10^18 - 1, so refused) and precision 1. */
static void test_validate_offset(void **state) {
    (void)state;
    enum { N = 140, OFF = 70, SLACK = 70 };
    static int32_t o32[OFF + N + 1 + SLACK];
    static int64_t o64[OFF + N + 1 + SLACK];
    static uint8_t text[2 * (OFF + N + SLACK) + 8];
    static int64_t dec[2 * (OFF + N + SLACK)];
    const struct qv_field utf8 = {.name = "s", .type = QV_TYPE_UTF8};
    const struct qv_field lutf8 = {.name = "s", .type = QV_TYPE_LARGE_UTF8};
    const struct qv_field d18 = {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 18, .scale = 0};
    const struct qv_field d1 = {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 1, .scale = 0};
    const int64_t big = 999999999999999999; /* 10^18 - 1 */
    const int64_t offs[] = {1, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65};
    const int64_t ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 140};
    char msg[256], want[96];
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (int garbage = 0; garbage < 2; garbage++)
        for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                const int64_t off = offs[oi], n = ns[ni];
                const int64_t end = off + n; /* slots [off, end) */
                /* Value j is 2 bytes at 2 j; everything outside the slots is
                 * garbage: offsets decreasing, bytes 0xff, decimals huge. */
                for (int64_t j = 0; j <= OFF + N + SLACK; j++) {
                    const int in = !garbage || (j >= off && j <= end);
                    o32[j] = in ? (int32_t)(2 * j) : (int32_t)(100000 - j);
                    o64[j] = in ? 2 * j : (int64_t)(INT64_MAX - j);
                }
                for (int64_t b = 0; b < (int64_t)sizeof text; b++)
                    text[b] = !garbage || (b >= 2 * off && b < 2 * end) ? (uint8_t)('a' + b % 26) : 0xff;
                for (int64_t j = 0; j < OFF + N + SLACK; j++) {
                    const int in = !garbage || (j >= off && j < end);
                    int64_t v = j % 4 == 0 ? big : j % 4 == 1 ? -big : j % 4 == 2 ? INT64_MIN : INT64_MAX;
                    if (!in) v = j % 2 ? INT64_MIN : INT64_MAX;
                    dec[2 * j] = v;
                    dec[2 * j + 1] = in ? (v < 0 ? -1 : 0) : 12345; /* outside: not even a sign */
                    if (in && (v == INT64_MIN || v == INT64_MAX)) dec[2 * j] = j % 2 ? 7 : -7, dec[2 * j + 1] = j % 2 ? 0 : -1;
                }
                if (validate_at(&utf8, off, n, o32, text, msg))
                    fail_msg("%s off %lld n %lld utf8: %s", qv__cpu_level_name(level), (long long)off, (long long)n, msg);
                if (validate_at(&lutf8, off, n, o64, text, msg))
                    fail_msg("%s off %lld n %lld large utf8: %s", qv__cpu_level_name(level), (long long)off, (long long)n, msg);
                if (validate_at(&d18, off, n, NULL, dec, msg))
                    fail_msg("%s off %lld n %lld decimal: %s", qv__cpu_level_name(level), (long long)off, (long long)n, msg);
                for (int64_t k = 0; k < n; k++) {
                    if (k > 0) { /* offset k below offset k - 1 */
                        o32[off + k] = o32[off + k - 1] - 1;
                        o64[off + k] = o64[off + k - 1] - 1;
                        snprintf(want, sizeof want, "offsets not monotone at index %lld", (long long)k);
                        assert_int_equal(validate_at(&utf8, off, n, o32, text, msg), EINVAL);
                        if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
                        assert_int_equal(validate_at(&lutf8, off, n, o64, text, msg), EINVAL);
                        if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
                        o32[off + k] = (int32_t)(2 * (off + k));
                        o64[off + k] = 2 * (off + k);
                    }
                    /* the second byte of value k not UTF-8 */
                    text[2 * (off + k) + 1] = 0x80;
                    snprintf(want, sizeof want, "value at index %lld is not valid UTF-8", (long long)k);
                    assert_int_equal(validate_at(&utf8, off, n, o32, text, msg), EINVAL);
                    if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
                    assert_int_equal(validate_at(&lutf8, off, n, o64, text, msg), EINVAL);
                    if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
                    text[2 * (off + k) + 1] = (uint8_t)('a' + (2 * (off + k) + 1) % 26);
                    /* decimal k: int64's extremes (19 digits) */
                    const int64_t keep = dec[2 * (off + k)], keep_hi = dec[2 * (off + k) + 1];
                    dec[2 * (off + k)] = k % 2 ? INT64_MAX : INT64_MIN;
                    dec[2 * (off + k) + 1] = k % 2 ? 0 : -1;
                    snprintf(want, sizeof want, "value at index %lld does not fit", (long long)k);
                    assert_int_equal(validate_at(&d18, off, n, NULL, dec, msg), EINVAL);
                    if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
                    dec[2 * (off + k)] = k % 2 ? big + 1 : -big - 1;
                    dec[2 * (off + k) + 1] = k % 2 ? 0 : -1;
                    assert_int_equal(validate_at(&d18, off, n, NULL, dec, msg), EINVAL);
                    if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
                    dec[2 * (off + k)] = keep;
                    dec[2 * (off + k) + 1] = keep_hi;
                }
                /* precision 1: -9..9 pass; 10 or -10 at the last slot fails */
                for (int64_t j = off; j < end; j++) dec[2 * j] = (j % 19) - 9, dec[2 * j + 1] = (j % 19) < 9 ? -1 : 0;
                if (validate_at(&d1, off, n, NULL, dec, msg))
                    fail_msg("%s off %lld n %lld decimal(1): %s", qv__cpu_level_name(level), (long long)off, (long long)n, msg);
                dec[2 * (end - 1)] = n % 2 ? 10 : -10;
                dec[2 * (end - 1) + 1] = n % 2 ? 0 : -1;
                snprintf(want, sizeof want, "value at index %lld does not fit", (long long)(n - 1));
                assert_int_equal(validate_at(&d1, off, n, NULL, dec, msg), EINVAL);
                if (!strstr(msg, want)) fail_msg("%s: '%s', want '%s'", qv__cpu_level_name(level), msg, want);
            }
    }
}

static void test_istats(void **state) {
    (void)state;
    enum { N = 3000 };
    uint64_t v[N];
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (unsigned bits = 8; bits <= 64; bits *= 2) {
            /* Shapes: random; all below the sign bit; all at or above it
             * (the extremes then skip the signed pass); all below but one
             * value anywhere, the tail's last included (they must not). */
            for (int64_t n = 1; n <= N; n += n < 20 ? 1 : 331) {
                for (int shape = 0; shape < 4; shape++) {
                    const uint64_t sb = UINT64_C(1) << (bits - 1);
                    for (int64_t i = 0; i < n; i++) {
                        v[i] = rnd() & qv__mask(bits);
                        if (shape == 1 || shape == 3) v[i] &= sb - 1;
                        if (shape == 2) v[i] |= sb;
                    }
                    if (shape == 3) v[(int64_t)(rnd() % (uint64_t)n)] |= sb;
                    if (shape == 3 && n > 1 && n % 2) v[n - 1] |= sb;
                    struct qv__istats s;
                    qv__istats_compute(v, n, bits, &s);
                    uint64_t umin = UINT64_MAX, umax = 0;
                    int64_t smin = INT64_MAX, smax = INT64_MIN;
                    for (int64_t i = 0; i < n; i++) {
                        umin = v[i] < umin ? v[i] : umin;
                        umax = v[i] > umax ? v[i] : umax;
                        int64_t x = qv__sext(v[i], bits);
                        smin = x < smin ? x : smin;
                        smax = x > smax ? x : smax;
                    }
                    assert_int_equal(s.umin, umin);
                    assert_int_equal(s.umax, umax);
                    assert_int_equal(s.smin, smin);
                    assert_int_equal(s.smax, smax);
                }
            }
        }
    }
}

/* ---- Predicate kernels against a per-value reference ---- */

static bool holds(int c, int op) {
    switch (op) {
    case QV_CMP_EQ: return c == 0;
    case QV_CMP_NE: return c != 0;
    case QV_CMP_LT: return c < 0;
    case QV_CMP_LE: return c <= 0;
    case QV_CMP_GT: return c > 0;
    default: return c >= 0;
    }
}
#define CMP3(x, y) (((x) > (y)) - ((x) < (y)))

/* Value i of a column of type vt compared with the plan's constant. */
static int ref_cmp(int vt, const uint8_t *b, int64_t i, const struct qv__xplan *p) {
    switch (vt) {
    case QV__VT_I8: return CMP3(((const int8_t *)b)[i], (int8_t)p->ki);
    case QV__VT_I16: return CMP3(((const int16_t *)b)[i], (int16_t)p->ki);
    case QV__VT_I32: return CMP3(((const int32_t *)b)[i], (int32_t)p->ki);
    case QV__VT_I64: return CMP3(((const int64_t *)b)[i], p->ki);
    case QV__VT_U8: return CMP3(((const uint8_t *)b)[i], (uint8_t)p->ku);
    case QV__VT_U16: return CMP3(((const uint16_t *)b)[i], (uint16_t)p->ku);
    case QV__VT_U32: return CMP3(((const uint32_t *)b)[i], (uint32_t)p->ku);
    case QV__VT_U64: return CMP3(((const uint64_t *)b)[i], p->ku);
    case QV__VT_F32: return CMP3((double)((const float *)b)[i], p->kf);
    case QV__VT_F64: return CMP3(((const double *)b)[i], p->kf);
    default: {
        int64_t x;
        memcpy(&x, b + i * 16, 8);
        return CMP3(x, p->ki);
    }
    }
}

static void test_compare_kernels(void **state) {
    (void)state;
    enum { SLOTS = 700 };
    static const int vts[] = {QV__VT_I8,  QV__VT_I16, QV__VT_I32, QV__VT_I64,
                              QV__VT_U8,  QV__VT_U16, QV__VT_U32, QV__VT_U64,
                              QV__VT_F32, QV__VT_F64, QV__VT_D64};
    static const int widths[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 16};
    uint8_t buf[SLOTS * 16];
    uint64_t out[SLOTS / 64 + 2];
    for (size_t t = 0; t < sizeof vts / sizeof vts[0]; t++) {
        int vt = vts[t];
        /* Values from a small range so that every operator sees equal, less
         * and greater values; floats include a NaN, which compares false
         * except for !=. */
        for (int64_t i = 0; i < SLOTS; i++) {
            int64_t x = (int64_t)(rnd() % 9) - 4;
            uint64_t ux = (uint64_t)x;
            switch (vt) {
            case QV__VT_F32: {
                float f = i == 5 ? __builtin_nanf("") : (float)x;
                memcpy(buf + i * 4, &f, 4);
                break;
            }
            case QV__VT_F64: {
                double f = i == 5 ? __builtin_nan("") : (double)x;
                memcpy(buf + i * 8, &f, 8);
                break;
            }
            case QV__VT_D64:
                memcpy(buf + i * 16, &x, 8);
                memset(buf + i * 16 + 8, x < 0 ? 0xff : 0, 8);
                break;
            default:
                if (vt >= QV__VT_U8 && vt <= QV__VT_U64) ux = (uint64_t)(x + 4) << (8 * widths[t] - 3);
                memcpy(buf + i * widths[t], &ux, (size_t)widths[t]);
                break;
            }
        }
        const void *buffers[2] = {NULL, buf};
        struct ArrowArray a = {.length = SLOTS, .n_buffers = 2, .buffers = buffers};
        for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
            qv__cpu_set_level(level);
            for (int op = QV_CMP_EQ; op <= QV_CMP_GE; op++) {
                int vw = widths[t] > 8 ? 8 : widths[t];
                struct qv__xplan p = {.op = op, .ki = 1, .ku = (uint64_t)5 << (8 * vw - 3),
                                      .kf = 1.0, .kq = 1};
                qv__xkernel fn = qv__kernel_cmp(vt, op);
                assert_non_null(fn);
                for (int k = 0; k < 6; k++) {
                    int64_t slot = k * 7, n = k == 0 ? 64 : SLOTS - slot - 3 * k;
                    memset(out, 0xa5, sizeof out);
                    fn(&p, &a, slot, n, out);
                    for (int64_t i = 0; i < n; i++) {
                        bool want = (vt == QV__VT_F32 || vt == QV__VT_F64) && slot + i == 5
                                        ? op == QV_CMP_NE
                                        : holds(ref_cmp(vt, buf, slot + i, &p), op);
                        bool got = (out[i >> 6] >> (i & 63)) & 1;
                        if (got != want)
                            fail_msg("%s: type %d op %d slot %lld row %lld: %d, want %d",
                                     qv__cpu_level_name(level), vt, op, (long long)slot,
                                     (long long)i, got, want);
                    }
                    if (n & 63) assert_int_equal(out[n >> 6] >> (n & 63), 0);
                }
            }
        }
    }
}

/* ALP's (e, f) search scores pairs four doubles (eight floats) at a time
 * with AVX2: the choice, its estimate and its exceptions are the same at
 * every level, on decimals, integers, values too large for digits, NaN,
 * infinities, -0.0 and random bit patterns, at lengths that leave every
 * tail and that take the one- and the two-level search (n <= 128 and
 * above, one value in n / 1024 sampled). */
static void fill_floats(void *out, int pt, int64_t n, int shape) {
    for (int64_t i = 0; i < n; i++) {
        double x;
        uint64_t r = rnd();
        switch (shape) {
        case 0: x = (double)(int64_t)(r % 100000) / 100.0; break;       /* 2 decimals */
        case 1: x = (double)(int64_t)(r % 17); break;                   /* small integers */
        case 2: x = (double)(int64_t)(r % 1000) / 10.0 + (r % 97 == 0 ? 1e300 : 0); break;
        case 3: {
            static const double odd[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e17, -3.25};
            x = r % 5 == 0 ? odd[(r >> 8) % 7] : (double)(int64_t)(r % 5000) / 1000.0;
            break;
        }
        default: {
            if (pt == QV__PT_F64) {
                memcpy(&x, &r, 8);
            } else {
                uint32_t b = (uint32_t)r;
                float f;
                memcpy(&f, &b, 4);
                x = f;
            }
        }
        }
        if (pt == QV__PT_F64) ((double *)out)[i] = x;
        else ((float *)out)[i] = (float)x;
    }
}

static void test_alp_choose_same_at_every_level(void **state) {
    (void)state;
    enum { N = 20000 };
    double *buf = malloc(N * sizeof *buf);
    assert_non_null(buf);
    static const int64_t lens[] = {1, 3, 4, 7, 9, 100, 128, 129, 1000, 1023, 1024, 1031, 5000, N};
    static const int pts[] = {QV__PT_F32, QV__PT_F64};
    for (size_t pi = 0; pi < 2; pi++) {
        const int pt = pts[pi];
        for (int shape = 0; shape < 5; shape++) {
            for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                const int64_t n = lens[li];
                fill_floats(buf, pt, n, shape);
                qv__cpu_set_level(QV__CPU_BASELINE);
                struct qv__alp_choice want;
                qv__alp_choose(buf, n, pt, &want);
                for (int level = QV__CPU_BASELINE + 1; level <= max_level(); level++) {
                    qv__cpu_set_level(level);
                    struct qv__alp_choice got;
                    qv__alp_choose(buf, n, pt, &got);
                    assert_int_equal(got.e, want.e);
                    assert_int_equal(got.f, want.f);
                    assert_true(got.est_bytes == want.est_bytes);
                    assert_int_equal(got.est_exceptions, want.est_exceptions);
                }
                /* Decimals with two digits need e - f = 2 and no exception. */
                if (shape == 0 && pt == QV__PT_F64 && n >= 100) {
                    assert_int_equal(want.e - want.f, 2);
                    assert_int_equal(want.est_exceptions, 0);
                }
            }
        }
    }
    free(buf);
}

static void test_hash_same_at_every_level(void **state) {
    (void)state;
    uint8_t data[5000];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)rnd();
    qv__cpu_set_level(QV__CPU_BASELINE);
    uint64_t want[64];
    for (int k = 0; k < 64; k++) want[k] = qv_hash64(data + k, sizeof data - (size_t)k * 70, (uint64_t)k);
    for (int level = QV__CPU_BASELINE; level <= max_level(); level++) {
        qv__cpu_set_level(level);
        for (int k = 0; k < 64; k++)
            assert_int_equal(qv_hash64(data + k, sizeof data - (size_t)k * 70, (uint64_t)k), want[k]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_level_and_environment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unpack_every_width, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bits_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rows_first_bad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_widen_narrow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decimal_widen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_istats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compare_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alp_choose_same_at_every_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash_same_at_every_level, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
