/*
 * FSST's training on a growing part of the sample (fsst.c: the first four
 * rounds count the first 8, 38, 68, 98 strings of each 128 sampled) against
 * small and odd string columns: 1..200 strings, 127/128/129 strings, empty
 * strings (all, or all but the last), one huge string, all-identical
 * strings, binary strings with every byte value, a repetitive column whose
 * first strings (the early rounds' part) are empty. Each round trips
 * exactly (full, ranges, takes; FSST forced and the cascade's choice, both
 * offset widths), and the repetitive columns compress: the table learnt
 * from the whole sample, not only from the early rounds' part.
 */
#include "test_enc_util.h"

struct scol {
    struct qv_values v;
    int64_t *off64;
    int32_t *off32;
    uint8_t *data;
};

/* `n` strings; string i gets len_of(i) bytes from byte_of(i, j). */
static void scol_make(struct scol *c, enum qv_value_kind kind, int64_t n, int shape, uint64_t seed) {
    memset(c, 0, sizeof *c);
    uint64_t s = seed;
    size_t cap = 64;
    int64_t *lens = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        int64_t len;
        switch (shape) {
        case 0: len = 0; break;                                   /* all empty */
        case 1: len = i == n - 1 ? 5 : 0; break;                  /* empty but the last */
        case 2: len = i == n / 2 ? (3 << 20) + 17 : (int64_t)(rng_next(&s) % 9); break; /* one huge */
        case 3: len = 23; break;                                  /* all identical */
        case 4: len = (int64_t)(rng_next(&s) % 300); break;       /* every byte value */
        case 5: len = i < 40 ? 0 : 31; break;                     /* early part empty */
        default: len = 1 + (int64_t)(rng_next(&s) % 40); break;   /* words */
        }
        lens[i] = len;
        cap += (size_t)len;
    }
    c->data = malloc(cap);
    c->off64 = malloc((size_t)(n + 1) * 8);
    c->off32 = malloc((size_t)(n + 1) * 4);
    assert_true(c->data && c->off64 && c->off32 && lens);
    static const char *const words[] = {"quiver", "arrow", "column", "zstd", "the ", "of ", "-"};
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        c->off64[i] = at;
        for (int64_t j = 0; j < lens[i]; j++) {
            uint8_t b;
            switch (shape) {
            case 2: b = (uint8_t)("abcabd"[(j * 7 + j / 5) % 6]); break;
            case 3: b = (uint8_t)"the same string, again"[j % 22]; break;
            case 4: b = (uint8_t)(rng_next(&s) & 0xFF); break;
            case 5: b = (uint8_t)"repeated text after a gap"[j % 25]; break;
            default: {
                const char *w = words[(i * 3 + j / 6) % 7];
                b = (uint8_t)w[j % strlen(w)];
            }
            }
            c->data[at++] = b;
        }
    }
    c->off64[n] = at;
    for (int64_t i = 0; i <= n; i++) c->off32[i] = (int32_t)c->off64[i];
    c->v.kind = kind;
    c->v.count = n;
    c->v.values = kind == QV_KIND_BINARY ? (const void *)c->off32 : (const void *)c->off64;
    c->v.data = c->data;
    free(lens);
}

static void scol_free(struct scol *c) {
    free(c->data);
    free(c->off64);
    free(c->off32);
}

static int64_t raw_bytes(const struct scol *c) { return c->off64[c->v.count]; }

/* Round trips forced FSST and the cascade's choice; returns the size of
 * the forced chunk. */
static size_t check(struct enc_env *env, const struct scol *c, uint64_t seed) {
    struct qv_encode_options o = {0};
    o.force = QV_ENC_FSST;
    struct qv_encoded e = roundtrip(env, &c->v, &o, c->v.count > 1 ? 6 : 1, seed);
    assert_int_equal(root_encoding(&e), QV_ENC_FSST);
    size_t size = e.size;
    qv_encoded_release(env->r, &e);
    e = roundtrip(env, &c->v, NULL, c->v.count > 1 ? 6 : 1, seed + 1);
    qv_encoded_release(env->r, &e);
    return size;
}

static void test_small_columns(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    for (int kind = 0; kind < 2; kind++)
        for (int shape = 0; shape < 7; shape++) {
            if (shape == 2) continue; /* huge: its own test */
            for (int64_t n = 1; n <= 200; n += n < 12 ? 1 : n < 126 ? 13 : 1) {
                if (n > 131 && n < 200) continue;
                struct scol c;
                scol_make(&c, kind ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY, n, shape,
                          (uint64_t)(n * 10 + shape));
                check(&env, &c, (uint64_t)n);
                scol_free(&c);
            }
        }
    env_close(&env);
}

/* Identical and repetitive strings compress whatever part of the sample
 * the early rounds see: 127..129 strings, and 1,000 with the first 40
 * (all of the first round's part) empty. */
static void test_repetitive_compress(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {127, 128, 129, 1000, 5000};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int shape = 3; shape <= 5; shape += 2) {
            struct scol c;
            scol_make(&c, QV_KIND_BINARY, sizes[si], shape, 9);
            size_t sz = check(&env, &c, 3);
            /* Symbols of up to 16 bytes: a repeated 22- or 25-byte text
             * codes in a few bytes per string (well under a third). */
            if ((int64_t)sz * 3 > raw_bytes(&c))
                fail_msg("n=%lld shape %d: FSST kept %zu of %lld bytes", (long long)sizes[si],
                         shape, sz, (long long)raw_bytes(&c));
            scol_free(&c);
        }
    env_close(&env);
}

static void test_huge_string(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1, 2, 3, 130};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        struct scol c;
        scol_make(&c, QV_KIND_LARGE_BINARY, sizes[si], 2, 5);
        check(&env, &c, 11);
        scol_free(&c);
    }
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_columns),
        cmocka_unit_test(test_repetitive_compress),
        cmocka_unit_test(test_huge_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
