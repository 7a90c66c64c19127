/*
 * 64-bit integer chunks are cascaded where the caller's values are when
 * they are 8-byte aligned (encode.c), and through a widened copy when they
 * are not. Both must give the same bytes, and neither may write into the
 * caller's buffer: the tests encode from memory mapped read-only (a write
 * is a SIGSEGV) and from every misalignment 1..7, with every encoding
 * forced at the root and with each entropy layout forced.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "encoding/encoding_testing.h"
#include "test_enc_util.h"

/* Shapes that lead the cascade to each of its integer nodes. */
static void fill_shape(int64_t *v, int64_t n, int shape, uint64_t seed) {
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        switch (shape) {
        case 0: v[i] = (int64_t)r; break;                                   /* noise */
        case 1: v[i] = 1700000000000000LL + i * 1000 + (int64_t)(r % 7); break; /* timestamps */
        case 2: v[i] = (int64_t)(r % 5) - 2; break;                         /* small, signed */
        case 3: v[i] = i / 97 * 31; break;                                  /* runs */
        case 4: v[i] = r % 50 == 0 ? (int64_t)r : 42; break;                /* sparse */
        case 5: v[i] = INT64_MIN + (int64_t)(r % 3); break;                 /* extremes */
        case 6: v[i] = (int64_t)((r % 1000) * 1000003); break;              /* dictionary */
        default: v[i] = -1; break;                                          /* constant */
        }
    }
}

/* A read-only copy of `n` values at `misalign` bytes past a page start;
 * *map and *maplen say what to munmap. */
static const void *readonly_copy(const int64_t *v, int64_t n, unsigned misalign, void **map,
                                 size_t *maplen) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t need = misalign + (size_t)n * 8;
    *maplen = (need + page - 1) / page * page + page;
    uint8_t *m = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memset(m, 0xA5, *maplen);
    memcpy(m + misalign, v, (size_t)n * 8);
    assert_int_equal(mprotect(m, *maplen, PROT_READ), 0);
    *map = m;
    return m + misalign;
}

/* Encodes `vals` (n int64 bit patterns, kind k) with `force`, from an
 * aligned heap buffer, from read-only memory at every misalignment 0..7,
 * and checks identical bytes and an exact round trip. Returns 1 when the
 * encoder took `force`, 0 when it refused it (EINVAL), on every copy. */
static int same_everywhere(struct enc_env *env, enum qv_value_kind k, const int64_t *vals,
                           int64_t n, int force) {
    struct qv_values in = {0};
    in.kind = k;
    in.count = n;
    in.values = vals;
    struct qv_encode_options o = {0};
    o.force = force;
    struct qv_error err = {0};
    struct qv_encoded ref;
    int rc = qv_encode(&in, &o, env->r, &ref, &err);
    if (rc) assert_int_equal(rc, EINVAL);
    for (unsigned mis = 0; mis < 8; mis++) {
        void *map;
        size_t maplen;
        struct qv_values ro = in;
        ro.values = readonly_copy(vals, n, mis, &map, &maplen);
        struct qv_encoded got;
        struct qv_error err2 = {0};
        int rc2 = qv_encode(&ro, &o, env->r, &got, &err2);
        if (rc2 != rc)
            fail_msg("%s n=%lld force=%d misalign=%u: rc %d, aligned heap copy gave %d (%s)",
                     qv_value_kind_name(k), (long long)n, force, mis, rc2, rc, err2.message);
        if (!rc) {
            if (got.size != ref.size || memcmp(got.data, ref.data, ref.size))
                fail_msg("%s n=%lld force=%d misalign=%u: %zu bytes differ from the aligned "
                         "encode's %zu", qv_value_kind_name(k), (long long)n, force, mis,
                         (size_t)got.size, (size_t)ref.size);
            qv_encoded_release(env->r, &got);
        }
        /* The source is untouched (it is read-only: a write would have
         * faulted; this also checks the bytes around it). */
        const uint8_t *m = map;
        for (unsigned b = 0; b < mis; b++) assert_int_equal(m[b], 0xA5);
        assert_memory_equal(m + mis, vals, (size_t)n * 8);
        munmap(map, maplen);
    }
    if (rc) return 0;
    qv_encoded_release(env->r, &ref);
    /* And the chunk decodes to the values, bit for bit. */
    struct qv_encoded e = roundtrip(env, &in, &o, 4, (uint64_t)n * 31 + (uint64_t)force);
    qv_encoded_release(env->r, &e);
    return 1;
}

static void test_aligned_misaligned_readonly(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1, 2, 7, 64, 1023, 1024, 1025, 4097, 20000};
    static const enum qv_value_kind kinds[] = {QV_KIND_INT64, QV_KIND_UINT64};
    int64_t *v = malloc(20000 * 8);
    assert_non_null(v);
    int forced_ok = 0;
    for (size_t ki = 0; ki < 2; ki++)
        for (int shape = 0; shape < 8; shape++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                const int64_t n = sizes[si];
                fill_shape(v, n, shape, (uint64_t)shape * 1000 + (uint64_t)n);
                same_everywhere(&env, kinds[ki], v, n, QV_ENC_AUTO);
                if (n == 4097 || n == 7)
                    for (int force = QV_ENC_PLAIN; force <= QV_ENC_RELATIVE; force++)
                        forced_ok += same_everywhere(&env, kinds[ki], v, n, force);
            }
    /* Several integer encodings were taken at the root, not only plain. */
    assert_true(forced_ok > 2 * 8 * 2 * 2);
    free(v);
    env_close(&env);
}

static void test_entropy_layouts_readonly(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    enum { N = 5000 };
    int64_t *v = malloc(N * 8);
    assert_non_null(v);
    for (int layout = 1; layout <= 3; layout++) {
        qv_encode_force_entropy_layout(layout);
        for (int shape = 1; shape <= 6; shape++) {
            fill_shape(v, N, shape, (uint64_t)layout * 7 + (uint64_t)shape);
            same_everywhere(&env, QV_KIND_INT64, v, N, QV_ENC_AUTO);
        }
    }
    qv_encode_force_entropy_layout(0);
    free(v);
    env_close(&env);
}

/* Zero values: a NULL pointer and a misaligned one are both fine. */
static void test_empty(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const uint8_t junk[16];
    for (int mis = 0; mis < 9; mis++) {
        struct qv_values in = {0};
        in.kind = QV_KIND_INT64;
        in.count = 0;
        in.values = mis == 8 ? NULL : junk + mis;
        struct qv_encoded e = roundtrip(&env, &in, NULL, 0, 1);
        assert_true(e.size > 0);
        qv_encoded_release(env.r, &e);
    }
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aligned_misaligned_readonly),
        cmocka_unit_test(test_entropy_layouts_readonly),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
