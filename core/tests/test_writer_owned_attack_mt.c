/* qv_writer_write_owned used as a careless or hostile caller would: a
 * byte budget of one byte (every row its own row group) with slices on the
 * worker, an absurd max_in_flight, every call after finish or abort, and a
 * pool limit reached on the worker. Each case must end in a clear error or
 * a correct file, every array released exactly once, and nothing left in
 * the pool. Runs under TSan (label concurrency). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "owned_env.h"
#include "random_batch.h"
#include "test_util.h"
#include "tracked_array.h"

static const struct rb_options RO = {.null_prob = 0.2, .max_list = 4, .max_string = 20};

/* Moves a slice [at, at + len) of a fresh batch of `rows` rows into w. */
static int put(struct owned_env *e, struct qv_writer *w, struct tracker *t, int64_t rows, int64_t at,
               int64_t len, uint64_t seed, struct qv_error *err) {
    struct ArrowArray b, tr;
    assert_int_equal(rb_batch(e->s, rows, seed, &RO, e->r, &b), 0);
    assert_int_equal(tracker_wrap(t, &b, at, len, &tr), 0);
    int rc = qv_writer_write_owned(w, &tr, err);
    assert_null(tr.release);
    return rc;
}

/* Writes the same slices through the given options into `path`. */
static void write_slices(struct owned_env *e, const char *path, const struct qv_writer_options *o,
                         struct tracker *t) {
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e->s, o, e->r, &w, &err), 0);
    static const int64_t shape[][3] = {{50, 0, 50}, {90, 7, 60}, {1, 0, 1}, {0, 0, 0}, {40, 39, 1},
                                       {300, 100, 150}};
    for (int i = 0; i < 6; i++) {
        int rc = put(e, w, t, shape[i][0], shape[i][1], shape[i][2], 500 + (uint64_t)i, &err);
        if (rc) fail_msg("write_owned %d: %s", i, err.message);
    }
    int rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

static void test_one_byte_row_groups_on_worker(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char pa[512], pb[512];
    tu_path(pa, sizeof pa, "attack_tiny_inline.qvr");
    tu_path(pb, sizeof pb, "attack_tiny_worker.qvr");
    struct tracker t;
    tracker_init(&t);
    /* Every row is a row group of its own: the worker gets hundreds of
     * one-row slices of the same arrays, nested offsets nowhere near 0. */
    struct qv_writer_options in = {.row_group_bytes = 1, .max_in_flight = QV_WRITER_INLINE};
    struct qv_writer_options wk = {.row_group_bytes = 1, .max_in_flight = 0};
    write_slices(&e, pa, &in, &t);
    write_slices(&e, pb, &wk, &t);
    assert_int_equal(tracker_live(&t), 0);
    assert_int_equal(atomic_load(&t.double_release), 0);
    for (int i = 0; i < 12; i++) assert_int_equal(tracker_release_count(&t, i), 1);
    owned_assert_same_files(pa, pb);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(pb, NULL, e.r, &rd, &err), 0);
    assert_int_equal(qv_reader_num_rows(rd), 50 + 60 + 1 + 0 + 1 + 150);
    assert_int_equal(qv_reader_num_row_groups(rd), 50 + 60 + 1 + 0 + 1 + 150);
    qv_reader_close(rd);
    unlink(pa);
    unlink(pb);
    owned_env_done(&e);
}

static void test_huge_max_in_flight(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "attack_inflight.qvr");
    struct tracker t;
    tracker_init(&t);
    /* No bound to speak of: nothing may overflow, and finish still waits
     * for every row group and releases every array. */
    struct qv_writer_options o = {.row_group_rows = 10, .max_in_flight = INT_MAX};
    write_slices(&e, path, &o, &t);
    assert_int_equal(tracker_live(&t), 0);
    assert_int_equal(atomic_load(&t.double_release), 0);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e.r, &rd, &err), 0);
    assert_int_equal(qv_reader_num_rows(rd), 262);
    qv_reader_close(rd);
    unlink(path);
    owned_env_done(&e);
}

static void test_calls_after_finish_and_abort(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "attack_after.qvr");
    struct tracker t;
    tracker_init(&t);
    struct qv_error err;
    for (int mode = 0; mode < 2; mode++) {
        unlink(path);
        struct qv_writer *w;
        struct qv_writer_options o = {.row_group_rows = 25};
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        assert_int_equal(put(&e, w, &t, 100, 3, 90, 9, &err), 0);
        int want;
        if (mode == 0) {
            assert_int_equal(qv_writer_finish(w, &err), 0);
            want = EINVAL;
        } else {
            qv_writer_abort(w);
            want = ECANCELED;
        }
        assert_int_equal(tracker_live(&t), 0);
        /* Writes, a second finish, and a second abort: errors (or no-ops),
         * never a crash, and the batch moved in is released. */
        assert_int_equal(put(&e, w, &t, 10, 0, 10, 10, &err), want);
        assert_non_null(strstr(err.message, "attack_after.qvr"));
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(qv_writer_finish(w, &err), want);
        qv_writer_abort(w);
        qv_writer_abort(w);
        assert_int_equal(put(&e, w, &t, 1, 0, 1, 11, &err), want);
        qv_writer_close(w);
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(access(path, F_OK), mode == 0 ? 0 : -1);
    }
    assert_int_equal(atomic_load(&t.double_release), 0);
    unlink(path);
    owned_env_done(&e);
}

static void test_pool_limit_on_worker(void **state) {
    (void)state;
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "attack_limit.qvr");
    struct tracker t;
    tracker_init(&t);
    int failed_after_open = 0;
    /* The arrays come from an unlimited pool; the writer's own memory
     * (builder, encoder scratch, directories) from a limited one, so the
     * limit is reached somewhere between open and the worker's encode. */
    for (uint64_t limit = 4096; limit <= (UINT64_C(1) << 22); limit *= 2) {
        struct qv_pool_options po = {.name = "attack", .limit = limit, .block_size = 4096};
        struct qv_pool *p;
        struct qv_reservation *r;
        assert_int_equal(qv_pool_create(&po, &p, NULL), 0);
        assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
        struct qv_writer *w;
        struct qv_error err;
        struct qv_writer_options o = {.row_group_rows = 300};
        int rc = qv_writer_open(path, e.s, &o, r, &w, &err);
        if (rc == 0) {
            for (int i = 0; i < 8 && rc == 0; i++)
                rc = put(&e, w, &t, 400, 50, 300, 900 + (uint64_t)i, &err);
            if (rc == 0) rc = qv_writer_finish(w, &err);
            if (rc) {
                failed_after_open++;
                assert_int_equal(rc, ENOMEM);
                assert_non_null(strstr(err.message, "attack_limit.qvr"));
            }
            qv_writer_close(w);
        } else {
            assert_int_equal(rc, ENOMEM);
        }
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(qv_reservation_used(r), 0);
        qv_reservation_destroy(r);
        assert_int_equal(qv_pool_used(p), 0);
        qv_pool_destroy(p);
        if (rc) assert_int_equal(access(path, F_OK), -1);
        unlink(path);
    }
    assert_true(failed_after_open > 0);
    assert_int_equal(atomic_load(&t.double_release), 0);
    owned_env_done(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_byte_row_groups_on_worker),
        cmocka_unit_test(test_huge_max_in_flight),
        cmocka_unit_test(test_calls_after_finish_and_abort),
        cmocka_unit_test(test_pool_limit_on_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
