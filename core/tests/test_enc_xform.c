/*
 * The transforms' chains (xform.c, docs/format.md 5.7): the cascade
 * estimates delta, zig-zag and ALP's digits by their child's likely
 * cascade on a transformed sample, so it finds
 *  - times sorted within each day (steps of a few units, a jump back once
 *    a day): delta, its deltas patched or in an entropy stage;
 *  - dates a few days after a base shared by a handful of rows (TPC-H's
 *    ship dates after their order's date): in compact mode delta, zig-zag
 *    and bucket; never bucket below zig-zag in the default mode;
 *  - the same times as floats: ALP with a delta below it;
 * while sorted keys in runs stay run-end, and data with no such structure
 * keeps what it had. Every tree is round-tripped (full, ranges, takes);
 * an allocation failure at every allocation of a chain's encode fails it
 * with ENOMEM and gives the budget back; bit flips in chain trees fail
 * with EIO or decode, never anything else.
 */
#include "test_enc_util.h"

enum shape {
    DAYS,   /* 500..2359 sorted within days of 900 values */
    ORDERS, /* a base per 1..7 rows, each row base + 1..121 */
    KEYS,   /* increasing keys, each repeated 1..7 times */
    NOISE,  /* uniform over 0..4095: no structure */
    NSHAPES
};
static const char *shape_name[] = {"days", "orders", "keys", "noise"};

#define N 131072

static void fill(int64_t *v, int64_t n, enum shape sh, uint64_t seed) {
    uint64_t s = seed;
    if (sh == DAYS) {
        for (int64_t d = 0; d < n; d += 900) {
            const int64_t e = d + 900 < n ? d + 900 : n;
            int64_t t = 500;
            for (int64_t i = d; i < e; i++) {
                t += (int64_t)(rng_next(&s) % 5); /* a sorted day: steps 0..4 */
                v[i] = t < 2359 ? t : 2359;
            }
        }
    } else if (sh == ORDERS) {
        for (int64_t i = 0; i < n;) {
            const int64_t base = 8000 + (int64_t)(rng_next(&s) % 2500);
            const int64_t lines = 1 + (int64_t)(rng_next(&s) % 7);
            for (int64_t k = 0; k < lines && i < n; k++, i++) v[i] = base + 1 + (int64_t)(rng_next(&s) % 121);
        }
    } else if (sh == KEYS) {
        int64_t key = 1;
        for (int64_t i = 0; i < n;) {
            const int64_t run = 1 + (int64_t)(rng_next(&s) % 7);
            for (int64_t k = 0; k < run && i < n; k++, i++) v[i] = key;
            key += 1 + (int64_t)(rng_next(&s) % 4);
        }
    } else {
        for (int64_t i = 0; i < n; i++) v[i] = (int64_t)(rng_next(&s) % 4096);
    }
}

/* The shape as int32 (or float64) values in a col (col_free). */
static struct col make(enum shape sh, enum qv_value_kind k, int64_t n, uint64_t seed) {
    struct col c = col_words(k, n);
    int64_t *v = malloc((size_t)n * 8);
    assert_non_null(v);
    fill(v, n, sh, seed);
    for (int64_t i = 0; i < n; i++) {
        if (k == QV_KIND_INT32) ((int32_t *)c.v.values)[i] = (int32_t)v[i];
        else if (k == QV_KIND_FLOAT64) ((double *)c.v.values)[i] = (double)v[i];
        else ((int64_t *)c.v.values)[i] = v[i];
    }
    free(v);
    return c;
}

static struct qv_encoded encode(struct enc_env *env, const struct qv_values *v, int compact,
                                uint32_t allowed, char *tree, size_t cap, uint64_t seed) {
    struct qv_encode_options o = {0};
    o.compact = compact;
    o.allowed = allowed;
    struct qv_encoded e = roundtrip(env, v, &o, 24, seed);
    struct qv_error err = {0};
    if (qv_enc_describe(e.data, e.size, env->r, tree, cap, &err) == EIO)
        fail_msg("describe: %s", err.message);
    return e;
}

static void test_chains_chosen(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    char tree[4096], base_tree[4096];
    const uint32_t no_chain = ~((1u << QV_ENC_DELTA) | (1u << QV_ENC_ZIGZAG));
    for (int compact = 0; compact <= 1; compact++)
        for (int sh = 0; sh < NSHAPES; sh++) {
            struct col c = make((enum shape)sh, QV_KIND_INT32, N, 7 + (uint64_t)sh);
            struct qv_encoded e = encode(&env, &c.v, compact, 0, tree, sizeof tree, (uint64_t)sh);
            struct qv_encoded b = encode(&env, &c.v, compact, no_chain, base_tree, sizeof base_tree, 3);
            print_message("%-7s %s: %zu B (%s); without delta or zigzag %zu B (%s)\n",
                          compact ? "compact" : "default", shape_name[sh], e.size, tree, b.size,
                          base_tree);
            switch (sh) {
            case DAYS:
                /* 11 bits a value packed; the steps take about 2.3 */
                assert_true(strncmp(tree, "delta(", 6) == 0);
                assert_true(e.size * 2 < b.size);
                break;
            case ORDERS:
                if (compact) {
                    assert_non_null(strstr(tree, "delta("));
                    assert_non_null(strstr(tree, "zigzag(values=bucket("));
                    assert_true(e.size * 10 < b.size * 9);
                }
                assert_true(e.size <= b.size);
                break;
            case KEYS:
                assert_true(strncmp(tree, "rle(", 4) == 0);
                break;
            default:
                assert_true(e.size <= b.size + b.size / 50);
                break;
            }
            /* Never bucket below zig-zag outside compact mode. */
            if (!compact) assert_null(strstr(tree, "zigzag(values=bucket("));
            qv_encoded_release(env.r, &e);
            qv_encoded_release(env.r, &b);
            col_free(&c);
        }
    env_close(&env);
}

static void test_alp_chain(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    char tree[4096];
    struct col c = make(DAYS, QV_KIND_FLOAT64, N, 11);
    struct qv_encoded e = encode(&env, &c.v, 0, 0, tree, sizeof tree, 5);
    print_message("float days: %zu B (%s)\n", e.size, tree);
    assert_true(strncmp(tree, "alp(", 4) == 0);
    assert_non_null(strstr(tree, "digits=delta("));
    assert_true(e.size < (size_t)N * 4 / 8); /* under 4 bits a value */
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* Every allocation of a chain's encode fails in turn: ENOMEM, nothing
 * left charged. */
static void test_alloc_failures(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const struct {
        enum shape sh;
        enum qv_value_kind k;
        int compact;
    } cases[] = {{DAYS, QV_KIND_INT32, 0}, {ORDERS, QV_KIND_INT32, 1}, {DAYS, QV_KIND_FLOAT64, 0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        struct col c = make(cases[ci].sh, cases[ci].k, 5000, 3);
        struct qv_encode_options o = {0};
        o.compact = cases[ci].compact;
        encode_alloc_failures(&env, &c.v, &o, shape_name[cases[ci].sh]);
        col_free(&c);
    }
    env_close(&env);
}

/* Bit flips in chain trees: EIO or a decode, never a crash or a hang. */
static void test_flips(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    char tree[4096];
    for (int compact = 0; compact <= 1; compact++) {
        struct col c = make(compact ? ORDERS : DAYS, QV_KIND_INT32, 20000, 5);
        struct qv_encoded e = encode(&env, &c.v, compact, 0, tree, sizeof tree, 9);
        assert_true(strncmp(tree, "delta(", 6) == 0);
        corrupt_trials(&env, &e, QV_KIND_INT32, 20000, 300, 77 + (uint64_t)compact, 100, 40);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chains_chosen),
        cmocka_unit_test(test_alp_chain),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_flips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
