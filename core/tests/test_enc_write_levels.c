/*
 * The writer's kernels at every SIMD level (stats.c's AVX2 min/max with its
 * scalar path below 16 values, patched.c's partial histograms and
 * exception count, fsst.c's training sample and lookup fill): each column
 * encoded at baseline, SSE4.2 and AVX2 gives the same bytes (auto and
 * forced encodings), and decodes back bit for bit.
 *  - integers of every width: INT_MIN/INT_MAX, UINT64_MAX, sign-bit
 *    patterns, 1, 15, 16, 17, 31, 33, 1024 + 7 values (the AVX2 loop's
 *    8-value steps and its tail), the extreme in the first, last and
 *    tail positions;
 *  - patched forced: no exception, every value an exception, residuals
 *    needing all 64 bits, exceptions below the reference;
 *  - strings with every byte value, chunks of total bytes just under, at
 *    and over 16 KiB and 512 KiB (FSST's sample sizes), FSST forced.
 */
#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"
#include "test_enc_util.h"

static const int levels[] = {QV__CPU_BASELINE, QV__CPU_SSE42, QV__CPU_AVX2};

/* Encodes `in` with `force` at every level: the same bytes (or the same
 * refusal), and the round trip exact. Returns whether it encoded. */
static int same_at_levels(struct enc_env *env, const struct qv_values *in, int force,
                          const char *what) {
    struct qv_encoded first = {0};
    int first_rc = -1;
    const int was = qv__cpu_set_level(QV__CPU_AVX2);
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        qv__cpu_set_level(levels[li]);
        struct qv_encode_options eo = {0};
        eo.force = force;
        struct qv_encoded e = {0};
        struct qv_error err = {0};
        int rc = qv_encode(in, &eo, env->r, &e, &err);
        if (li == 0) {
            first_rc = rc;
            if (rc && force == QV_ENC_AUTO) fail_msg("%s: %s", what, err.message);
            if (rc) assert_int_equal(rc, EINVAL);
        } else if (rc != first_rc) {
            fail_msg("%s force %d: rc %d at level %d, %d at baseline", what, force, rc, levels[li],
                     first_rc);
        }
        if (rc) continue;
        if (li == 0) {
            first.size = e.size;
            first.data = malloc(e.size ? e.size : 1);
            memcpy((void *)first.data, e.data, e.size);
        } else if (e.size != first.size || memcmp(e.data, first.data, e.size)) {
            fail_msg("%s force %d: level %d encodes %zu bytes, baseline %zu (or other bytes)", what,
                     force, levels[li], (size_t)e.size, (size_t)first.size);
        }
        /* Decode at this level too. */
        struct qv_decode_out o;
        out_alloc(&o, in, in->count);
        struct qv_decoder *d;
        assert_int_equal(qv_decoder_open(e.data, e.size, in->kind, in->fixed_width, in->count,
                                         env->r, &d, &err),
                         0);
        if (qv_decoder_decode_range(d, 0, in->count, &o, &err)) fail_msg("%s: %s", what, err.message);
        for (int64_t i = 0; i < in->count; i++) check_value(in, i, &o, i, what);
        qv_decoder_close(d);
        out_free(&o, env->r);
        qv_encoded_release(env->r, &e);
    }
    qv__cpu_set_level(was);
    free((void *)first.data);
    return first_rc == 0;
}

/* Chunks encoded with each forced encoding (so the forcing is not all
 * refusals). */
static int encoded[32];

static void ints_every_way(struct enc_env *env, enum qv_value_kind kind, const uint64_t *v64,
                           int64_t n, const char *what) {
    const unsigned w = kind_width(kind, 0);
    uint8_t *buf = malloc((size_t)(n ? n : 1) * w);
    for (int64_t i = 0; i < n; i++) memcpy(buf + (size_t)i * w, &v64[i], w); /* little end */
    struct qv_values in = {0};
    in.kind = kind;
    in.count = n;
    in.values = buf;
    static const int forces[] = {QV_ENC_AUTO, QV_ENC_PATCHED, QV_ENC_FOR, QV_ENC_BITPACK,
                                 QV_ENC_DELTA};
    for (size_t f = 0; f < sizeof forces / sizeof forces[0]; f++)
        encoded[forces[f]] += same_at_levels(env, &in, forces[f], what);
    free(buf);
}

static const enum qv_value_kind int_kinds[] = {QV_KIND_INT8,   QV_KIND_UINT8,  QV_KIND_INT16,
                                               QV_KIND_UINT16, QV_KIND_INT32,  QV_KIND_UINT32,
                                               QV_KIND_INT64,  QV_KIND_UINT64};

static void test_int_extremes(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 33, 1031};
    static const uint64_t special[] = {0,
                                       1,
                                       UINT64_MAX,
                                       UINT64_C(1) << 63,
                                       (UINT64_C(1) << 63) - 1,
                                       0x80000000u,
                                       0x7fffffffu,
                                       0xffffffffu,
                                       0x8000u,
                                       0x7fffu,
                                       0x80u,
                                       0x7fu};
    const size_t ns = sizeof special / sizeof special[0];
    uint64_t *v = malloc(1031 * 8);
    uint64_t s = 77;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int64_t n = sizes[k];
        for (size_t sp = 0; sp < ns; sp++) {
            for (int where = 0; where < 3; where++) {
                /* Small values, one extreme first, last or in the tail. */
                for (int64_t i = 0; i < n; i++) v[i] = rng_next(&s) % 5 + 3;
                int64_t at = where == 0 ? 0 : where == 1 ? n - 1 : n - 1 - (n % 8) / 2;
                v[at] = special[sp];
                if (n > 2) v[(at + 1) % n] = special[(sp + 1) % ns];
                char what[96];
                snprintf(what, sizeof what, "n=%lld special=%zu where=%d", (long long)n, sp, where);
                for (size_t ki = 0; ki < sizeof int_kinds / sizeof int_kinds[0]; ki++)
                    ints_every_way(&env, int_kinds[ki], v, n, what);
            }
        }
        /* Every value an extreme. */
        for (int64_t i = 0; i < n; i++) v[i] = special[(size_t)i % ns];
        for (size_t ki = 0; ki < sizeof int_kinds / sizeof int_kinds[0]; ki++)
            ints_every_way(&env, int_kinds[ki], v, n, "all extremes");
    }
    free(v);
    env_close(&env);
    assert_true(encoded[QV_ENC_PATCHED] > 100);
}

/* Patched forced on shapes at its edges. */
static void test_patched_edges(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 5000;
    const int before = encoded[QV_ENC_PATCHED];
    uint64_t *v = malloc((size_t)n * 8);
    uint64_t s = 3;
    for (int shape = 0; shape < 6; shape++) {
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&s);
            switch (shape) {
            case 0: v[i] = 100 + r % 16; break;                        /* no exception */
            case 1: v[i] = r; break;                                   /* all 64 bits */
            case 2: v[i] = i % 2 ? UINT64_MAX - r % 3 : r % 3; break;  /* two clusters far apart */
            case 3: v[i] = r % 100 == 0 ? (UINT64_C(1) << 63) + r % 7 : 1000 + r % 8; break;
            case 4: v[i] = r % 100 == 0 ? 5 : 1u << 20 | (r % 64); break; /* exceptions below */
            default: v[i] = (uint64_t)INT64_MIN + (r % 2) * UINT64_MAX; break;
            }
        }
        char what[32];
        snprintf(what, sizeof what, "patched shape %d", shape);
        for (size_t ki = 0; ki < sizeof int_kinds / sizeof int_kinds[0]; ki++)
            ints_every_way(&env, int_kinds[ki], v, n, what);
    }
    free(v);
    env_close(&env);
    assert_true(encoded[QV_ENC_PATCHED] >= before + 20);
}

/* Strings of total byte size `total`, every byte value present. */
static void strings_of(struct enc_env *env, size_t total, int bytes_kind, uint64_t seed) {
    int64_t cap = (int64_t)total + 2;
    int64_t *off = malloc((size_t)(cap + 1) * 8);
    uint8_t *data = malloc(total ? total : 1);
    uint64_t s = seed;
    for (size_t i = 0; i < total; i++) {
        uint64_t r = rng_next(&s);
        /* Words from a small alphabet with every byte value sprinkled in
         * (so FSST finds symbols and escapes), or uniform bytes. */
        data[i] = bytes_kind ? (uint8_t)r : r % 7 == 0 ? (uint8_t)(i & 0xFF)
                                                       : (uint8_t)("the quick brown fox "[r % 20]);
    }
    int64_t n = 0;
    off[0] = 0;
    for (size_t at = 0; at < total;) {
        size_t l = 1 + rng_next(&s) % 60;
        if (l > total - at) l = total - at;
        at += l;
        off[++n] = (int64_t)at;
    }
    struct qv_values in = {.kind = QV_KIND_LARGE_BINARY, .count = n, .values = off, .data = data};
    char what[64];
    snprintf(what, sizeof what, "strings of %zu bytes kind %d", total, bytes_kind);
    assert_true(same_at_levels(env, &in, QV_ENC_AUTO, what));
    encoded[QV_ENC_FSST] += same_at_levels(env, &in, QV_ENC_FSST, what);
    free(off);
    free(data);
}

static void test_fsst_sample_edges(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const size_t totals[] = {1,           255,         16383,       16384,
                                    16385,       32767,       32768,       32769,
                                    (512 << 10) - 1, 512 << 10, (512 << 10) + 1};
    for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++)
        for (int k = 0; k < 2; k++) strings_of(&env, totals[t], k, t * 2 + (uint64_t)k + 1);
    env_close(&env);
    assert_true(encoded[QV_ENC_FSST] >= 15);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_extremes),
        cmocka_unit_test(test_patched_edges),
        cmocka_unit_test(test_fsst_sample_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
