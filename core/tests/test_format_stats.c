/*
 * Chunk statistics (format/stats.c) against a brute-force oracle: string
 * min/max, found by 8-byte prefix keys with a byte comparison only on equal
 * keys, must be what a memcmp scan finds, on strings built to tie their
 * keys (zero bytes, shared 8-byte heads, prefixes of each other, empty
 * strings) with and without nulls; integer min/max per kind likewise, and
 * float min/max and NaN counts against the scalar rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cpu_internal.h"
#include "format/format_internal.h"
#include "test_enc_util.h"

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static void test_string_minmax(void **state) {
    (void)state;
    static const uint8_t alphabet[] = {0x00, 'a', 'b', 0xff};
    const struct qv_field f = {.name = "s", .type = QV_TYPE_BINARY, .nullable = true};
    const struct qv__node node = {.field = &f, .kind = QV__NODE_PRIMITIVE, .value_kind = QV_KIND_BINARY};
    uint64_t s = 1;
    for (int round = 0; round < 400; round++) {
        const int64_t n = 1 + (int64_t)(rng(&s) % 300);
        int32_t *off = malloc((size_t)(n + 1) * 4);
        uint8_t *data = malloc((size_t)n * 24 + 1);
        uint8_t *valid = calloc(1, (size_t)(n + 7) / 8);
        const int with_nulls = round % 3 == 0;
        /* A shared head makes most keys tie; the tails decide. */
        uint8_t head[12];
        for (int k = 0; k < 12; k++) head[k] = alphabet[rng(&s) % 4];
        int32_t at = 0;
        for (int64_t i = 0; i < n; i++) {
            off[i] = at;
            size_t len = (size_t)(rng(&s) % (round % 2 ? 20 : 9));
            size_t shared = (size_t)(rng(&s) % 13);
            for (size_t k = 0; k < len; k++)
                data[at + (int32_t)k] = k < shared ? head[k] : alphabet[rng(&s) % 4];
            at += (int32_t)len;
            if (!with_nulls || rng(&s) % 4) valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
        off[n] = at;
        struct qv_values v = {.kind = QV_KIND_BINARY, .count = n, .values = off, .data = data};
        /* The scan has a loop per layout: every third round goes through
         * 64-bit offsets (the same strings). */
        int64_t *off64 = malloc((size_t)(n + 1) * 8);
        for (int64_t i = 0; i <= n; i++) off64[i] = off[i];
        if (round % 3 == 1) v.kind = QV_KIND_LARGE_BINARY, v.values = off64;
        struct qv__stats_buf st;
        qv__stats_compute(&node, &v, with_nulls ? valid : NULL, &st);
        const uint8_t *mn = NULL, *mx = NULL;
        size_t mnl = 0, mxl = 0;
        for (int64_t i = 0; i < n; i++) {
            if (with_nulls && !(valid[i >> 3] >> (i & 7) & 1)) continue;
            const uint8_t *p = data + off[i];
            size_t l = (size_t)(off[i + 1] - off[i]);
            if (!mn || cmp_bytes(p, l, mn, mnl) < 0) mn = p, mnl = l;
            if (!mx || cmp_bytes(p, l, mx, mxl) > 0) mx = p, mxl = l;
        }
        if (!mn) {
            assert_false(st.s.flags & QV__STAT_MINMAX);
        } else {
            assert_true(st.s.flags & QV__STAT_MINMAX);
            assert_int_equal(st.s.min_len, mnl);
            assert_int_equal(st.s.max_len, mxl);
            if (mnl) assert_memory_equal(st.s.min, mn, mnl);
            if (mxl) assert_memory_equal(st.s.max, mx, mxl);
        }
        free(off);
        free(off64);
        free(data);
        free(valid);
    }
}

/* fixed_size_binary (the third layout of the scan): values of one width
 * (0 to 20 bytes) that tie their 8-byte keys, against a memcmp scan. */
static void test_fixed_minmax(void **state) {
    (void)state;
    static const uint8_t alphabet[] = {0x00, 'a', 'b', 0xff};
    const struct qv_field f = {.name = "f", .type = QV_TYPE_FIXED_BINARY, .nullable = true};
    const struct qv__node node = {.field = &f, .kind = QV__NODE_PRIMITIVE,
                                  .value_kind = QV_KIND_FIXED_BINARY};
    uint64_t s = 5;
    for (int round = 0; round < 300; round++) {
        const int64_t n = 1 + (int64_t)(rng(&s) % 200);
        const uint32_t w = (uint32_t)(1 + round % 20);
        uint8_t *data = malloc((size_t)n * w);
        uint8_t *valid = calloc(1, (size_t)(n + 7) / 8);
        const int with_nulls = round % 4 == 0;
        uint8_t head[20];
        for (int k = 0; k < 20; k++) head[k] = alphabet[rng(&s) % 4];
        for (int64_t i = 0; i < n; i++) {
            size_t shared = (size_t)(rng(&s) % 21);
            for (size_t k = 0; k < w; k++)
                data[(size_t)i * w + k] = k < shared ? head[k] : alphabet[rng(&s) % 4];
            if (!with_nulls || rng(&s) % 4) valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
        struct qv_values v = {.kind = QV_KIND_FIXED_BINARY, .count = n, .values = data,
                              .fixed_width = (int32_t)w};
        struct qv__stats_buf st;
        qv__stats_compute(&node, &v, with_nulls ? valid : NULL, &st);
        const uint8_t *mn = NULL, *mx = NULL;
        for (int64_t i = 0; i < n; i++) {
            if (with_nulls && !(valid[i >> 3] >> (i & 7) & 1)) continue;
            const uint8_t *p = data + (size_t)i * w;
            if (!mn || memcmp(p, mn, w) < 0) mn = p;
            if (!mx || memcmp(p, mx, w) > 0) mx = p;
        }
        if (!mn) {
            assert_false(st.s.flags & QV__STAT_MINMAX);
        } else {
            assert_true(st.s.flags & QV__STAT_MINMAX);
            assert_int_equal(st.s.min_len, w);
            assert_int_equal(st.s.max_len, w);
            assert_memory_equal(st.s.min, mn, w);
            assert_memory_equal(st.s.max, mx, w);
        }
        free(data);
        free(valid);
    }
}

/* The writer's shortcut for strings without nulls: the encoder's
 * dictionary reports the rows of its smallest and largest entries
 * (qv_encode_options.extremes), and the statistics taken from those rows
 * must be the scan's. Low-cardinality strings that tie their 8-byte keys
 * (the cascade picks a dictionary by itself), the same forced to a
 * dictionary at any cardinality, and high-cardinality strings left to
 * the cascade (no dictionary: nothing reported). */
static void test_dictionary_extremes(void **state) {
    (void)state;
    static const uint8_t alphabet[] = {0x00, 'a', 'b', 0xff};
    const struct qv_field f = {.name = "s", .type = QV_TYPE_UTF8, .nullable = false};
    const struct qv__node node = {.field = &f, .kind = QV__NODE_PRIMITIVE,
                                  .value_kind = QV_KIND_BINARY};
    const struct qv_field fd = {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 20};
    const struct qv__node dnode = {.field = &fd, .kind = QV__NODE_PRIMITIVE,
                                   .value_kind = QV_KIND_FIXED_BINARY};
    struct enc_env env;
    env_open(&env);
    uint64_t s = 9;
    int found_auto = 0, found_forced = 0, none_high = 0;
    for (int round = 0; round < 120; round++) {
        const int64_t n = 2000 + (int64_t)(rng(&s) % 3000);
        const int kind = round % 3; /* 0: 6 distinct, 1: forced dict, 2: all distinct */
        uint8_t pool[6][24];
        size_t plen[6];
        uint8_t head[12];
        for (int k = 0; k < 12; k++) head[k] = alphabet[rng(&s) % 4];
        for (int k = 0; k < 6; k++) {
            plen[k] = (size_t)(rng(&s) % 20);
            for (size_t b = 0; b < plen[k]; b++)
                pool[k][b] = b < 10 ? head[b] : alphabet[rng(&s) % 4];
        }
        int32_t *off = malloc((size_t)(n + 1) * 4);
        uint8_t *data = malloc((size_t)n * 24 + 1);
        int32_t at = 0;
        for (int64_t i = 0; i < n; i++) {
            off[i] = at;
            if (kind == 2) {
                int l = snprintf((char *)data + at, 24, "v%08llx%lld",
                                 (unsigned long long)rng(&s), (long long)i);
                at += l;
            } else {
                int k = (int)(rng(&s) % 6);
                memcpy(data + at, pool[k], plen[k]);
                at += (int32_t)plen[k];
            }
        }
        off[n] = at;
        struct qv_values v = {.kind = QV_KIND_BINARY, .count = n, .values = off, .data = data};
        struct qv_encode_extremes ex = {.found = -1, .min_row = -1, .max_row = -1};
        struct qv_encode_options o = {.extremes = &ex};
        if (kind == 1) o.force = QV_ENC_DICT;
        struct qv_encoded enc;
        struct qv_error err = {0};
        if (qv_encode(&v, &o, env.r, &enc, &err)) fail_msg("encode: %s", err.message);
        qv_encoded_release(env.r, &enc);
        if (kind == 0) found_auto += ex.found == 1;
        if (kind == 1) {
            assert_int_equal(ex.found, 1);
            found_forced++;
        }
        if (kind == 2) {
            assert_int_equal(ex.found, 0);
            none_high++;
        }
        if (ex.found) {
            struct qv__stats_buf want, got;
            qv__stats_compute(&node, &v, NULL, &want);
            assert_int_equal(qv__stats_from_extremes(&node, &v, ex.min_row, ex.max_row, &got), 1);
            assert_int_equal(got.s.flags, want.s.flags);
            assert_int_equal(got.s.min_len, want.s.min_len);
            assert_int_equal(got.s.max_len, want.s.max_len);
            if (want.s.min_len) assert_memory_equal(got.s.min, want.s.min, want.s.min_len);
            if (want.s.max_len) assert_memory_equal(got.s.max, want.s.max, want.s.max_len);
        }
        free(off);
        free(data);
    }
    /* The cascade chose a dictionary on its own for the 6-value columns. */
    assert_int_equal(found_auto, 40);
    assert_int_equal(found_forced, 40);
    assert_int_equal(none_high, 40);
    /* Not byte-ordered (decimal128), or rows outside the chunk: refused. */
    uint8_t dec[32] = {0};
    struct qv_values dv = {.kind = QV_KIND_FIXED_BINARY, .count = 2, .values = dec,
                           .fixed_width = 16};
    struct qv__stats_buf st;
    assert_int_equal(qv__stats_from_extremes(&dnode, &dv, 0, 1, &st), 0);
    int32_t o2[3] = {0, 1, 2};
    struct qv_values sv = {.kind = QV_KIND_BINARY, .count = 2, .values = o2,
                           .data = (const uint8_t *)"ab"};
    assert_int_equal(qv__stats_from_extremes(&node, &sv, 0, 2, &st), 0);
    assert_int_equal(qv__stats_from_extremes(&node, &sv, -1, 1, &st), 0);
    env_close(&env);
}

/* Integer min/max against a scalar reference, at every SIMD level the CPU
 * has (the AVX2 variant of the branch-free 64-value blocks), without
 * validity, with a third of the slots null and with a null in about 500
 * (most blocks all valid, a few not). */
static void test_int_minmax(void **state) {
    (void)state;
    const int initial = qv__cpu_level();
    for (int level = QV__CPU_BASELINE; level <= qv__cpu_supported(); level++) {
        qv__cpu_set_level(level);
        static const enum qv_value_kind kinds[] = {QV_KIND_INT8,  QV_KIND_INT16,  QV_KIND_INT32,  QV_KIND_INT64,
                                                   QV_KIND_UINT8, QV_KIND_UINT16, QV_KIND_UINT32, QV_KIND_UINT64};
        static const enum qv_type types[] = {QV_TYPE_INT8,  QV_TYPE_INT16,  QV_TYPE_INT32,  QV_TYPE_INT64,
                                             QV_TYPE_UINT8, QV_TYPE_UINT16, QV_TYPE_UINT32, QV_TYPE_UINT64};
        uint64_t s = 2;
        for (int k = 0; k < 8; k++) {
            const struct qv_field f = {.name = "x", .type = types[k], .nullable = true};
            const struct qv__node node = {.field = &f, .kind = QV__NODE_PRIMITIVE, .value_kind = kinds[k]};
            const unsigned w = k % 4 == 0 ? 1 : k % 4 == 1 ? 2 : k % 4 == 2 ? 4 : 8;
            const int is_signed = k < 4;
            for (int round = 0; round < 60; round++) {
                const int64_t n = 1 + (int64_t)(rng(&s) % 2000);
                uint8_t *vals = malloc((size_t)n * w);
                uint8_t *valid = calloc(1, (size_t)(n + 7) / 8);
                const int mode = round % 3;
                for (int64_t i = 0; i < n; i++) {
                    uint64_t x = rng(&s);
                    memcpy(vals + (size_t)i * w, &x, w);
                    int ok = mode == 0 ? 1 : mode == 1 ? rng(&s) % 3 != 0 : rng(&s) % 500 != 0;
                    if (ok) valid[i >> 3] |= (uint8_t)(1u << (i & 7));
                }
                struct qv_values v = {.kind = kinds[k], .count = n, .values = vals};
                struct qv__stats_buf st;
                const uint8_t *vb = mode ? valid : NULL;
                qv__stats_compute(&node, &v, vb, &st);
                int64_t smn = INT64_MAX, smx = INT64_MIN;
                uint64_t umn = UINT64_MAX, umx = 0;
                int any = 0;
                for (int64_t i = 0; i < n; i++) {
                    if (vb && !(vb[i >> 3] >> (i & 7) & 1)) continue;
                    uint64_t u = 0;
                    memcpy(&u, vals + (size_t)i * w, w);
                    int64_t sv = w == 8 ? (int64_t)u : (int64_t)(u << (64 - 8 * w)) >> (64 - 8 * w);
                    any = 1;
                    if (sv < smn) smn = sv;
                    if (sv > smx) smx = sv;
                    if (u < umn) umn = u;
                    if (u > umx) umx = u;
                }
                if (!any) {
                    assert_false(st.s.flags & QV__STAT_MINMAX);
                } else {
                    uint64_t gmn, gmx;
                    memcpy(&gmn, st.s.min, 8);
                    memcpy(&gmx, st.s.max, 8);
                    assert_int_equal(gmn, is_signed ? (uint64_t)smn : umn);
                    assert_int_equal(gmx, is_signed ? (uint64_t)smx : umx);
                }
                free(vals);
                free(valid);
            }
        }
    }
    qv__cpu_set_level(initial);
}

/* Float min/max and NaN count against the scalar rule (-0.0 below +0.0,
 * NaNs counted and skipped), at every SIMD level: values drawn from a small set of awkward ones
 * (zeros of both signs, infinities, NaNs of both signs and payloads, the
 * smallest subnormal, large magnitudes) and random ones, float64 and
 * float32, with and without validity, over lengths around the 64-value
 * blocks. */
static void test_float_minmax(void **state) {
    (void)state;
    const int initial = qv__cpu_level();
    for (int level = QV__CPU_BASELINE; level <= qv__cpu_supported(); level++) {
        qv__cpu_set_level(level);
        static const uint64_t special[] = {
            0, UINT64_C(0x8000000000000000), UINT64_C(0x7FF0000000000000), UINT64_C(0xFFF0000000000000),
            UINT64_C(0x7FF8000000000000), UINT64_C(0xFFF8000000000001), UINT64_C(0x7FF0000000000001),
            1, UINT64_C(0x8000000000000001), UINT64_C(0x3FF0000000000000), UINT64_C(0xBFF0000000000000),
            UINT64_C(0x7FEFFFFFFFFFFFFF), UINT64_C(0xFFEFFFFFFFFFFFFF)};
        const size_t nspecial = sizeof special / sizeof special[0];
        uint64_t s = 5;
        for (int k = 0; k < 2; k++) {
            const int f32 = k == 1;
            const struct qv_field f = {.name = "x", .type = f32 ? QV_TYPE_FLOAT32 : QV_TYPE_FLOAT64,
                                       .nullable = true};
            const struct qv__node node = {.field = &f, .kind = QV__NODE_PRIMITIVE,
                                          .value_kind = f32 ? QV_KIND_FLOAT32 : QV_KIND_FLOAT64};
            for (int round = 0; round < 400; round++) {
                const int64_t n = round < 200 ? 1 + round : 1 + (int64_t)(rng(&s) % 3000);
                double *dv = malloc((size_t)n * 8);
                float *fv = malloc((size_t)n * 4);
                uint8_t *valid = calloc(1, (size_t)(n + 7) / 8);
                const int mode = (int)(rng(&s) % 4); /* few specials, many, only NaNs, only zeros */
                for (int64_t i = 0; i < n; i++) {
                    uint64_t r = rng(&s), b;
                    if (mode == 2) b = special[4 + r % 3];
                    else if (mode == 3) b = special[r % 2];
                    else if (r % (mode ? 3 : 50) == 0) b = special[(r >> 8) % nspecial];
                    else {
                        double d = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 1e6;
                        memcpy(&b, &d, 8);
                    }
                    memcpy(&dv[i], &b, 8);
                    fv[i] = (float)dv[i];
                    if (round % 3 != 1 || rng(&s) % 4) valid[i >> 3] |= (uint8_t)(1u << (i & 7));
                }
                struct qv_values v = {.kind = node.value_kind, .count = n,
                                      .values = f32 ? (void *)fv : (void *)dv};
                const uint8_t *vb = round % 3 ? valid : NULL;
                struct qv__stats_buf st;
                qv__stats_compute(&node, &v, vb, &st);
                double mn = INFINITY, mx = -INFINITY;
                int64_t nans = 0, any = 0;
                for (int64_t i = 0; i < n; i++) {
                    if (vb && !(vb[i >> 3] >> (i & 7) & 1)) continue;
                    double d = f32 ? (double)fv[i] : dv[i];
                    if (isnan(d)) {
                        nans++;
                        continue;
                    }
                    any = 1;
                    if (d < mn || (d == 0 && mn == 0 && signbit(d))) mn = d;
                    if (d > mx || (d == 0 && mx == 0 && !signbit(d))) mx = d;
                }
                assert_true(st.s.flags & QV__STAT_NAN_COUNT);
                assert_int_equal(st.s.nan_count, nans);
                if (!any) {
                    assert_false(st.s.flags & QV__STAT_MINMAX);
                } else {
                    uint64_t gmn, gmx, wmn, wmx;
                    memcpy(&gmn, st.s.min, 8);
                    memcpy(&gmx, st.s.max, 8);
                    memcpy(&wmn, &mn, 8);
                    memcpy(&wmx, &mx, 8);
                    assert_int_equal(gmn, wmn);
                    assert_int_equal(gmx, wmx);
                }
                free(dv);
                free(fv);
                free(valid);
            }
        }
    }
    qv__cpu_set_level(initial);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string_minmax),
        cmocka_unit_test(test_fixed_minmax),
        cmocka_unit_test(test_int_minmax),
        cmocka_unit_test(test_float_minmax),
        cmocka_unit_test(test_dictionary_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
