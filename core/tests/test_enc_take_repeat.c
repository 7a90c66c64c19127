/*
 * What a decoder keeps for takes. Decompressed zstd/lz4 frames (general.c):
 * a call
 * that decodes fewer values than a frame holds (a take) keeps several
 * frames, least recently used replaced first, within a byte budget; a
 * range decode keeps one. Takes repeated on one decoder over more frames
 * than the cache holds, in cycles and at random, interleaved with range
 * decodes, every entropy layout, integers and strings (frames sized by
 * bytes): every value equals the full decode's, at the first and last
 * value of vectors, frames and the chunk. The decoder's memory stays
 * within the budget however many frames were visited. A frame that fails
 * to decompress fails every take that needs it, again on a retry (nothing
 * of it is kept), while the other frames still decode. Delta vectors
 * (delta.c) and run-end vectors of ends (rle.c) kept for takes: delta and
 * run-end chunks (forced, over many vectors) taken again and again on one
 * decoder, rows in more vectors than are kept, at vector and chunk edges,
 * interleaved with range decodes, against the full decode.
 */
#include "encoding/encoding_testing.h"
#include "encoding/enc_internal.h"
#include "test_enc_util.h"

/* What the cache may keep beyond one frame (general.c FRAME_KEEP_BYTES). */
#define KEEP_BYTES (512 * 1024)

static void encode_ints(struct enc_env *env, enum qv_value_kind kind, const void *v, int64_t n,
                        struct qv_encoded *enc) {
    struct qv_values in = {0};
    in.kind = kind;
    in.count = n;
    in.values = v;
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&in, NULL, env->r, enc, &err), 0);
}

static int64_t frames_of(struct enc_env *env, const struct qv_encoded *enc, int *is_zstd) {
    struct qv__mem m = {.r = env->r};
    struct qv__node *root;
    struct qv_error err = {0};
    assert_int_equal(qv__tree_parse(&m, enc->data, enc->size, 0, 0, 0, &root, &err), 0);
    *is_zstd = root->enc == QV_ENC_ZSTD;
    int64_t nf = *is_zstd ? qv__general_nframes(root) : 0;
    qv__mem_free_all(&m);
    return nf;
}

/* Takes rows[0..k) and compares with ref (w bytes a value). */
static void take_check(struct qv_decoder *d, const int64_t *rows, int64_t k, const uint8_t *ref,
                       unsigned w, uint8_t *out) {
    struct qv_decode_out o = {.values = out};
    struct qv_error err = {0};
    if (qv_decoder_take(d, rows, k, &o, &err)) fail_msg("take: %s", err.message);
    for (int64_t i = 0; i < k; i++)
        if (memcmp(out + (size_t)i * w, ref + (size_t)rows[i] * w, w))
            fail_msg("row %lld (take of %lld) differs from the full decode", (long long)rows[i],
                     (long long)k);
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Takes over a word chunk of n values in frames of fv values. */
static void exercise_words(struct enc_env *env, const struct qv_encoded *enc,
                           enum qv_value_kind kind, unsigned w, int64_t n, int64_t fv,
                           int64_t nframes) {
    struct qv_error err = {0};
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc->data, enc->size, kind, 0, n, env->r, &d, &err), 0);
    uint8_t *ref = malloc((size_t)n * w);
    uint8_t *out = malloc((size_t)n * w);
    struct qv_decode_out o = {.values = ref};
    assert_int_equal(qv_decoder_decode_range(d, 0, n, &o, &err), 0);
    qv_decoder_close(d);
    assert_int_equal(qv_decoder_open(enc->data, enc->size, kind, 0, n, env->r, &d, &err), 0);
    const uint64_t base_mem = qv_reservation_used(env->r);
    int64_t rows[64];
    /* Boundaries: first/last value of the chunk, of each frame, of the
     * vectors around a frame's end; one row per take, then all at once. */
    int64_t k = 0;
    for (int64_t f = 0; f < nframes && k < 60; f += nframes / 12 + 1) {
        int64_t fs = f * fv, fe = fs + fv < n ? fs + fv : n;
        int64_t cand[] = {fs, fs + 1, fs + 1023, fs + 1024, fe - 1025, fe - 1024, fe - 1};
        for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++)
            if (cand[c] >= fs && cand[c] < fe && (k == 0 || cand[c] > rows[k - 1])) rows[k++] = cand[c];
    }
    rows[k++] = n - 1;
    for (int64_t i = 0; i < k; i++) take_check(d, rows + i, 1, ref, w, out);
    take_check(d, rows, k, ref, w, out);
    /* Cycles over more frames than the cache holds, three times: the
     * second and third rounds read frames kept and frames evicted. */
    int64_t cyc = nframes < 40 ? nframes : 40;
    for (int round = 0; round < 3; round++)
        for (int64_t f = 0; f < cyc; f++) {
            int64_t r = f * fv + (f * 37 + round * 11) % (f * fv + fv <= n ? fv : n - f * fv);
            take_check(d, &r, 1, ref, w, out);
        }
    /* Random sorted takes of 1..40 rows (duplicates allowed), with a range
     * decode now and then. */
    uint64_t s = (uint64_t)n * 31 + w;
    for (int it = 0; it < 300; it++) {
        int64_t m = 1 + (int64_t)(rng_next(&s) % 40);
        for (int64_t i = 0; i < m; i++) rows[i] = (int64_t)(rng_next(&s) % (uint64_t)n);
        qsort(rows, (size_t)m, sizeof rows[0], cmp64);
        take_check(d, rows, m, ref, w, out);
        if (it % 25 == 0) {
            int64_t a = (int64_t)(rng_next(&s) % (uint64_t)n), len = n - a < 9000 ? n - a : 9000;
            struct qv_decode_out ro = {.values = out};
            assert_int_equal(qv_decoder_decode_range(d, a, len, &ro, &err), 0);
            assert_memory_equal(out, ref + (size_t)a * w, (size_t)len * w);
        }
    }
    /* A take over four frames met before keeps them; a range decode (a
     * scan) keeps one frame only, so a scan holds no more than it did. A
     * fresh decoder's take visiting frames once keeps only one, as before. */
    if (nframes >= 6) {
        int64_t four[4] = {0, fv, 2 * fv, 3 * fv + 5};
        struct qv_decoder *d2;
        assert_int_equal(qv_decoder_open(enc->data, enc->size, kind, 0, n, env->r, &d2, &err), 0);
        uint64_t before = qv_reservation_used(env->r);
        take_check(d2, four, 4, ref, w, out);
        uint64_t once = qv_reservation_used(env->r) - before;
        take_check(d2, four, 4, ref, w, out);
        uint64_t twice = qv_reservation_used(env->r) - before;
        assert_true(twice >= once + 3 * 1024);
        qv_decoder_close(d2);
        take_check(d, four, 4, ref, w, out);
        take_check(d, four, 4, ref, w, out);
        uint64_t many = qv_reservation_used(env->r);
        struct qv_decode_out ro = {.values = out};
        assert_int_equal(qv_decoder_decode_range(d, 5 * fv, fv, &ro, &err), 0);
        assert_memory_equal(out, ref + (size_t)(5 * fv) * w, (size_t)fv * w);
        uint64_t one = qv_reservation_used(env->r);
        assert_true(many >= one + 3 * 1024);
        take_check(d, four, 4, ref, w, out);
        assert_true(qv_reservation_used(env->r) <= many + 16384);
    }
    /* A take over 24 frames (flights' 100 rows fall ~33 to a chunk, in
     * ~23 frames): repeated, it finds them all kept, where 16 slots kept 16
     * and decompressed the rest again on every take. */
    if (nframes >= 24 && (uint64_t)fv * w * 24 <= KEEP_BYTES - 65536) {
        int64_t spread[24];
        for (int64_t f = 0; f < 24; f++) spread[f] = f * fv + (f * 131) % fv;
        struct qv_decoder *d3;
        assert_int_equal(qv_decoder_open(enc->data, enc->size, kind, 0, n, env->r, &d3, &err), 0);
        uint64_t before = qv_reservation_used(env->r);
        take_check(d3, spread, 24, ref, w, out);
        uint64_t once = qv_reservation_used(env->r);
        take_check(d3, spread, 24, ref, w, out);
        uint64_t twice = qv_reservation_used(env->r);
        take_check(d3, spread, 24, ref, w, out);
        assert_true(twice >= once + (uint64_t)20 * fv * w);
        assert_true(qv_reservation_used(env->r) <= twice + 16384);
        assert_true(once <= before + (uint64_t)fv * w + 65536);
        qv_decoder_close(d3);
    }
    /* However many frames were visited, the cache holds at most its
     * budget and one frame more (plus each frame's parsed nodes). */
    uint64_t frame_bytes = (uint64_t)fv * w + 4096;
    assert_true(qv_reservation_used(env->r) <= base_mem + KEEP_BYTES + frame_bytes + 16 * 16384);
    qv_decoder_close(d);
    free(ref);
    free(out);
}

static void test_words_every_layout(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 131072 + 777;
    int32_t *v32 = malloc((size_t)n * 4);
    int64_t *v64 = malloc((size_t)n * 8);
    uint64_t s = 7;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        v32[i] = (int32_t)(r % 7) + (r % 97 == 0 ? 3000 : 0);
        v64[i] = 1000000 + (int64_t)(r % 50) * 100;
    }
    int checked = 0;
    for (int layout = 1; layout <= 3; layout++) {
        qv_encode_force_entropy_layout(layout);
        for (int wide = 0; wide < 2; wide++) {
            struct qv_encoded enc = {0};
            encode_ints(&env, wide ? QV_KIND_INT64 : QV_KIND_INT32, wide ? (void *)v64 : (void *)v32,
                        n, &enc);
            int is_zstd;
            int64_t nf = frames_of(&env, &enc, &is_zstd);
            if (is_zstd && nf > 16) {
                exercise_words(&env, &enc, wide ? QV_KIND_INT64 : QV_KIND_INT32, wide ? 8 : 4, n,
                               (n + nf - 1) / nf >= 16384 ? 16384 : 4096, nf);
                checked++;
            }
            qv_encoded_release(env.r, &enc);
        }
    }
    qv_encode_force_entropy_layout(0);
    /* Every layout builds the stage over these values. */
    assert_true(checked >= 3);
    free(v32);
    free(v64);
    env_close(&env);
}

/* Strings in frames sized by bytes: 128 KiB frames, so the budget, not the
 * slot count, bounds what is kept. */
static void test_strings_byte_budget(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 3000;
    int64_t *off = malloc((size_t)(n + 1) * 8);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += 200 + (size_t)(i % 300);
    uint8_t *data = malloc(total);
    uint64_t s = 3;
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t l = 200 + (size_t)(i % 300);
        for (size_t j = 0; j < l; j++) data[off[i] + (int64_t)j] = (uint8_t)("qrstuvwx"[rng_next(&s) % 8]);
        off[i + 1] = off[i] + (int64_t)l;
    }
    struct qv_values in = {.kind = QV_KIND_LARGE_BINARY, .count = n, .values = off, .data = data};
    struct qv_encode_options eo = {.allowed = QV_ENC_BIT(QV_ENC_ZSTD)};
    struct qv_encoded enc = {0};
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&in, &eo, env.r, &enc, &err), 0);
    int is_zstd;
    int64_t nf = frames_of(&env, &enc, &is_zstd);
    assert_true(is_zstd);
    assert_true(nf >= 5);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_LARGE_BINARY, 0, n, env.r, &d, &err), 0);
    const uint64_t base_mem = qv_reservation_used(env.r);
    int64_t *offs = malloc((size_t)(n + 1) * 8);
    int64_t rows[8];
    for (int round = 0; round < 4; round++)
        for (int64_t i = 0; i < n; i += 97) {
            int64_t k = 0;
            rows[k++] = i;
            if (i + 1 < n) rows[k++] = i + 1;
            if (round % 2 && i + 1500 < n) rows[k++] = i + 1500;
            struct qv_decode_out t = {.values = offs};
            assert_int_equal(qv_decoder_take(d, rows, k, &t, &err), 0);
            for (int64_t j = 0; j < k; j++) {
                int64_t r = rows[j];
                assert_int_equal(offs[j + 1] - offs[j], off[r + 1] - off[r]);
                assert_memory_equal(t.data + offs[j], data + off[r], (size_t)(off[r + 1] - off[r]));
            }
            qv_free(env.r, t.data, t.data_capacity);
        }
    assert_true(qv_reservation_used(env.r) <= base_mem + KEEP_BYTES + 2 * QV__FRAME_BYTES + 65536);
    qv_decoder_close(d);
    free(offs);
    qv_encoded_release(env.r, &enc);
    free(off);
    free(data);
    env_close(&env);
}

/* Frame 5's zstd magic zeroed: a take of one of its rows is corrupt, twice
 * (the failed frame is not kept), the rows of other frames still decode,
 * before and after. */
static void test_corrupt_frame(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 65536;
    int32_t *v = malloc((size_t)n * 4);
    uint64_t s = 11;
    for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(rng_next(&s) % 13);
    qv_encode_force_entropy_layout(1);
    struct qv_encoded enc = {0};
    encode_ints(&env, QV_KIND_INT32, v, n, &enc);
    qv_encode_force_entropy_layout(0);
    struct qv__mem m = {.r = env.r};
    struct qv__node *root;
    struct qv_error err = {0};
    assert_int_equal(qv__tree_parse(&m, enc.data, enc.size, 0, 0, 0, &root, &err), 0);
    assert_int_equal(root->enc, QV_ENC_ZSTD);
    assert_true(qv__general_nframes(root) > 8);
    const size_t st = root->nparams == 2 ? 24 : 16;
    uint64_t cbeg;
    memcpy(&cbeg, root->buf[0] + 4 * st, 8);
    const int64_t fv = root->params[0];
    uint8_t *p = (uint8_t *)(uintptr_t)(root->buf[1] + cbeg);
    qv__mem_free_all(&m);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_INT32, 0, n, env.r, &d, &err), 0);
    int64_t rows[2] = {4 * fv + 3, 6 * fv + 9};
    int32_t out[2];
    struct qv_decode_out o = {.values = out};
    /* Met twice: frames 4 and 6 are kept. */
    assert_int_equal(qv_decoder_take(d, rows, 2, &o, &err), 0);
    assert_int_equal(qv_decoder_take(d, rows, 2, &o, &err), 0);
    memset(p, 0, 4);
    int64_t bad = 5 * fv + 100;
    for (int attempt = 0; attempt < 2; attempt++) {
        qv_error_clear(&err);
        assert_int_equal(qv_decoder_take(d, &bad, 1, &o, &err), EIO);
        assert_int_equal(err.kind, QV_ERROR_CORRUPT);
        assert_non_null(strstr(err.message, "frame 5"));
        /* Kept frames still answer. */
        assert_int_equal(qv_decoder_take(d, rows, 2, &o, &err), 0);
        assert_int_equal(out[0], v[rows[0]]);
        assert_int_equal(out[1], v[rows[1]]);
    }
    qv_decoder_close(d);
    qv_encoded_release(env.r, &enc);
    free(v);
    env_close(&env);
}

/* Repeated takes over a chunk forced to `force`: rows in cycles over more
 * vectors than a node keeps, random sorted takes, vector edges, range
 * decodes between, all against the full decode. */
static void repeat_forced(struct enc_env *env, enum qv_value_kind kind, unsigned w,
                          const void *v, int64_t n, int force) {
    struct qv_values in = {0};
    in.kind = kind;
    in.count = n;
    in.values = v;
    struct qv_encode_options eo = {0};
    eo.force = force;
    struct qv_encoded enc = {0};
    struct qv_error err = {0};
    assert_int_equal(qv_encode(&in, &eo, env->r, &enc, &err), 0);
    struct qv__mem m = {.r = env->r};
    struct qv__node *root;
    assert_int_equal(qv__tree_parse(&m, enc.data, enc.size, 0, 0, 0, &root, &err), 0);
    assert_int_equal(root->enc, force);
    qv__mem_free_all(&m);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, kind, 0, n, env->r, &d, &err), 0);
    uint8_t *ref = malloc((size_t)n * w), *out = malloc((size_t)n * w);
    struct qv_decode_out o = {.values = ref};
    assert_int_equal(qv_decoder_decode_range(d, 0, n, &o, &err), 0);
    assert_memory_equal(ref, v, (size_t)n * w);
    qv_decoder_close(d);
    assert_int_equal(qv_decoder_open(enc.data, enc.size, kind, 0, n, env->r, &d, &err), 0);
    int64_t rows[64];
    const int64_t nvec = (n + 1023) / 1024;
    /* Single rows alternating between three vectors: what is kept answers
     * (a run-end node stays on its lazy path, which only a few vectors of
     * ends decoded allow). */
    for (int it = 0; it < 30; it++) {
        int64_t r = ((it % 3) * 5 + 1) * 1024 + (it * 7) % 1024;
        if (r < n) take_check(d, &r, 1, ref, w, out);
    }
    for (int round = 0; round < 4; round++) {
        /* One row in each of up to 24 vectors, then the vector edges. */
        for (int64_t vv = 0; vv < nvec && vv < 24; vv++) {
            int64_t r = vv * 1024 + (vv * 131 + round * 17) % 1024;
            if (r >= n) r = n - 1;
            take_check(d, &r, 1, ref, w, out);
        }
        for (int64_t vv = 0; vv < nvec; vv += 3) {
            int64_t k = 0, cand[] = {vv * 1024 - 1, vv * 1024, vv * 1024 + 1, vv * 1024 + 1023};
            for (int c = 0; c < 4; c++)
                if (cand[c] >= 0 && cand[c] < n && (k == 0 || cand[c] > rows[k - 1])) rows[k++] = cand[c];
            take_check(d, rows, k, ref, w, out);
        }
        rows[0] = 0;
        rows[1] = n - 1;
        take_check(d, rows, 2, ref, w, out);
    }
    uint64_t s = (uint64_t)n + (uint64_t)force;
    for (int it = 0; it < 400; it++) {
        int64_t k = 1 + (int64_t)(rng_next(&s) % 12);
        int64_t centre = (int64_t)(rng_next(&s) % (uint64_t)n);
        for (int64_t i = 0; i < k; i++) {
            int64_t r = centre + (int64_t)(rng_next(&s) % 3000) - 1500;
            rows[i] = r < 0 ? 0 : r >= n ? n - 1 : r;
        }
        qsort(rows, (size_t)k, sizeof rows[0], cmp64);
        take_check(d, rows, k, ref, w, out);
        if (it % 40 == 0) {
            int64_t a = (int64_t)(rng_next(&s) % (uint64_t)n), len = n - a < 5000 ? n - a : 5000;
            struct qv_decode_out ro = {.values = out};
            assert_int_equal(qv_decoder_decode_range(d, a, len, &ro, &err), 0);
            assert_memory_equal(out, ref + (size_t)a * w, (size_t)len * w);
        }
    }
    qv_decoder_close(d);
    free(ref);
    free(out);
    qv_encoded_release(env->r, &enc);
}

static void test_delta_and_rle_vectors(void **state) {
    (void)state;
    struct enc_env env;
    env_open(&env);
    const int64_t n = 40 * 1024 + 333;
    int64_t *a = malloc((size_t)n * 8), *runs = malloc((size_t)n * 8);
    int32_t *b = malloc((size_t)n * 4);
    uint64_t s = 5;
    int64_t x = 1000, y = 7;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&s);
        x += (int64_t)(r % 40) + (r % 1000 == 0 ? 100000 : 0); /* sorted, rare jumps */
        a[i] = x;
        b[i] = (int32_t)(i * 3 + (int64_t)(r % 5));
        if (r % 4 == 0) y += (int64_t)(r >> 50) - 3000; /* runs of ~4 */
        runs[i] = y;
    }
    repeat_forced(&env, QV_KIND_INT64, 8, a, n, QV_ENC_DELTA);
    repeat_forced(&env, QV_KIND_INT32, 4, b, n, QV_ENC_DELTA);
    repeat_forced(&env, QV_KIND_INT64, 8, runs, n, QV_ENC_RLE);
    repeat_forced(&env, QV_KIND_INT64, 8, a, n, QV_ENC_RLE); /* runs of one */
    free(a);
    free(b);
    free(runs);
    env_close(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words_every_layout),
        cmocka_unit_test(test_strings_byte_budget),
        cmocka_unit_test(test_corrupt_frame),
        cmocka_unit_test(test_delta_and_rle_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
