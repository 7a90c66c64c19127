/*
 * Skew and repetition in the cascade: the entropy stage (zstd in frames of
 * 4 or 16 vectors over packed integer codes), frequency-ordered dictionaries,
 * patched codes, and the second build when an estimate was wrong. Each case
 * of the issue (a repeating 0..23 hour column, decade years, Zipf-skewed
 * ints with 1,000 distinct values, skewed strings, unsorted data whose
 * sample looks sorted) round-trips (full, ranges, takes) and must come out
 * smaller than the cascade without these stages (the encodings they add
 * masked off); corrupt entropy-coded chunks fail cleanly.
 */
#include <math.h>

#include "encoding/encoding_testing.h"
#include "quiver/base.h"
#include "test_enc_util.h"

/* Every encoding but the entropy stage (zstd), patched and bucket: the
 * cascade as it was before them. Dictionaries are frequency-ordered either
 * way. */
static const uint32_t OLD_MASK =
    ~(QV_ENC_BIT(QV_ENC_ZSTD) | QV_ENC_BIT(QV_ENC_PATCHED) | QV_ENC_BIT(QV_ENC_BUCKET));

/* Chosen (all encodings) must be at most `frac` of the old cascade's size. */
static void expect_smaller(struct enc_env *env, const struct qv_values *v, double frac,
                           const char *what) {
    char tree[1024];
    size_t now = encoded_size(env, v, 0, 10, 17, tree, sizeof tree);
    size_t old = encoded_size(env, v, OLD_MASK, 10, 17, NULL, 0);
    print_message("%s: %zu bytes (%.2f bits/value), was %zu: %s\n", what, now,
                  8.0 * (double)now / (double)v->count, old, tree);
    if ((double)now > frac * (double)old)
        fail_msg("%s: %zu bytes, the old cascade %zu (want <= %.2fx)", what, now, old, frac);
}

/* A sensor's hour of day, 0..23 over and over. */
static void test_hour_cycle(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {4096, 26280, 100000};
    for (size_t k = 0; k < 3; k++) {
        struct col c = col_words(QV_KIND_INT64, ns[k]);
        for (int64_t i = 0; i < ns[k]; i++) ((int64_t *)c.values)[i] = i % 24;
        expect_smaller(&env, &c.v, 0.25, "hour 0..23");
        col_free(&c);
    }
    env_close(&env);
}

/* Decade years, each repeated for a group of rows (age groups x sexes),
 * the groups cycling. */
static void test_decade_years(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 30000;
    struct col c = col_words(QV_KIND_INT32, n);
    for (int64_t i = 0; i < n; i++) ((int32_t *)c.values)[i] = 1850 + 10 * (int32_t)((i / 7) % 16);
    expect_smaller(&env, &c.v, 0.5, "decade years");
    col_free(&c);
    env_close(&env);
}

/* Zipf-distributed values (s = 1.1) over 1,000 distinct ints spread over a
 * wide range: fixed-width codes need 10 bits per value. */
static void test_zipf(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 200000, d = 1000;
    double *cdf = malloc((size_t)d * sizeof *cdf);
    const double sum = zipf_cdf(cdf, d, 1.1);
    struct col c = col_words(QV_KIND_INT64, n);
    uint64_t s = 5;
    for (int64_t i = 0; i < n; i++) {
        const int64_t lo = zipf_draw(cdf, d, sum, &s);
        /* Value of rank lo: scattered so its order says nothing of rank. */
        ((int64_t *)c.values)[i] = (int64_t)((uint64_t)(lo * 7919) % 100003) * 1000 + 17;
    }
    char tree[1024];
    size_t now = encoded_size(&env, &c.v, 0, 10, 17, tree, sizeof tree);
    double bits = 8.0 * (double)now / (double)n;
    print_message("zipf: %.2f bits/value: %s\n", bits, tree);
    /* 8.05 with the entropy stage's zstd frames over the codes packed at
     * 10 bits; bucket's tokens in ans frames (format 7.0) take 7.07. */
    if (bits > 7.5) fail_msg("zipf ints: %.2f bits per value (fixed width needs 10)", bits);
    expect_smaller(&env, &c.v, 0.9, "zipf");
    free(cdf);
    col_free(&c);
    env_close(&env);
}

/* Skewed short strings (airport codes): a frequency-ordered dictionary
 * whose codes then cost fewer bits. */
static size_t airport(int64_t i, uint64_t *rng, uint8_t *buf, size_t cap) {
    (void)i;
    (void)cap;
    /* rank = floor of an exponential: geometric skew over ~200 codes */
    uint64_t x = rng_next(rng);
    unsigned rank = (unsigned)__builtin_ctzll(x | (UINT64_C(1) << 40)) * 5 + (unsigned)((x >> 50) % 5);
    buf[0] = (uint8_t)('A' + rank % 26);
    buf[1] = (uint8_t)('A' + (rank / 26) % 26);
    buf[2] = (uint8_t)('A' + (rank * 7) % 26);
    return 3;
}
static void test_skewed_strings(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_strings(QV_KIND_BINARY, 120000, airport, 9);
    expect_smaller(&env, &c.v, 0.9, "airport codes");
    col_free(&c);
    env_close(&env);
}

/* Small values with rare outliers (delays: mostly 0..30, a few hours):
 * patched, or the entropy stage, beats frame of reference. */
static void test_delays(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 100000;
    struct col c = col_words(QV_KIND_INT32, n);
    uint64_t s = 3;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        int32_t x = (int32_t)(r % 31);
        if (r % 100 == 7) x = 200 + (int32_t)((r >> 20) % 1200);
        if (r % 1000 == 9) x = -(int32_t)((r >> 30) % 60);
        ((int32_t *)c.values)[i] = x;
    }
    expect_smaller(&env, &c.v, 0.9, "delays");
    col_free(&c);
    env_close(&env);
}

/* Compact mode keeps the entropy stage: zstd over the whole finished tree
 * (compact's extra step) compressed bit-packed words worse than the stage
 * does byte-aligned residuals, and compact chunks of skewed small ints
 * came out 13-39% larger than default ones. Compact must not be larger
 * than default beyond zstd's level noise (level 3 against 1: tens of bytes). */
static void test_compact_keeps_stage(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 20000;
    for (int shape = 0; shape < 3; shape++) {
        struct col c = col_words(QV_KIND_INT64, n);
        uint64_t s = 11 + (uint64_t)shape;
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&s);
            int64_t x = shape == 0   ? (int64_t)(r % 31) - (r % 17 == 0 ? 40 : 0) /* deltas */
                        : shape == 1 ? (r % 10 < 6 ? 3 : r % 10 < 9 ? 4 : (int64_t)(r % 7)) /* answers */
                                     : 1000 + (int64_t)(i % 24) * 5; /* a cycle */
            ((int64_t *)c.values)[i] = x;
        }
        struct qv_encode_options o = {0};
        struct qv_encoded d = roundtrip(&env, &c.v, &o, 10, 31);
        o.compact = 1;
        struct qv_encoded k = roundtrip(&env, &c.v, &o, 10, 32);
        print_message("shape %d: default %zu bytes, compact %zu\n", shape, d.size, k.size);
        if (k.size > d.size + 64)
            fail_msg("shape %d: compact %zu bytes, default %zu", shape, k.size, d.size);
        qv_encoded_release(env.r, &d);
        qv_encoded_release(env.r, &k);
        col_free(&c);
    }
    env_close(&env);
}

/* Unsorted data whose sampled vectors happen to be sorted: delta looks
 * cheap on the sample; the built node must not be larger than frame of
 * reference (the second build catches the estimate). */
static void test_sample_looks_sorted(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 64 * 1024;
    struct col c = col_words(QV_KIND_INT32, n);
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) {
        int64_t vec = i / 1024;
        /* The cascade samples vectors 0, 4, 8, ...: those ascend slowly. */
        int32_t x = vec % 4 == 0 ? (int32_t)(vec * 4096 + (i % 1024) * 4)
                                 : (int32_t)(rng_next(&s) % (64 * 4096));
        ((int32_t *)c.values)[i] = x;
    }
    char tree[1024];
    size_t now = encoded_size(&env, &c.v, 0, 10, 17, tree, sizeof tree);
    /* Frame of reference: 18 bits per value plus headers. */
    size_t for_bytes = (size_t)n * 18 / 8 + 256;
    print_message("sample looks sorted: %zu bytes (frame of reference %zu): %s\n", now, for_bytes,
                  tree);
    if (now > for_bytes) fail_msg("%zu bytes, frame of reference needs %zu: %s", now, for_bytes, tree);
    col_free(&c);
    env_close(&env);
}

/* Row counts around the entropy stage's frames and minimum. */
static void test_frame_edges(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t ns[] = {1023, 1024, 4095, 4096, 4097, 16383, 16384, 16385, 40000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        struct col c = col_words(QV_KIND_UINT16, ns[k]);
        for (int64_t i = 0; i < ns[k]; i++) ((uint16_t *)c.values)[i] = (uint16_t)(1000 + (i * 5) % 37);
        struct qv_encoded e = roundtrip(&env, &c.v, NULL, 30, (uint64_t)k);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

/* Flipped bytes of an entropy-coded chunk: EIO or success, never more. */
static void test_corrupt_entropy(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 40000;
    struct col c = col_words(QV_KIND_INT64, n);
    for (int64_t i = 0; i < n; i++) ((int64_t *)c.values)[i] = i % 24;
    struct qv_error err = {0};
    struct qv_encoded e;
    assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
    char tree[512];
    assert_int_equal(qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, &err), 0);
    if (!strstr(tree, "zstd")) fail_msg("no entropy stage in %s", tree);
    corrupt_trials(&env, &e, QV_KIND_INT64, n, 600, 42, 0, 20);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}


/* A failed test leaves no forced layout behind for the next. */
static int reset_layout(void **state) {
    (void)state;
    qv_encode_force_entropy_layout(0);
    return 0;
}

/* ---- The sequential layout (format 4.0): frames for(residuals=plain) at
 * a narrower type ---- */

/* Whether qv_enc_walk (which shows the first frame of each zstd node)
 * finds a plain node of type `type` inside a frame: the sequential layout,
 * under its for node, or bare when the reference is 0 at the node's type. */
struct seq_find {
    const char *type;
    int found;
};
static int seq_visit(void *ctx, const struct qv_enc_node_info *info) {
    struct seq_find *f = ctx;
    if (info->compressed && info->encoding == QV_ENC_PLAIN && !strcmp(info->type, f->type))
        f->found = 1;
    return 0;
}
static int has_seq_frames(struct enc_env *env, const struct qv_encoded *e, const char *type) {
    struct seq_find f = {type, 0};
    struct qv_error err = {0};
    if (qv_enc_walk(e->data, e->size, env->r, seq_visit, &f, &err)) fail_msg("walk: %s", err.message);
    return f.found;
}

static void set_word(struct col *c, int64_t i, uint64_t x) {
    switch (kind_width(c->v.kind, 0)) {
    case 1: ((uint8_t *)c->values)[i] = (uint8_t)x; break;
    case 2: ((uint16_t *)c->values)[i] = (uint16_t)x; break;
    case 4: ((uint32_t *)c->values)[i] = (uint32_t)x; break;
    default: ((uint64_t *)c->values)[i] = x; break;
    }
}

/* Forced sequential frames: every integer kind, residuals of 8 and of 16
 * bits against a reference (zero, positive, negative), lengths around the
 * frames and vectors; full, range and take decodes (the probes' takes
 * reach the first and the last frame) equal the input. */
static void test_seq_forced(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const enum qv_value_kind kinds[] = {QV_KIND_UINT8, QV_KIND_INT8,  QV_KIND_UINT16,
                                               QV_KIND_INT16, QV_KIND_INT32, QV_KIND_UINT32,
                                               QV_KIND_INT64, QV_KIND_UINT64};
    static const int64_t ns[] = {1024, 1500, 4095, 4097, 16385, 40000};
    qv_encode_force_entropy_layout(3);
    uint64_t s = 99;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const unsigned w = kind_width(kinds[k], 0);
        for (int bits = 8; bits <= 16 && bits <= (int)(8 * w); bits += 8) {
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++) {
                const int64_t n = ns[j];
                struct col c = col_words(kinds[k], n);
                const uint64_t base = w == 1 ? 0 : j % 3 == 0 ? 0 : j % 3 == 1 ? 1000 : (uint64_t)-70000;
                const uint64_t span = bits == 8 ? 200 : 50000;
                for (int64_t i = 0; i < n; i++) {
                    /* a cycle with noise, so zstd has both to find */
                    uint64_t x = (uint64_t)(i % 7) * (span / 8) + rng_next(&s) % (span / 8);
                    set_word(&c, i, base + x);
                }
                set_word(&c, n - 1, base + span - 1); /* the full span at the end */
                struct qv_encoded e = roundtrip(&env, &c.v, NULL, 12, (uint64_t)(k * 100 + j));
                const char *want = w == 1 || bits == 8 ? "u8" : "u16";
                if (!has_seq_frames(&env, &e, want)) {
                    char tree[512];
                    qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, NULL);
                    fail_msg("%s n=%lld %d bits: no sequential %s frames in %s",
                             qv_value_kind_name(kinds[k]), (long long)n, bits, want, tree);
                }
                /* Takes of the first and the last rows alone. */
                struct qv_decoder *d;
                struct qv_error err = {0};
                assert_int_equal(qv_decoder_open(e.data, e.size, c.v.kind, 0, n, env.r, &d, &err), 0);
                const int64_t rows[] = {0, 1, n - 2, n - 1};
                struct qv_decode_out o;
                out_alloc(&o, &c.v, 4);
                assert_int_equal(qv_decoder_take(d, rows, 4, &o, &err), 0);
                for (int i = 0; i < 4; i++) check_value(&c.v, rows[i], &o, i, "edge take");
                out_free(&o, env.r);
                qv_decoder_close(d);
                qv_encoded_release(env.r, &e);
                col_free(&c);
            }
        }
    }
    qv_encode_force_entropy_layout(0);
    env_close(&env);
}

/* The other forced layouts still round-trip (and the knob resets). */
static void test_layouts_forced(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 9000;
    struct col c = col_words(QV_KIND_INT32, n);
    for (int64_t i = 0; i < n; i++) ((int32_t *)c.values)[i] = 500 + (int32_t)((i * 13) % 301);
    for (int layout = 1; layout <= 3; layout++) {
        qv_encode_force_entropy_layout(layout);
        struct qv_encoded e = roundtrip(&env, &c.v, NULL, 12, (uint64_t)layout);
        assert_int_equal(root_encoding(&e), QV_ENC_ZSTD);
        assert_int_equal(has_seq_frames(&env, &e, "u16"), layout == 3);
        qv_encoded_release(env.r, &e);
    }
    qv_encode_force_entropy_layout(0);
    col_free(&c);
    env_close(&env);
}

/* l_linenumber's shape: 1..k per order, k from 1 to 7. The sample chooses
 * a sequential layout by itself (from format 8.0 sequential bits, seqpack
 * residuals of 4 bits), and it is smaller than bit-packing in the same
 * frames (bit-packed layouts forced) and than sequential bytes (forced). */
static void test_seq_chosen(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 120000;
    struct col c = col_words(QV_KIND_INT32, n);
    uint64_t s = 21;
    for (int64_t i = 0; i < n;) {
        int k = 1 + (int)(rng_next(&s) % 7);
        for (int j = 1; j <= k && i < n; j++, i++) ((int32_t *)c.values)[i] = j;
    }
    struct qv_encoded e = roundtrip(&env, &c.v, NULL, 20, 5);
    char tree[512];
    qv_enc_describe(e.data, e.size, env.r, tree, sizeof tree, NULL);
    if (!strstr(tree, "seqpack(w=4)")) fail_msg("line numbers: %s", tree);
    size_t packed = (size_t)-1, seq8 = 0;
    for (int layout = 1; layout <= 3; layout++) {
        qv_encode_force_entropy_layout(layout);
        struct qv_encoded p = roundtrip(&env, &c.v, NULL, 4, 6);
        if (layout == 3) {
            assert_true(has_seq_frames(&env, &p, "u8"));
            seq8 = p.size;
        } else if (p.size < packed) {
            packed = p.size;
        }
        qv_encoded_release(env.r, &p);
    }
    if (e.size >= seq8) fail_msg("sequential bits %zu bytes, sequential bytes %zu", e.size, seq8);
    qv_encode_force_entropy_layout(0);
    print_message("line numbers: %zu bytes (%.2f bits/value), bit-packed frames %zu: %s\n", e.size,
                  8.0 * (double)e.size / (double)n, packed, tree);
    if (e.size >= packed) fail_msg("sequential %zu bytes, bit-packed %zu", e.size, packed);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}

/* The root zstd node's frame table and frames buffer (fixed frames: 16
 * bytes per frame), found by reading its header as format.md 5.2 says. */
static uint64_t get_varint(const uint8_t *p, size_t *at) {
    uint64_t v = 0;
    for (int sh = 0;; sh += 7) {
        uint8_t b = p[(*at)++];
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) return v;
    }
}
static void frame_table(const struct qv_encoded *e, size_t *table, uint64_t *table_len,
                        size_t *frames) {
    size_t at = 2;
    assert_int_equal(e->data[0], QV_ENC_ZSTD);
    get_varint(e->data, &at); /* count */
    int np = e->data[at++];
    for (int i = 0; i < np; i++) get_varint(e->data, &at);
    assert_int_equal(e->data[at++], 2);
    *table_len = get_varint(e->data, &at);
    get_varint(e->data, &at);
    assert_int_equal(e->data[at++], 0);
    *table = (at + 7) & ~(size_t)7;
    *frames = *table + (size_t)((*table_len + 7) & ~UINT64_C(7));
}

/* Every decode of a chunk whose frames were damaged fails with a
 * corruption error (never a signal, never other values). */
static void expect_corrupt(struct enc_env *env, const uint8_t *bytes, size_t size, int64_t n,
                           const char *what) {
    struct qv_error err = {0};
    struct qv_decoder *d;
    int rc = qv_decoder_open(bytes, size, QV_KIND_INT32, 0, n, env->r, &d, &err);
    if (rc) {
        if (rc != EIO || err.kind != QV_ERROR_CORRUPT) fail_msg("%s: open gave %d: %s", what, rc, err.message);
        return;
    }
    int32_t *out = malloc((size_t)n * 4);
    struct qv_decode_out o = {0};
    o.values = out;
    const int64_t rows[] = {0, n - 1};
    int rcs[3] = {qv_decoder_take(d, rows, 1, &o, &err), qv_decoder_take(d, rows + 1, 1, &o, &err),
                  qv_decoder_decode_range(d, 0, n, &o, &err)};
    int failed = 0;
    for (int i = 0; i < 3; i++) {
        if (rcs[i] && (rcs[i] != EIO || err.kind != QV_ERROR_CORRUPT))
            fail_msg("%s: decode %d gave %d: %s", what, i, rcs[i], err.message);
        failed += rcs[i] != 0;
    }
    if (!failed) fail_msg("%s: every decode succeeded", what);
    print_message("%s: %s\n", what, err.message);
    free(out);
    qv_decoder_close(d);
}

/* Sequential frames with a truncated zstd frame (first and last), a frame
 * table whose decompressed size disagrees with the frame's content size,
 * and a frame whose residuals child claims a type wider than the node:
 * corruption errors. Random bit flips: EIO or success. */
static void test_seq_corrupt(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 20000;
    struct col c = col_words(QV_KIND_INT32, n);
    uint64_t s = 8;
    for (int64_t i = 0; i < n; i++) ((int32_t *)c.values)[i] = 3 + (int32_t)(i % 5) + (int32_t)(rng_next(&s) % 3);
    qv_encode_force_entropy_layout(3);
    struct qv_encoded e;
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&c.v, NULL, env.r, &e, &err), 0);
    qv_encode_force_entropy_layout(0);
    assert_true(has_seq_frames(&env, &e, "u8"));
    size_t table, frames;
    uint64_t tlen;
    frame_table(&e, &table, &tlen, &frames);
    const int64_t nf = (int64_t)(tlen / 16);
    assert_true(nf >= 2);
    uint8_t *bad = malloc(e.size);
    for (int f = 0; f < 2; f++) {
        const size_t ent = table + 16 * (size_t)(f ? nf - 1 : 0);
        uint64_t end, raw;
        /* Truncated: the frame ends 3 bytes early. */
        memcpy(bad, e.data, e.size);
        memcpy(&end, bad + ent, 8);
        end -= 3;
        memcpy(bad + ent, &end, 8);
        expect_corrupt(&env, bad, e.size, n, f ? "last frame truncated" : "first frame truncated");
        /* Declared decompressed size 8 bytes more than the content size. */
        memcpy(bad, e.data, e.size);
        memcpy(&raw, bad + ent + 8, 8);
        raw += 8;
        memcpy(bad + ent + 8, &raw, 8);
        expect_corrupt(&env, bad, e.size, n, f ? "last frame's size" : "first frame's size");
        /* Garbage in the middle of the compressed bytes. */
        memcpy(bad, e.data, e.size);
        uint64_t begin = 0;
        if (f) memcpy(&begin, bad + ent - 16, 8);
        memcpy(&end, bad + ent, 8);
        for (uint64_t b = begin + 6; b < end; b += 5) bad[frames + b] ^= 0x5a;
        expect_corrupt(&env, bad, e.size, n, f ? "last frame garbled" : "first frame garbled");
    }
    corrupt_trials(&env, &e, QV_KIND_INT32, n, 400, 77, 50, 20);
    free(bad);
    qv_encoded_release(env.r, &e);
    col_free(&c);
    env_close(&env);
}


/* A for node (format 4.0) over any residuals child of a narrower integer
 * type, written by hand around a chunk the cascade encoded at that type:
 * bit-packed, plain and the cascade's own choice, under u16, u32 and u64
 * nodes; values are the residuals zero-extended plus the reference. A
 * child wider than the node, or not an integer, is corrupt. */
static size_t put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}
static uint8_t *wrap_for(const struct qv_encoded *child, int pt, int64_t n, int64_t ref,
                         size_t *size) {
    uint8_t *b = calloc(1, child->size + 64);
    size_t at = 0;
    b[at++] = QV_ENC_FOR;
    b[at++] = (uint8_t)pt;
    at += put_varint(b + at, (uint64_t)n);
    b[at++] = 1;
    at += put_varint(b + at, ((uint64_t)ref << 1) ^ (uint64_t)(ref >> 63));
    b[at++] = 0;
    b[at++] = 1;
    at += put_varint(b + at, child->size);
    at = (at + 7) & ~(size_t)7;
    memcpy(b + at, child->data, child->size);
    *size = at + child->size;
    return b;
}
static void test_narrow_children(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 5000;
    static const enum qv_value_kind ckinds[] = {QV_KIND_UINT8, QV_KIND_UINT16, QV_KIND_UINT32};
    static const enum qv_value_kind pkinds[] = {QV_KIND_UINT16, QV_KIND_UINT32, QV_KIND_UINT64};
    static const int pts[] = {2, 3, 4}; /* u16, u32, u64 (format.md 5.1) */
    static const int forces[] = {QV_ENC_AUTO, QV_ENC_BITPACK, QV_ENC_PLAIN, QV_ENC_DICT};
    const int64_t ref = -3;
    uint64_t s = 4;
    for (size_t ci = 0; ci < 3; ci++) {
        const unsigned cw = kind_width(ckinds[ci], 0);
        struct col c = col_words(ckinds[ci], n);
        for (int64_t i = 0; i < n; i++) set_word(&c, i, (uint64_t)(i % 11) * 9 + rng_next(&s) % 5);
        for (size_t fi = 0; fi < 4; fi++) {
            struct qv_encode_options o = {.force = forces[fi]};
            struct qv_encoded ce;
            struct qv_error err = {0};
            assert_int_equal(qv_encode(&c.v, &o, env.r, &ce, &err), 0);
            for (size_t pi = 0; pi < 3; pi++) {
                const unsigned pw = kind_width(pkinds[pi], 0);
                size_t size;
                uint8_t *b = wrap_for(&ce, pts[pi], n, ref, &size);
                struct col want = col_words(pkinds[pi], n);
                for (int64_t i = 0; i < n; i++) {
                    uint64_t r = 0;
                    memcpy(&r, (const uint8_t *)c.values + (size_t)i * cw, cw);
                    set_word(&want, i, r + (uint64_t)ref);
                }
                struct qv_decoder *d;
                int rc = qv_decoder_open(b, size, pkinds[pi], 0, n, env.r, &d, &err);
                if (cw >= pw) {
                    /* Same width: an ordinary for node; wider: corrupt. */
                    if (cw > pw && (rc != EIO || err.kind != QV_ERROR_CORRUPT))
                        fail_msg("u%u residuals under u%u: open gave %d (%s)", 8 * cw, 8 * pw, rc,
                                 err.message);
                    if (!rc) qv_decoder_close(d);
                    free(b);
                    col_free(&want);
                    continue;
                }
                if (rc) fail_msg("u%u residuals under u%u: %s", 8 * cw, 8 * pw, err.message);
                struct qv_decode_out out;
                out_alloc(&out, &want.v, n);
                assert_int_equal(qv_decoder_decode_range(d, 0, n, &out, &err), 0);
                for (int64_t i = 0; i < n; i++) check_value(&want.v, i, &out, i, "narrow full");
                out_free(&out, env.r);
                /* A range of more than one widening block, off the vectors. */
                out_alloc(&out, &want.v, 1700);
                assert_int_equal(qv_decoder_decode_range(d, 1001, 1700, &out, &err), 0);
                for (int64_t i = 0; i < 1700; i++) check_value(&want.v, 1001 + i, &out, i, "narrow range");
                out_free(&out, env.r);
                const int64_t rows[] = {0, 777, 4999};
                out_alloc(&out, &want.v, 3);
                assert_int_equal(qv_decoder_take(d, rows, 3, &out, &err), 0);
                for (int i = 0; i < 3; i++) check_value(&want.v, rows[i], &out, i, "narrow take");
                out_free(&out, env.r);
                qv_decoder_close(d);
                free(b);
                col_free(&want);
            }
            qv_encoded_release(env.r, &ce);
        }
        col_free(&c);
    }
    /* A float child under an integer node. */
    struct col f = col_words(QV_KIND_FLOAT32, 100);
    struct qv_encoded fe;
    struct qv_encode_options po = {.force = QV_ENC_PLAIN};
    assert_int_equal(qv_encode(&f.v, &po, env.r, &fe, NULL), 0);
    size_t size;
    uint8_t *b = wrap_for(&fe, 4, 100, 0, &size);
    struct qv_decoder *d;
    struct qv_error err = {0};
    assert_int_equal(qv_decoder_open(b, size, QV_KIND_UINT64, 0, 100, env.r, &d, &err), EIO);
    assert_int_equal(err.kind, QV_ERROR_CORRUPT);
    print_message("f32 residuals: %s\n", err.message);
    free(b);
    qv_encoded_release(env.r, &fe);
    col_free(&f);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hour_cycle),       cmocka_unit_test(test_decade_years),
        cmocka_unit_test(test_zipf),             cmocka_unit_test(test_skewed_strings),
        cmocka_unit_test(test_delays),
        cmocka_unit_test(test_compact_keeps_stage),           cmocka_unit_test(test_sample_looks_sorted),
        cmocka_unit_test(test_frame_edges),      cmocka_unit_test(test_corrupt_entropy),
        cmocka_unit_test_teardown(test_seq_forced, reset_layout),
        cmocka_unit_test_teardown(test_layouts_forced, reset_layout),
        cmocka_unit_test_teardown(test_seq_chosen, reset_layout),
        cmocka_unit_test_teardown(test_seq_corrupt, reset_layout),
        cmocka_unit_test(test_narrow_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
