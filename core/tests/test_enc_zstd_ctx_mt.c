/* zstd frames decompress with a context kept per thread (general.c): several
 * threads decoding frames of the same chunk at once each get exact values,
 * by range and by take; a thread's context is freed when the thread exits
 * (the sanitizer build's leak check); a frame zstd refuses fails with a
 * corrupt error and leaves the thread's context good for the next frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pool_env.h"
#include "base/thread.h"
#include "encoding/enc_internal.h"
#include "quiver/encoding.h"

#define N 3000
#define THREADS 4
#define ROUNDS 3

/* N strings of ~200 bytes of a pattern zstd compresses, each distinct. */
struct input {
    int64_t off[N + 1];
    uint8_t *data;
};

static void make_input(struct input *in) {
    size_t total = 0;
    for (int64_t i = 0; i < N; i++) total += 200 + (size_t)(i % 37);
    in->data = malloc(total);
    in->off[0] = 0;
    for (int64_t i = 0; i < N; i++) {
        size_t l = 200 + (size_t)(i % 37);
        for (size_t k = 0; k < l; k++) in->data[in->off[i] + (int64_t)k] = (uint8_t)("abcdefgh"[(k + (size_t)i) % 8]);
        memcpy(in->data + in->off[i], &i, 8);
        in->off[i + 1] = in->off[i] + (int64_t)l;
    }
}

/* The strings as zstd frames (sized frames of the cascade's zstd leaf). */
static void encode(struct pool_env *e, const struct input *in, struct qv_encoded *enc) {
    struct qv_values v = {.kind = QV_KIND_LARGE_BINARY, .count = N, .values = in->off,
                          .data = in->data};
    struct qv_encode_options eo = {.allowed = QV_ENC_BIT(QV_ENC_ZSTD)};
    struct qv_error err;
    assert_int_equal(qv_encode(&v, &eo, e->r, enc, &err), 0);
}

/* Decodes everything and takes rows at frame edges; returns the number of
 * mismatches or failures (no cmocka assertion off the main thread). */
static int decode_check(const struct qv_encoded *enc, const struct input *in,
                        struct qv_reservation *r) {
    int bad = 0;
    struct qv_error err;
    struct qv_decoder *d;
    if (qv_decoder_open(enc->data, enc->size, QV_KIND_LARGE_BINARY, 0, N, r, &d, &err)) return 1;
    int64_t *offs = malloc((size_t)(N + 1) * 8);
    struct qv_decode_out o = {.values = offs};
    if (qv_decoder_decode_range(d, 0, N, &o, &err)) {
        bad++;
    } else {
        bad += o.data_size != (size_t)in->off[N] ||
               memcmp(o.data, in->data, (size_t)in->off[N]) != 0 ||
               memcmp(offs, in->off, (size_t)(N + 1) * 8) != 0;
        qv_free(r, o.data, o.data_capacity);
    }
    /* A fresh decoder: a take reaches frames it has not decompressed. */
    qv_decoder_close(d);
    if (qv_decoder_open(enc->data, enc->size, QV_KIND_LARGE_BINARY, 0, N, r, &d, &err)) {
        free(offs);
        return bad + 1;
    }
    int64_t rows[] = {0, 1, 600, 601, 1500, 2998, 2999};
    const int64_t k = (int64_t)(sizeof rows / sizeof rows[0]);
    struct qv_decode_out t = {.values = offs};
    if (qv_decoder_take(d, rows, k, &t, &err)) {
        bad++;
    } else {
        for (int64_t i = 0; i < k; i++) {
            int64_t rr = rows[i], len = in->off[rr + 1] - in->off[rr];
            bad += offs[i + 1] - offs[i] != len ||
                   memcmp(t.data + offs[i], in->data + in->off[rr], (size_t)len) != 0;
        }
        qv_free(r, t.data, t.data_capacity);
    }
    qv_decoder_close(d);
    free(offs);
    return bad;
}

struct worker {
    const struct qv_encoded *enc;
    const struct input *in;
    struct qv_pool *pool;
    int bad;
};

static void *work(void *p) {
    struct worker *w = p;
    struct qv_reservation *r;
    struct qv_reservation_options ro = {.name = "zstd ctx worker"};
    struct qv_error err;
    if (qv_reservation_create(w->pool, &ro, &r, &err)) {
        w->bad = 1;
        return NULL;
    }
    for (int i = 0; i < ROUNDS; i++) w->bad += decode_check(w->enc, w->in, r);
    qv_reservation_destroy(r);
    return NULL;
}

static void test_threads_decode_frames(void **state) {
    struct pool_env *e = *state;
    struct input *in = malloc(sizeof *in);
    make_input(in);
    struct qv_encoded enc = {0};
    encode(e, in, &enc);
    /* Threads started twice: the second set's threads get contexts of
     * their own again (the first set's were freed as its threads exited). */
    for (int set = 0; set < 2; set++) {
        qv_thread t[THREADS];
        struct worker w[THREADS];
        for (int i = 0; i < THREADS; i++) {
            w[i] = (struct worker){&enc, in, e->pool, 0};
            assert_int_equal(qv_thread_create(&t[i], work, &w[i]), 0);
        }
        for (int i = 0; i < THREADS; i++) qv_thread_join(t[i]);
        for (int i = 0; i < THREADS; i++) assert_int_equal(w[i].bad, 0);
    }
    /* And this thread, alongside. */
    assert_int_equal(decode_check(&enc, in, e->r), 0);
    qv_encoded_release(e->r, &enc);
    free(in->data);
    free(in);
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A frame whose zstd magic is damaged: its rows fail (corrupt), the rows
 * of the frames before and after still decode exactly with the same
 * thread's context, before and after the failure. */
static void test_bad_frame_then_good(void **state) {
    struct pool_env *e = *state;
    struct input *in = malloc(sizeof *in);
    make_input(in);
    struct qv_encoded enc = {0};
    encode(e, in, &enc);
    struct qv__mem m = {.r = e->r};
    struct qv__node *root;
    struct qv_error err;
    assert_int_equal(qv__tree_parse(&m, enc.data, enc.size, 0, 0, 0, &root, &err), 0);
    assert_int_equal(root->enc, QV_ENC_ZSTD);
    assert_int_equal(root->nparams, 2); /* sized frames: (end, size, value end) per frame */
    assert_true(qv__general_nframes(root) >= 3);
    const uint64_t f1_beg = get64(root->buf[0]);      /* frame 0's compressed end */
    const int64_t f1_first = (int64_t)get64(root->buf[0] + 16); /* frame 0's value end */
    const int64_t f2_first = (int64_t)get64(root->buf[0] + 24 + 16);
    const size_t at = (size_t)(root->buf[1] - enc.data) + (size_t)f1_beg;
    qv__mem_free_all(&m);
    assert_int_equal(decode_check(&enc, in, e->r), 0);
    enc.data[at] ^= 0xFF; /* frame 1's zstd magic number */
    struct qv_decoder *d;
    assert_int_equal(qv_decoder_open(enc.data, enc.size, QV_KIND_LARGE_BINARY, 0, N, e->r, &d, &err), 0);
    int64_t offs[3];
    int64_t good[] = {f1_first - 1, f2_first};
    for (int round = 0; round < 2; round++) {
        struct qv_decode_out t = {.values = offs};
        assert_int_equal(qv_decoder_take(d, good, 2, &t, &err), 0);
        for (int i = 0; i < 2; i++) {
            int64_t r = good[i], len = in->off[r + 1] - in->off[r];
            assert_int_equal(offs[i + 1] - offs[i], len);
            assert_memory_equal(t.data + offs[i], in->data + in->off[r], (size_t)len);
        }
        qv_free(e->r, t.data, t.data_capacity);
        int64_t bad[] = {f1_first};
        struct qv_decode_out b = {.values = offs};
        assert_int_equal(qv_decoder_take(d, bad, 1, &b, &err), EIO);
        assert_int_equal(err.kind, QV_ERROR_CORRUPT);
        assert_non_null(strstr(err.message, "frame 1"));
        if (b.data) qv_free(e->r, b.data, b.data_capacity);
    }
    qv_decoder_close(d);
    enc.data[at] ^= 0xFF;
    assert_int_equal(decode_check(&enc, in, e->r), 0);
    qv_encoded_release(e->r, &enc);
    free(in->data);
    free(in);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_threads_decode_frames, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_bad_frame_then_good, pool_env_setup,
                                        pool_env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
