/*
 * The ans codec (encoding/ans.c): blocks round-trip for every length and
 * shape of byte distribution, skewed bytes code close to their entropy,
 * every truncation and every single-byte change of a block is refused or
 * decodes (never a read out of bounds, which ASan checks), and through the
 * cascade a skewed small-integer column is stored in ans frames and reads
 * back whole, by ranges and by takes, also from corrupted frames refused
 * with the node named. Blocks of both coded kinds (8 states, kind 1; 32,
 * kind 2, format 6.0) decode alike with the generic and the AVX2 kernels.
 */
#include <math.h>

#include "base/cpu_internal.h"
#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"
#include "test_enc_util.h"

/* Shapes of bytes: 0 one symbol, 1 two (1 in 1000 the rare one), 2 uniform
 * over 256, 3 geometric, 4 every byte once then one symbol, 5 five survey
 * answers (fair's rate_marriage-like weights), 6 uniform over 7. */
#define SHAPES 7

static void fill(uint8_t *b, size_t n, int shape, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        switch (shape) {
        case 0: b[i] = 42; break;
        case 1: b[i] = r % 1000 ? 3 : 200; break;
        case 2: b[i] = (uint8_t)r; break;
        case 3: b[i] = (uint8_t)__builtin_ctzll(r | (UINT64_C(1) << 40)); break;
        case 4: b[i] = i < 256 ? (uint8_t)i : 7; break;
        case 5: {
            static const uint8_t w[] = {1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5};
            b[i] = w[r % 20];
            break;
        }
        case 7: { /* 1..5 at 12:4:2:1:1, 1.7 bits of entropy */
            static const uint8_t w[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 5};
            b[i] = w[r % 20];
            break;
        }
        default: b[i] = (uint8_t)(r % 7); break;
        }
    }
}

static double entropy_bytes(const uint8_t *b, size_t n) {
    uint64_t cnt[256] = {0};
    for (size_t i = 0; i < n; i++) cnt[b[i]]++;
    double bits = 0;
    for (int s = 0; s < 256; s++)
        if (cnt[s]) bits += (double)cnt[s] * -log2((double)cnt[s] / (double)n);
    return bits / 8;
}

static void test_roundtrip_and_size(void **state) {
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 257, 1000, 4096, 8192, 65536};
    const size_t maxn = 65536;
    uint8_t *src = malloc(maxn), *out = malloc(maxn + 1);
    uint8_t *blk = malloc(qv__ans_bound(maxn));
    assert_non_null(blk);
    for (int shape = 0; shape < SHAPES; shape++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const size_t n = sizes[si];
            fill(src, n, shape, n * 7 + (size_t)shape);
            const size_t bound = qv__ans_bound(n);
            size_t clen = qv__ans_compress(src, n, blk, bound);
            assert_true(clen >= 1 && clen <= n + 1);
            /* A smaller destination is refused, not overrun. */
            assert_int_equal(qv__ans_compress(src, n, blk, bound - 1), 0);
            const char *why = "unset";
            memset(out, 0xA5, n + 1);
            if (qv__ans_decompress(blk, clen, out, n, &why))
                fail_msg("shape %d n=%zu: %s", shape, n, why);
            assert_null(why);
            assert_memory_equal(out, src, n);
            assert_int_equal(out[n], 0xA5); /* nothing past n */
            /* Skewed bytes code within 3% of their entropy, plus the
             * table and states (not shape 4: 255 symbols seen once in 64K
             * bytes ask for frequencies finer than 1/4096). */
            if (n >= 4096 && shape != 2 && shape != 4) {
                uint64_t cnt[256] = {0};
                for (size_t i = 0; i < n; i++) cnt[src[i]]++;
                double table, h = entropy_bytes(src, n);
                (void)qv__ans_estimate(cnt, n, &table);
                if ((double)clen > h * 1.03 + table + 8)
                    fail_msg("shape %d n=%zu: %zu bytes for %.0f of entropy and %.0f of table",
                             shape, n, clen, h, table);
            }
            /* Estimate: within 2% + 8 bytes of the block for these counts. */
            if (n >= 256 && blk[0] != 0) {
                uint64_t cnt[256] = {0};
                for (size_t i = 0; i < n; i++) cnt[src[i]]++;
                double table, payload = qv__ans_estimate(cnt, n, &table);
                double est = payload + table;
                if (fabs(est - (double)clen) > 0.02 * (double)clen + 8)
                    fail_msg("shape %d n=%zu: estimate %.1f for %zu bytes", shape, n, est, clen);
            }
        }
    free(src);
    free(out);
    free(blk);
}

/* Where a rANS block's states start: after its kind, count, symbols and
 * frequencies. */
static size_t states_at(const uint8_t *b) {
    const int nsym = b[1] + 1;
    size_t p = 2 + (size_t)(nsym < 32 ? nsym : 32);
    for (int k = 0; k < nsym; k++) p += b[p] & 0x80 ? 2 : 1;
    return p;
}

/* Every prefix of a block and every byte of it changed (to its complement
 * and to 0): refused with a reason, or decoded; never out of bounds. A
 * changed state or stream word is nearly always refused (the final states
 * no longer come out as the initial ones), not always: a state's low bits
 * pick a symbol, and one of frequency 1 leaves nothing of them behind, so
 * a slot moved onto another such symbol decodes another byte on the same
 * path. A changed symbol or frequency can decode to other bytes too. The
 * file's block checksums are what catch those. */
static void test_hostile_blocks(void **state) {
    (void)state;
    const size_t n = 3000;
    uint8_t *src = malloc(n), *out = malloc(n), *blk = malloc(qv__ans_bound(n));
    uint8_t *bad = malloc(qv__ans_bound(n) + 1);
    int refused = 0, decoded = 0; /* changes to states and stream words */
    for (int lanes = 8; lanes <= 32; lanes += 24)
    for (int shape = 1; shape < SHAPES; shape++) {
        fill(src, n, shape, 99 + (uint64_t)shape);
        size_t clen = qv__ans_compress_lanes(src, n, blk, qv__ans_bound(n), lanes);
        const char *why;
        for (size_t cut = 0; cut < clen; cut++) {
            memcpy(bad, blk, cut);
            if (qv__ans_decompress(bad, cut, out, n, &why) == 0)
                fail_msg("shape %d: a block cut to %zu of %zu bytes decoded", shape, cut, clen);
            assert_non_null(why);
        }
        /* A block one byte too long is refused. */
        memcpy(bad, blk, clen);
        bad[clen] = 0;
        assert_int_equal(qv__ans_decompress(bad, clen + 1, out, n, &why), -1);
        const size_t body = blk[0] != 0 ? states_at(blk) : clen;
        for (size_t at = 0; at < clen; at++)
            for (int v = 0; v < 2; v++) {
                memcpy(bad, blk, clen);
                bad[at] = v ? (uint8_t)~blk[at] : 0;
                if (bad[at] == blk[at]) continue;
                int rc = qv__ans_decompress(bad, clen, out, n, &why);
                if (rc) assert_non_null(why);
                if (at >= body) {
                    if (rc) refused++;
                    else decoded++;
                }
            }
    }
    assert_true(refused > 2000);
    assert_true(refused > 20 * decoded);
    /* Kinds other than 0, 1 and 2, and an empty block. */
    const char *why;
    uint8_t k = 3;
    assert_int_equal(qv__ans_decompress(&k, 1, out, 1, &why), -1);
    assert_string_equal(why, "unknown block kind");
    assert_int_equal(qv__ans_decompress(&k, 0, out, 1, &why), -1);
    /* A frequency written in two bytes must be 128 or more: two symbols of
     * frequencies 1 and 4095, eight states of 2^16 and no stream code no
     * bytes; the same with the 1 written as 0x81 0x00 is refused. */
    uint8_t blk2[64] = {1, 1, 3, 9};
    size_t at = 4;
    const uint8_t canonical[] = {0x01, 0xFF, 0x1F}, padded[] = {0x81, 0x00, 0xFF, 0x1F};
    for (int v = 0; v < 2; v++) {
        at = 4;
        memcpy(blk2 + at, v ? padded : canonical, v ? sizeof padded : sizeof canonical);
        at += v ? sizeof padded : sizeof canonical;
        for (int j = 0; j < 8; j++) {
            const uint32_t st = 1u << 16;
            memcpy(blk2 + at + 4 * j, &st, 4);
        }
        int rc = qv__ans_decompress(blk2, at + 32, out, 0, &why);
        if (v) {
            assert_int_equal(rc, -1);
            assert_string_equal(why, "a frequency below 128 in two bytes");
        } else {
            assert_int_equal(rc, 0);
        }
    }
    free(src);
    free(out);
    free(blk);
    free(bad);
}

/* Both coded kinds round-trip for lengths around the kernels' steps (32
 * bytes a step, 64 stream bytes kept for the checked tail), with the
 * generic kernels and the CPU's best, which must give the same bytes; the
 * encoder's own choice is wide (kind 2) for 8,192 bytes or more coded into
 * 2,048 or more. Kind 1 is what 5.x files hold. */
static void test_kinds(void **state) {
    (void)state;
    static const size_t sizes[] = {0, 1, 31, 32, 33, 63, 64, 65, 95, 96, 97, 1000, 4095, 4096,
                                   4097, 8191, 8192, 16384, 16385, 65536};
    const size_t maxn = 65536;
    uint8_t *src = malloc(maxn), *out = malloc(maxn + 1), *gen = malloc(maxn + 1);
    uint8_t *blk = malloc(qv__ans_bound(maxn));
    assert_non_null(blk);
    int wide = 0, narrow = 0;
    for (int shape = 0; shape < SHAPES; shape++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
            for (int lanes = 0; lanes <= 32; lanes += lanes ? 24 : 8) {
                const size_t n = sizes[si];
                fill(src, n, shape, n * 13 + (size_t)shape);
                const size_t clen = qv__ans_compress_lanes(src, n, blk, qv__ans_bound(n), lanes);
                assert_true(clen >= 1 && clen <= n + 1);
                if (blk[0] != 0) assert_int_equal(blk[0], lanes == 8 ? 1 : lanes == 32 ? 2 : blk[0]);
                if (lanes == 0 && blk[0] != 0) {
                    /* The choice: never wide below 8192 bytes; for 7
                     * values (2.8 bits each) wide from 8192 bytes (2.9 KiB
                     * coded); one value in a thousand never (a few
                     * hundred bytes coded). */
                    if (n < 8192 || shape == 1) assert_int_equal(blk[0], 1);
                    if (shape == 6 && n >= 8192) assert_int_equal(blk[0], 2);
                    wide += blk[0] == 2;
                    narrow += blk[0] == 1;
                }
                const char *why = "unset";
                memset(out, 0xA5, n + 1);
                memset(gen, 0x5A, n + 1);
                if (qv__ans_decompress(blk, clen, out, n, &why))
                    fail_msg("shape %d n=%zu lanes %d: %s", shape, n, lanes, why);
                const int level = qv__cpu_set_level(QV__CPU_BASELINE);
                const int rc = qv__ans_decompress(blk, clen, gen, n, &why);
                qv__cpu_set_level(level);
                assert_int_equal(rc, 0);
                assert_memory_equal(out, src, n);
                assert_memory_equal(gen, src, n);
                assert_int_equal(out[n], 0xA5);
                assert_int_equal(gen[n], 0x5A);
            }
    assert_true(wide >= 3 && narrow >= 10);
    free(src);
    free(out);
    free(gen);
    free(blk);
}

/* Through qv_encode: a skewed column of small integers is stored in ans
 * frames, left to choose and forced, and reads back whole, by ranges and
 * by takes. (Fair's answers, five values at 2:3:4:6:5, 2.28 bits of
 * entropy, were this test's data until format 9.0: radix holds them in
 * 2.33 bits at a third of ans's decode time, and the cascade takes it.) */
static void test_cascade_chooses_ans(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t sizes[] = {1024, 6366, 8192, 8193, 40000};
    int64_t *v = malloc(40000 * 8);
    uint8_t *b = malloc(40000);
    for (int forced = 0; forced <= 1; forced++) {
        qv_encode_force_entropy_layout(forced ? QV__ENTROPY_ANS : 0);
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            const int64_t n = sizes[si];
            fill(b, (size_t)n, 7, (uint64_t)n);
            for (int64_t i = 0; i < n; i++) v[i] = 1000 + b[i];
            struct qv_values in = {0};
            in.kind = QV_KIND_INT64;
            in.count = n;
            in.values = v;
            struct qv_encoded e = roundtrip(&env, &in, NULL, 5, (uint64_t)n);
            char tree[4096];
            struct qv_error err = {0};
            assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
            if ((forced || n >= 6366) && !strstr(tree, "ans("))
                fail_msg("n=%lld forced=%d: no ans frames in %s", (long long)n, forced, tree);
            qv_encoded_release(env.r, &e);
        }
    }
    qv_encode_force_entropy_layout(0);
    free(v);
    free(b);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_and_size),
        cmocka_unit_test(test_hostile_blocks),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_cascade_chooses_ans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
