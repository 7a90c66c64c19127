/*
 * Every encoding forced on every kind it supports, on data that suits it
 * and data that does not, at the vector-boundary sizes; full, range and
 * take decodes compared bit for bit with the input.
 */
#include <float.h>
#include <math.h>

#include "test_enc_util.h"

static const int64_t sizes[] = {0, 1, 2, 1023, 1024, 1025, 5000};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

static int probes_for(int64_t n) { return n < 100 ? 4 : 12; }

/* ---- Integers ---- */

enum ipat { I_CONST, I_SMALL, I_NEG, I_SORTED, I_RUNS, I_LOWCARD, I_SPARSE, I_RANDOM, I_EXTREME, I_NPAT };
static const char *ipat_name[] = {"const", "small", "neg", "sorted", "runs", "lowcard", "sparse", "random", "extreme"};

static void fill_ints(struct col *c, unsigned w, int pat, uint64_t seed) {
    uint64_t s = seed, acc = 0, cur = 0;
    int64_t left = 0;
    static const int64_t card[7] = {-7, 1000003, 42, -123456789, 5, 99, 0};
    const int64_t n = c->v.count;
    for (int64_t i = 0; i < n; i++) {
        uint64_t x;
        switch (pat) {
        case I_CONST: x = (uint64_t)INT64_MIN + 12345; break;
        case I_SMALL: x = rng_next(&s) % 100; break;
        case I_NEG: x = (uint64_t)((int64_t)(rng_next(&s) % 101) - 50); break;
        case I_SORTED: acc += rng_next(&s) % 9; x = acc + 1000; break;
        case I_RUNS:
            if (left-- <= 0) {
                left = (int64_t)(rng_next(&s) % 50);
                cur = rng_next(&s) % 1000;
            }
            x = cur;
            break;
        case I_LOWCARD: x = (uint64_t)card[rng_next(&s) % 7]; break;
        case I_SPARSE: x = rng_next(&s) % 50 == 0 ? rng_next(&s) : 0; break;
        case I_RANDOM: x = rng_next(&s); break;
        default: {
            static const uint64_t ex[] = {(uint64_t)INT64_MIN, (uint64_t)INT64_MAX, 0, UINT64_MAX, 1, (uint64_t)INT64_MIN + 1};
            x = ex[rng_next(&s) % 6];
            break;
        }
        }
        switch (w) {
        case 1: ((uint8_t *)c->values)[i] = (uint8_t)x; break;
        case 2: ((uint16_t *)c->values)[i] = (uint16_t)x; break;
        case 4: ((uint32_t *)c->values)[i] = (uint32_t)x; break;
        default: ((uint64_t *)c->values)[i] = x; break;
        }
    }
}

static void test_ints(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const enum qv_value_kind kinds[] = {QV_KIND_INT8,  QV_KIND_UINT8,  QV_KIND_INT16, QV_KIND_UINT16,
                                               QV_KIND_INT32, QV_KIND_UINT32, QV_KIND_INT64, QV_KIND_UINT64};
    static const int encs[] = {QV_ENC_AUTO,   QV_ENC_PLAIN, QV_ENC_CONSTANT, QV_ENC_BITPACK,
                               QV_ENC_FOR,    QV_ENC_DELTA, QV_ENC_ZIGZAG,   QV_ENC_DICT,
                               QV_ENC_RLE,    QV_ENC_SPARSE, QV_ENC_ZSTD,    QV_ENC_LZ4,
                               QV_ENC_BUCKET};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        unsigned w = kind_width(kinds[ki], 0);
        for (int si = 0; si < NSIZES; si++) {
            for (int pat = 0; pat < I_NPAT; pat++) {
                struct col c = col_words(kinds[ki], sizes[si]);
                fill_ints(&c, w, pat, (uint64_t)(si * 100 + pat));
                for (size_t ei = 0; ei < sizeof encs / sizeof encs[0]; ei++) {
                    if (encs[ei] == QV_ENC_CONSTANT && pat != I_CONST && sizes[si] > 1) continue;
                    struct qv_encode_options o = {0};
                    o.force = encs[ei];
                    struct qv_encoded e = roundtrip(&env, &c.v, &o, probes_for(sizes[si]), (uint64_t)ei);
                    if (encs[ei] != QV_ENC_AUTO && root_encoding(&e) != encs[ei])
                        fail_msg("%s %s n=%lld: forced %s, root is %s", qv_value_kind_name(kinds[ki]),
                                 ipat_name[pat], (long long)sizes[si], qv_encoding_name(encs[ei]),
                                 qv_encoding_name(root_encoding(&e)));
                    qv_encoded_release(env.r, &e);
                }
                col_free(&c);
            }
        }
    }
    env_close(&env);
}

static void test_int_auto_large(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    for (int pat = 0; pat < I_NPAT; pat++) {
        struct col c = col_words(QV_KIND_INT64, 70001);
        fill_ints(&c, 8, pat, 77);
        struct qv_encoded e = roundtrip(&env, &c.v, NULL, 40, 3);
        qv_encoded_release(env.r, &e);
        struct qv_encode_options o = {0};
        o.compact = 1;
        e = roundtrip(&env, &c.v, &o, 10, 4);
        qv_encoded_release(env.r, &e);
        col_free(&c);
    }
    env_close(&env);
}

static void test_constant_rejects_unequal(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct col c = col_words(QV_KIND_INT32, 10);
    ((int32_t *)c.values)[3] = 1;
    struct qv_encode_options o = {0};
    o.force = QV_ENC_CONSTANT;
    struct qv_encoded e;
    struct qv_error err;
    assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
    assert_null(e.data);
    o.force = QV_ENC_ALP;
    assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
    o.force = QV_ENC_FSST;
    assert_int_equal(qv_encode(&c.v, &o, env.r, &e, &err), EINVAL);
    assert_int_equal(qv_reservation_used(env.r), 0);
    col_free(&c);
    env_close(&env);
}

/* ---- Floats ---- */

enum fpat { F_CONST, F_DEC2, F_INTS, F_RANDOM, F_SPECIAL, F_RUNS, F_LOWCARD, F_MIXED, F_NPAT };

static void fill_floats(struct col *c, int f32, int pat, uint64_t seed) {
    uint64_t s = seed;
    const int64_t n = c->v.count;
    double cur = 0;
    for (int64_t i = 0; i < n; i++) {
        double x;
        switch (pat) {
        case F_CONST: x = 3.25; break;
        case F_DEC2: x = (double)(int64_t)(rng_next(&s) % 1000000) / 100.0; break;
        case F_INTS: x = (double)((int64_t)(rng_next(&s) % 20001) - 10000); break;
        case F_RANDOM: x = (double)rng_next(&s) / 3.0e17 * (rng_next(&s) & 1 ? 1 : -1); break;
        case F_SPECIAL: {
            static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-320, 1.5, DBL_MAX, -DBL_MIN};
            x = sp[rng_next(&s) % 10];
            break;
        }
        case F_RUNS:
            if (rng_next(&s) % 20 == 0) cur = (double)(rng_next(&s) % 100) / 4;
            x = cur;
            break;
        case F_LOWCARD: x = (double)(rng_next(&s) % 5) * 0.1; break;
        default:
            x = rng_next(&s) % 10 == 0 ? (double)rng_next(&s) / 7.0 : (double)(rng_next(&s) % 10000) / 10.0;
            break;
        }
        if (f32) {
            float f = (float)x;
            if (pat == F_SPECIAL && rng_next(&s) % 7 == 0) {
                uint32_t b = 0x7fc00001u; /* a NaN with payload */
                memcpy(&f, &b, 4);
            }
            ((float *)c->values)[i] = f;
        } else {
            if (pat == F_SPECIAL && rng_next(&s) % 7 == 0) {
                uint64_t b = UINT64_C(0xfff8000000000123); /* negative NaN with payload */
                memcpy(&x, &b, 8);
            }
            ((double *)c->values)[i] = x;
        }
    }
}

static void test_floats(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_CONSTANT, QV_ENC_ALP, QV_ENC_ALP_RD,
                               QV_ENC_DICT, QV_ENC_RLE,   QV_ENC_SPARSE,   QV_ENC_ZSTD, QV_ENC_LZ4};
    for (int f32 = 0; f32 < 2; f32++)
        for (int si = 0; si < NSIZES; si++)
            for (int pat = 0; pat < F_NPAT; pat++) {
                struct col c = col_words(f32 ? QV_KIND_FLOAT32 : QV_KIND_FLOAT64, sizes[si]);
                fill_floats(&c, f32, pat, (uint64_t)(si * 31 + pat));
                for (size_t ei = 0; ei < sizeof encs / sizeof encs[0]; ei++) {
                    if (encs[ei] == QV_ENC_CONSTANT && pat != F_CONST && sizes[si] > 1) continue;
                    struct qv_encode_options o = {0};
                    o.force = encs[ei];
                    struct qv_encoded e = roundtrip(&env, &c.v, &o, probes_for(sizes[si]), (uint64_t)ei);
                    if (encs[ei] != QV_ENC_AUTO) assert_int_equal(root_encoding(&e), encs[ei]);
                    qv_encoded_release(env.r, &e);
                }
                col_free(&c);
            }
    env_close(&env);
}

/* ---- Booleans ---- */

static void test_bools(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_CONSTANT, QV_ENC_SPARSE,
                               QV_ENC_RLE,  QV_ENC_ZSTD,  QV_ENC_LZ4};
    for (int si = 0; si < NSIZES; si++)
        for (int pat = 0; pat < 5; pat++)
            for (int64_t boff = 0; boff < 12; boff += 3) {
                int64_t n = sizes[si];
                struct col c;
                memset(&c, 0, sizeof c);
                c.values = calloc(1, (size_t)(n + boff) / 8 + 16);
                uint64_t s = (uint64_t)(pat * 7 + si);
                int cur = 0;
                for (int64_t i = 0; i < n; i++) {
                    int b;
                    switch (pat) {
                    case 0: b = 0; break;
                    case 1: b = 1; break;
                    case 2: b = (int)(rng_next(&s) & 1); break;
                    case 3: b = rng_next(&s) % 100 != 0; break;
                    default:
                        if (rng_next(&s) % 40 == 0) cur ^= 1;
                        b = cur;
                        break;
                    }
                    qv_bit_put(c.values, boff + i, b);
                }
                /* Garbage around the range must not leak into the encoding. */
                for (int64_t i = 0; i < boff; i++) qv_bit_put(c.values, i, 1);
                qv_bits_fill(c.values, boff + n, 9, 1);
                c.v.kind = QV_KIND_BOOL;
                c.v.count = n;
                c.v.bit_offset = boff;
                c.v.values = c.values;
                for (size_t ei = 0; ei < sizeof encs / sizeof encs[0]; ei++) {
                    if (encs[ei] == QV_ENC_CONSTANT && pat > 1 && n > 1) continue;
                    struct qv_encode_options o = {0};
                    o.force = encs[ei];
                    struct qv_encoded e = roundtrip(&env, &c.v, &o, probes_for(n), (uint64_t)ei);
                    if (encs[ei] != QV_ENC_AUTO) assert_int_equal(root_encoding(&e), encs[ei]);
                    qv_encoded_release(env.r, &e);
                }
                col_free(&c);
            }
    env_close(&env);
}

/* ---- Strings ---- */

static const char *words[] = {"furiously", "carefully", "final", "pending", "ironic", "deposits",
                              "requests", "packages", "accounts", "ideas", "the", "slyly",
                              "blithely", "quickly", "express", "regular", "even", "bold"};

static size_t g_const(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)s; (void)cap;
    memcpy(b, "AIR REG", 7);
    return 7;
}
static size_t g_empty(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)s; (void)b; (void)cap;
    return 0;
}
static size_t g_lowcard(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)cap;
    const char *w = words[rng_next(s) % 5];
    memcpy(b, w, strlen(w));
    return strlen(w);
}
static size_t g_text(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)cap;
    size_t want = 10 + rng_next(s) % 34, l = 0;
    while (l < want) {
        const char *w = words[rng_next(s) % 18];
        size_t wl = strlen(w);
        memcpy(b + l, w, wl);
        l += wl;
        b[l++] = ' ';
    }
    return want;
}
static size_t g_random(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)cap;
    size_t l = rng_next(s) % 30;
    for (size_t k = 0; k < l; k++) b[k] = (uint8_t)rng_next(s);
    return l;
}
static size_t g_long(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)cap;
    size_t l = i % 7 == 0 ? 0 : 1000 + rng_next(s) % 2000;
    for (size_t k = 0; k < l; k++) b[k] = (uint8_t)('a' + (k * 7 + (size_t)i) % 26);
    return l;
}
static size_t g_utf8(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)cap;
    static const char *u[] = {"Grüße", "日本語のテキスト", "🙂🙃", "naïve café", "Ωmega", ""};
    const char *w = u[rng_next(s) % 6];
    memcpy(b, w, strlen(w));
    return strlen(w);
}
static size_t g_mixed(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    return rng_next(s) % 3 == 0 ? 0 : g_text(i, s, b, cap);
}

/* Few distinct strings that share their length and their first and last
 * eight bytes, differing only in between: the dictionary's small cache
 * (keyed by exactly those) sends them to one slot, and only the byte
 * comparison tells them apart. Lengths 17 to 40 cover the word compares
 * and memcmp. */
static size_t g_twins(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {
    (void)i; (void)cap;
    size_t l = 17 + (size_t)(rng_next(s) % 3) * 11;
    memset(b, 'a', l);
    b[8 + rng_next(s) % (l - 16)] = (uint8_t)('0' + rng_next(s) % 5);
    return l;
}

/* Few distinct strings all of one length: the dictionary decodes them as
 * fixed-size entries (lengths 1 to 8; 9 does not qualify). */
#define G_FIXED(L)                                                                                 \
    static size_t g_fixed##L(int64_t i, uint64_t *s, uint8_t *b, size_t cap) {                     \
        (void)i; (void)cap;                                                                        \
        uint64_t r = rng_next(s) % 5;                                                              \
        for (size_t k = 0; k < L; k++) b[k] = (uint8_t)('A' + (r * 7 + k) % 26);                 \
        return L;                                                                                  \
    }
G_FIXED(1)
G_FIXED(3)
G_FIXED(8)
G_FIXED(9)

static void test_strings(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const str_gen gens[] = {g_const, g_empty, g_lowcard, g_text, g_random, g_long, g_utf8, g_mixed, g_twins,
                                   g_fixed1, g_fixed3, g_fixed8, g_fixed9};
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_CONSTANT, QV_ENC_DICT,
                               QV_ENC_FSST, QV_ENC_ZSTD,  QV_ENC_LZ4};
    for (int large = 0; large < 2; large++)
        for (int si = 0; si < NSIZES; si++)
            for (size_t gi = 0; gi < sizeof gens / sizeof gens[0]; gi++) {
                if (gens[gi] == g_long && sizes[si] > 1025) continue;
                struct col c = col_strings(large ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY,
                                           sizes[si], gens[gi], (uint64_t)(gi * 13 + si));
                for (size_t ei = 0; ei < sizeof encs / sizeof encs[0]; ei++) {
                    if (encs[ei] == QV_ENC_CONSTANT && gi > 1 && sizes[si] > 1) continue;
                    struct qv_encode_options o = {0};
                    o.force = encs[ei];
                    struct qv_encoded e = roundtrip(&env, &c.v, &o, probes_for(sizes[si]), (uint64_t)ei);
                    if (encs[ei] != QV_ENC_AUTO) assert_int_equal(root_encoding(&e), encs[ei]);
                    qv_encoded_release(env.r, &e);
                }
                col_free(&c);
            }
    env_close(&env);
}

static void test_string_offsets_not_zero_based(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const char *data = "xxxxhelloworld";
    int32_t offs[] = {4, 9, 9, 14};
    struct qv_values v = {QV_KIND_BINARY, 0, 3, 0, offs, (const uint8_t *)data};
    struct qv_encoded e = roundtrip(&env, &v, NULL, 5, 1);
    qv_encoded_release(env.r, &e);
    int32_t bad_offs[] = {4, 9, 8, 14};
    v.values = bad_offs;
    struct qv_error err;
    assert_int_equal(qv_encode(&v, NULL, env.r, &e, &err), EINVAL);
    env_close(&env);
}

/* ---- Fixed-size binary ---- */

static void test_fixed(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_CONSTANT, QV_ENC_DICT, QV_ENC_ZSTD, QV_ENC_LZ4};
    static const int32_t widths[] = {16, 3, 1};
    for (int wi = 0; wi < 3; wi++)
        for (int si = 0; si < NSIZES; si++)
            for (int pat = 0; pat < 3; pat++) {
                int32_t w = widths[wi];
                int64_t n = sizes[si];
                struct col c;
                memset(&c, 0, sizeof c);
                c.values = calloc(1, (size_t)n * (size_t)w + 1);
                uint64_t s = (uint64_t)(pat + si * 3);
                for (int64_t i = 0; i < n; i++)
                    for (int32_t b = 0; b < w; b++) {
                        uint8_t x = pat == 0 ? (uint8_t)b : pat == 1 ? (uint8_t)((i % 4) * 11 + b) : (uint8_t)rng_next(&s);
                        ((uint8_t *)c.values)[i * w + b] = x;
                    }
                c.v.kind = QV_KIND_FIXED_BINARY;
                c.v.fixed_width = w;
                c.v.count = n;
                c.v.values = c.values;
                for (size_t ei = 0; ei < sizeof encs / sizeof encs[0]; ei++) {
                    if (encs[ei] == QV_ENC_CONSTANT && pat != 0 && n > 1) continue;
                    struct qv_encode_options o = {0};
                    o.force = encs[ei];
                    struct qv_encoded e = roundtrip(&env, &c.v, &o, probes_for(n), (uint64_t)ei);
                    if (encs[ei] != QV_ENC_AUTO) assert_int_equal(root_encoding(&e), encs[ei]);
                    qv_encoded_release(env.r, &e);
                }
                col_free(&c);
            }
    env_close(&env);
}

/* ---- Takes with duplicate rows ---- */

/* Sorted rows with duplicates where a duplicate makes up for a gap
 * ({1, 2, 4, 5, 5, 6}: the list reader asks for the offsets at r and r + 1
 * of rows 1, 4, 5) span as many values as they count; the decoder once took
 * them for a contiguous run and returned values 1..6, so a take or a
 * filter on a list column handed out other rows' elements. */
static void test_take_duplicates_across_a_gap(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    static const int64_t rows[][6] = {{1, 2, 4, 5, 5, 6}, {0, 0, 3, 3, 4, 5}, {2, 2, 2, 3, 7, 7}};
    int64_t ints[16];
    uint8_t bits[2] = {0x5A, 0xC3};
    char strs[16];
    int32_t soffs[17];
    for (int i = 0; i < 16; i++) {
        ints[i] = 100 + i * 7;
        strs[i] = (char)('a' + i);
        soffs[i] = i;
    }
    soffs[16] = 16;
    static const int forced[] = {QV_ENC_AUTO, QV_ENC_PLAIN};
    for (size_t fi = 0; fi < sizeof forced / sizeof forced[0]; fi++) {
        struct qv_encode_options eo = {.force = forced[fi]};
        struct qv_values vi = {QV_KIND_INT64, 0, 16, 0, ints, NULL};
        struct qv_values vb = {QV_KIND_BOOL, 0, 16, 0, bits, NULL};
        struct qv_values vs = {QV_KIND_BINARY, 0, 16, 0, soffs, (const uint8_t *)strs};
        struct qv_encoded ei, eb, es;
        struct qv_error err;
        assert_int_equal(qv_encode(&vi, &eo, env.r, &ei, &err), 0);
        assert_int_equal(qv_encode(&vb, &eo, env.r, &eb, &err), 0);
        assert_int_equal(qv_encode(&vs, &eo, env.r, &es, &err), 0);
        struct qv_decoder *di, *db, *ds;
        assert_int_equal(qv_decoder_open(ei.data, ei.size, QV_KIND_INT64, 0, 16, env.r, &di, &err), 0);
        assert_int_equal(qv_decoder_open(eb.data, eb.size, QV_KIND_BOOL, 0, 16, env.r, &db, &err), 0);
        assert_int_equal(qv_decoder_open(es.data, es.size, QV_KIND_BINARY, 0, 16, env.r, &ds, &err), 0);
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
            const int64_t *r = rows[ri];
            int64_t out[6];
            struct qv_decode_out o = {out, 0, NULL, 0, 0};
            if (qv_decoder_take(di, r, 6, &o, &err)) fail_msg("take: %s", err.message);
            for (int t = 0; t < 6; t++) assert_int_equal(out[t], ints[r[t]]);
            uint8_t ob[1] = {0};
            struct qv_decode_out obo = {ob, 0, NULL, 0, 0};
            if (qv_decoder_take(db, r, 6, &obo, &err)) fail_msg("take: %s", err.message);
            for (int t = 0; t < 6; t++) assert_int_equal(qv_bit_get(ob, t), qv_bit_get(bits, r[t]));
            int32_t so[7];
            struct qv_decode_out oso = {so, 0, NULL, 0, 0};
            if (qv_decoder_take(ds, r, 6, &oso, &err)) fail_msg("take: %s", err.message);
            for (int t = 0; t < 6; t++) {
                assert_int_equal(so[t + 1] - so[t], 1);
                assert_int_equal(oso.data[so[t]], strs[r[t]]);
            }
            if (oso.data) qv_free(env.r, oso.data, oso.data_capacity);
        }
        qv_decoder_close(di);
        qv_decoder_close(db);
        qv_decoder_close(ds);
        qv_encoded_release(env.r, &ei);
        qv_encoded_release(env.r, &eb);
        qv_encoded_release(env.r, &es);
    }
    env_close(&env);
}

/* ---- Argument checks ---- */

static void test_bad_arguments(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    struct qv_encoded e;
    int64_t vals[4] = {1, 2, 3, 4};
    struct qv_values v = {QV_KIND_INT64, 0, 4, 0, vals, NULL};
    assert_int_equal(qv_encode(&v, NULL, env.r, &e, &err), 0);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT64, 0, 5, env.r, &d, &err), EIO);
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT32, 0, 4, env.r, &d, &err), EIO);
    assert_int_equal(qv_decoder_open(e.data, e.size, QV_KIND_INT64, 0, 4, env.r, &d, &err), 0);
    int64_t out[8];
    struct qv_decode_out o = {out, 0, NULL, 0, 0};
    assert_int_equal(qv_decoder_decode_range(d, 2, 3, &o, &err), EINVAL);
    assert_int_equal(qv_decoder_decode_range(d, -1, 1, &o, &err), EINVAL);
    int64_t rows[] = {3, 1};
    assert_int_equal(qv_decoder_take(d, rows, 2, &o, &err), EINVAL);
    int64_t rows2[] = {1, 4};
    assert_int_equal(qv_decoder_take(d, rows2, 2, &o, &err), EINVAL);
    qv_decoder_close(d);
    qv_encoded_release(env.r, &e);
    v.kind = (enum qv_value_kind)99;
    assert_int_equal(qv_encode(&v, NULL, env.r, &e, &err), EINVAL);
    v.kind = QV_KIND_INT64;
    v.count = -1;
    assert_int_equal(qv_encode(&v, NULL, env.r, &e, &err), EINVAL);
    env_close(&env);
}

/* String dictionaries decoded as fixed-size entries (all of one length 1..8,
 * one 8-byte copy per value), from 16-byte slots (entries of at most 16
 * bytes, not all of one length, at most 4,096 of them) or with 32-byte
 * copies (a length of 17 mixed in, or 4,097 entries), in int32 and int64
 * offsets: dictionaries of 1, 2, 33, 300, 4,096 and 4,097 entries (the
 * last entry frequent: its 8-byte copy reads past the dictionary's bytes),
 * entries of lengths 1 to 9, 15 and 16 (with an empty entry or one a byte
 * longer mixed in, or not), decoded into an output
 * whose free room is every size from exactly the values' bytes to 48 more
 * (the decode's reserve threshold is 40) in a block of whole alignment
 * units, and offsets buffers of exactly n + 1 slots (ASan sees a byte
 * past either). */
static void test_dict_fixed_entries(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    struct qv_error err;
    uint64_t s = 9;
    enum { n = 5000 };
    const int dsizes[] = {1, 2, 33, 300, 4096, 4097};
    const int lens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16};
    static uint8_t bytes[n * 17];
    static int32_t in_off[n + 1];
    static int64_t rows[n];
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
        for (int z = 0; z < 6; z++)
            for (int shape = 0; shape < 3; shape++) { /* all L; one empty; one of L + 1 */
                const int L = lens[li], ds = dsizes[z];
                if (shape && ds < 2) continue;
                int64_t pos = 0;
                for (int64_t i = 0; i < n; i++) {
                    uint64_t r = rng_next(&s);
                    int k = i < ds ? (int)i : r % 3 == 0 ? ds - 1 : (int)((r >> 8) % (uint64_t)ds);
                    size_t l = (size_t)L;
                    if (shape == 1 && k == ds / 2) l = 0;
                    if (shape == 2 && k == ds - 1) l = (size_t)L + 1;
                    in_off[i] = (int32_t)pos;
                    /* Entry k: k in base 26, last digit last (distinct from 3
                     * bytes up); 1 and 2 bytes: k's bytes. */
                    for (size_t b = 0, kk = (size_t)k; b < l; b++, kk /= 26)
                        bytes[pos + (int64_t)(l - 1 - b)] = (uint8_t)('a' + kk % 26);
                    if (l == 1 || l == 2) bytes[pos] = (uint8_t)k;
                    if (l == 2) bytes[pos + 1] = (uint8_t)(k >> 8);
                    pos += (int64_t)l;
                }
                in_off[n] = (int32_t)pos;
                if (L == 1 && shape != 1 && ds > 256) continue; /* 1 byte: at most 256 entries */
                struct qv_values in = {QV_KIND_BINARY, 0, n, 0, in_off, bytes};
                struct qv_encode_options eo = {.force = QV_ENC_DICT};
                struct qv_encoded e;
                if (qv_encode(&in, &eo, env.r, &e, &err))
                    fail_msg("L %d dict %d shape %d: encode: %s", L, ds, shape, err.message);
                for (int large = 0; large < 2; large++) {
                    const enum qv_value_kind kind = large ? QV_KIND_LARGE_BINARY : QV_KIND_BINARY;
                    struct qv_values want = in;
                    struct qv_decoder *d;
                    assert_int_equal(qv_decoder_open(e.data, e.size, kind, 0, n, env.r, &d, &err), 0);
                    const size_t w = large ? 8 : 4;
                    for (int t = 0; t < 10; t++) {
                        /* A range or sparse rows (one in 11). */
                        int64_t start = t < 5 ? (int64_t)(rng_next(&s) % 200) : 0;
                        int64_t m = t < 5 ? n - start - (int64_t)(rng_next(&s) % 300) : 0;
                        if (t >= 5)
                            for (int64_t r = (int64_t)(rng_next(&s) % 11); r < n; r += 11) rows[m++] = r;
                        uint64_t total = 0;
                        for (int64_t i = 0; i < m; i++) {
                            int64_t r = t < 5 ? start + i : rows[i];
                            total += (uint64_t)(in_off[r + 1] - in_off[r]);
                        }
                        const size_t cap = (size_t)((total + 48 + 63) / 64 * 64);
                        const size_t slack = (size_t)(t * 5) % 49;
                        struct qv_decode_out o = {0};
                        o.values = malloc((size_t)(m + 1) * w);
                        assert_non_null(o.values);
                        o.data = qv_alloc(env.r, cap, &err);
                        assert_non_null(o.data);
                        o.data_capacity = cap;
                        o.data_size = cap - (size_t)total - slack;
                        memset(o.data, '#', o.data_size);
                        const size_t prefix = o.data_size;
                        int rc = t < 5 ? qv_decoder_decode_range(d, start, m, &o, &err)
                                       : qv_decoder_take(d, rows, m, &o, &err);
                        if (rc)
                            fail_msg("L %d dict %d shape %d large %d t %d: rc %d %s", L, ds, shape,
                                     large, t, rc, err.message);
                        assert_int_equal(o.data_size, prefix + total);
                        for (size_t b = 0; b < prefix; b++) assert_int_equal(o.data[b], '#');
                        for (int64_t i = 0; i < m; i++) {
                            int64_t r = t < 5 ? start + i : rows[i];
                            int64_t a = large ? ((int64_t *)o.values)[i] : ((int32_t *)o.values)[i];
                            int64_t b = large ? ((int64_t *)o.values)[i + 1] : ((int32_t *)o.values)[i + 1];
                            if (b - a != in_off[r + 1] - in_off[r] ||
                                memcmp(o.data + a, want.data + in_off[r], (size_t)(b - a)))
                                fail_msg("L %d dict %d shape %d large %d t %d: value %lld (row %lld) differs",
                                         L, ds, shape, large, t, (long long)i, (long long)r);
                        }
                        free(o.values);
                        qv_free(env.r, o.data, o.data_capacity);
                    }
                    qv_decoder_close(d);
                }
                qv_encoded_release(env.r, &e);
            }
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ints),
        cmocka_unit_test(test_int_auto_large),
        cmocka_unit_test(test_constant_rejects_unequal),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_bools),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_string_offsets_not_zero_based),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_take_duplicates_across_a_gap),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_dict_fixed_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
