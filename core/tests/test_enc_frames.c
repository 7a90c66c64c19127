/* zstd/lz4 frames sized by bytes (format 2): the cascade's string frames
 * end at QV__FRAME_BYTES of values or at 16384 values. Frames at the cap
 * boundary, a single value bigger than the cap (a frame of its own), every
 * value read back exact by range and by take. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pool_env.h"
#include "encoding/enc_internal.h"
#include "quiver/encoding.h"

/* n strings: string i has len_of(i) bytes of a pattern zstd compresses. */
static void strings_of(int64_t n, size_t (*len_of)(int64_t), int64_t **off, uint8_t **data) {
    *off = malloc((size_t)(n + 1) * sizeof **off);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += len_of(i);
    *data = malloc(total ? total : 1);
    (*off)[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t l = len_of(i);
        for (size_t k = 0; k < l; k++) (*data)[(*off)[i] + (int64_t)k] = (uint8_t)("abcdefgh"[(k + (size_t)i) % 8] + (k % 97 == 0));
        if (l >= 8) memcpy(*data + (*off)[i], &i, 8); /* distinct values */
        (*off)[i + 1] = (*off)[i] + (int64_t)l;
    }
}

static size_t len_1k(int64_t i) { (void)i; return 1024; }
static size_t len_big(int64_t i) { return i == 300 ? 3 * QV__FRAME_BYTES + 5 : 200 + (size_t)(i % 50); }

/* n strings (offsets off, bytes data) encoded with only zstd allowed. */
static struct qv_encoded encode_zstd(struct pool_env *e, int64_t n, int64_t *off, uint8_t *data) {
    struct qv_values in = {.kind = QV_KIND_LARGE_BINARY, .count = n, .values = off, .data = data};
    struct qv_encode_options eo = {.allowed = QV_ENC_BIT(QV_ENC_ZSTD)};
    struct qv_encoded enc = {0};
    struct qv_error err;
    assert_int_equal(qv_encode(&in, &eo, e->r, &enc, &err), 0);
    return enc;
}

/* Encodes as zstd (cascade with plain and zstd allowed), checks the frame
 * count and every value, by range and by take. */
static void check_frames(struct pool_env *e, int64_t n, size_t (*len_of)(int64_t),
                         int64_t want_frames) {
    int64_t *off;
    uint8_t *data;
    strings_of(n, len_of, &off, &data);
    struct qv_encoded enc = encode_zstd(e, n, off, data);
    struct qv_error err;
    struct qv__mem m = {.r = e->r};
    struct qv__node *root;
    assert_int_equal(qv__tree_parse(&m, enc.data, enc.size, 0, 0, 0, &root, &err), 0);
    assert_int_equal(root->enc, QV_ENC_ZSTD);
    assert_int_equal(root->nparams, 2);
    assert_int_equal(qv__general_nframes(root), want_frames);
    qv__mem_free_all(&m);
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_LARGE_BINARY, 0, n, e->r, &d, &err), 0);
    int64_t *offs = malloc((size_t)(n + 1) * 8);
    struct qv_decode_out o = {.values = offs};
    assert_int_equal(qv_decoder_decode_range(d, 0, n, &o, &err), 0);
    assert_int_equal(o.data_size, (size_t)off[n]);
    assert_memory_equal(o.data, data, (size_t)off[n]);
    assert_memory_equal(offs, off, (size_t)(n + 1) * 8);
    qv_free(e->r, o.data, o.data_capacity);
    /* Takes: the last value of a frame, the first of the next, the big one. */
    int64_t rows[] = {0, 127, 128, 129, 299, 300, 301, n - 1};
    int64_t k = 0, sel[8];
    for (int i = 0; i < 8; i++)
        if (rows[i] < n && (k == 0 || rows[i] > sel[k - 1])) sel[k++] = rows[i];
    struct qv_decode_out t = {.values = offs};
    assert_int_equal(qv_decoder_take(d, sel, k, &t, &err), 0);
    for (int64_t i = 0; i < k; i++) {
        int64_t r = sel[i];
        assert_int_equal(offs[i + 1] - offs[i], off[r + 1] - off[r]);
        assert_memory_equal(t.data + offs[i], data + off[r], (size_t)(off[r + 1] - off[r]));
    }
    qv_free(e->r, t.data, t.data_capacity);
    free(offs);
    qv_decoder_close(d);
    qv_encoded_release(e->r, &enc);
    free(off);
    free(data);
}

/* 1000 strings of 1 KiB: frames of exactly QV__FRAME_BYTES (128 values),
 * the last one shorter. */
static void test_frames_at_cap(void **state) {
    int64_t per = QV__FRAME_BYTES / 1024;
    check_frames(*state, 1000, len_1k, (1000 + per - 1) / per);
}

/* A single value of three caps: a frame of its own, between frames that
 * end at the cap. Strings 0..299 (~224 B) fill frames of up to the cap. */
static void test_value_bigger_than_cap(void **state) {
    size_t before = 0;
    int64_t frames = 0;
    for (int64_t i = 0; i < 300;) {
        size_t bytes = 0;
        int64_t j = i;
        while (j < 300 && bytes + len_big(j) <= QV__FRAME_BYTES) bytes += len_big(j++);
        frames++;
        i = j;
        before += bytes;
    }
    (void)before;
    check_frames(*state, 400, len_big, frames + 2); /* + the big one + the rest (99 small) */
}

/* A range decode allocates its output once, from the frames' raw sizes:
 * 3000 strings of 1 KiB decoded whole and in part fill the buffer they get
 * but for the frames' offsets and headers (and the partial frames at the
 * ends of a part), where growing by doubling left 37% and 57% unused. */
static void test_range_output_allocated_once(void **state) {
    struct pool_env *e = *state;
    const int64_t n = 3000;
    int64_t *off;
    uint8_t *data;
    strings_of(n, len_1k, &off, &data);
    struct qv_encoded enc = encode_zstd(e, n, off, data);
    struct qv_error err;
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_LARGE_BINARY, 0, n, e->r, &d, &err), 0);
    int64_t *offs = malloc((size_t)(n + 1) * 8);
    const int64_t parts[][2] = {{0, n}, {200, 2600}, {1000, 1}};
    for (int p = 0; p < 3; p++) {
        const int64_t lo = parts[p][0], m = parts[p][1];
        struct qv_decode_out o = {.values = offs};
        assert_int_equal(qv_decoder_decode_range(d, lo, m, &o, &err), 0);
        const size_t bytes = (size_t)(off[lo + m] - off[lo]);
        assert_int_equal(o.data_size, bytes);
        assert_memory_equal(o.data, data + off[lo], bytes);
        for (int64_t i = 0; i <= m; i++) assert_int_equal(offs[i], off[lo + i] - off[lo]);
        /* At most two frames (128 KiB each) more than the part's bytes,
         * plus 2% for the frames' offsets and headers, rounded up to a
         * size class (at most 1/8 more); doubling left 37% and 57%. */
        assert_true(o.data_capacity <= (bytes + bytes / 50 + 2 * QV__FRAME_BYTES) / 8 * 9 + 128);
        if (m > 1000) assert_true(o.data_capacity < bytes + bytes / 5);
        qv_free(e->r, o.data, o.data_capacity);
    }
    free(offs);
    qv_decoder_close(d);
    qv_encoded_release(e->r, &enc);
    free(off);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_frames_at_cap, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_value_bigger_than_cap, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_range_output_allocated_once, pool_env_setup,
                                        pool_env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
