/* The writer's encoding threads (writer_parallel.c): the same bytes for
 * 1, 2, 4 and 8 threads as on the caller (QV_WRITER_INLINE), over random
 * batch sizes, row-group sizes, both input paths (copied and owned) and
 * in-flight bounds; allocation failure at every step of a parallel write
 * (a clean ENOMEM, nothing left under the final name, every byte given
 * back, or the same file when the failure did not hit); the failure first
 * in file order is the one reported, whichever thread failed first; abort
 * while several threads are busy; the option's range. Runs under TSan
 * (label concurrency); every test carries a deadline (alarm). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_testing.h"
#include "memory/memory_testing.h"
#include "batch_io.h"
#include "mem_sink.h"
#include "owned_env.h"
#include "quiver/format.h"
#include "random_batch.h"
#include "test_util.h"
#include "tracked_array.h"

/* The sanitizers run 3x (ASan) to 10x (TSan) slower, on a shared machine:
 * fewer rounds and smaller batches there (every thread count and both
 * input paths still run). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROUNDS 2
#define MAX_BATCH 300
#else
#define ROUNDS 6
#define MAX_BATCH 900
#endif

/* Random batch sizes and one row-group size, drawn from a seed. */
struct plan {
    int n;
    int64_t rows[16];
    int64_t rg_rows;
};

static void plan_make(struct plan *p, uint64_t seed) {
    uint64_t s = seed;
    static const int64_t rg[] = {64, 100, 333, 1000, 4096};
    p->rg_rows = rg[rb_next(&s) % 5];
    p->n = 3 + (int)(rb_next(&s) % 10);
    for (int i = 0; i < p->n; i++) p->rows[i] = 1 + (int64_t)(rb_next(&s) % MAX_BATCH);
}

static void assert_same_bytes(const struct memsink *a, const struct memsink *b) {
    assert_true(a->finished && b->finished);
    assert_int_equal(a->len, b->len);
    assert_memory_equal(a->p, b->p, a->len);
}

/* Writes the plan's batches (seeds from `seed`) into `m`; owned moves
 * tracked copies in, otherwise the batches are copied. */
static int write_plan(struct owned_env *e, struct memsink *m, const struct plan *p, uint64_t seed,
                      const struct qv_writer_options *o, int owned, int force,
                      struct qv_error *err) {
    struct tracker t;
    tracker_init(&t);
    struct qv_writer *w;
    struct qv_sink sink = memsink_open(m, 0);
    int rc = qv_writer_open_sink(&sink, e->s, o, e->r, &w, err);
    if (rc) return rc;
    qv_writer_force_encoding(w, force);
    for (int i = 0; i < p->n && !rc; i++) {
        struct ArrowArray b;
        if (owned) {
            owned_tracked_batch(e, &t, p->rows[i], seed + (uint64_t)i, &b);
            rc = qv_writer_write_owned(w, &b, err);
            assert_null(b.release);
        } else {
            assert_int_equal(rb_batch(e->s, p->rows[i], seed + (uint64_t)i, &OWNED_RO, e->r, &b), 0);
            rc = qv_writer_write(w, &b, err);
            b.release(&b);
        }
    }
    if (!rc) rc = qv_writer_finish(w, err);
    qv_writer_close(w);
    assert_int_equal(tracker_live(&t), 0);
    return rc;
}

static void test_identical_across_threads(void **state) {
    (void)state;
    alarm(600);
    struct owned_env e;
    owned_env_init(&e);
    struct memsink ref = {0}, par = {0};
    for (uint64_t round = 0; round < ROUNDS; round++) {
        struct plan p;
        plan_make(&p, 1000 + round);
        uint64_t seed = 50 + 100 * round;
        struct qv_error err;
        struct qv_writer_options o = {.row_group_rows = p.rg_rows, .max_in_flight = QV_WRITER_INLINE};
        assert_int_equal(write_plan(&e, &ref, &p, seed, &o, 0, QV_ENC_AUTO, &err), 0);
        static const int threads[] = {1, 2, 4, 8};
        for (int ti = 0; ti < 4; ti++) {
            for (int owned = 0; owned < 2; owned++) {
                struct qv_writer_options po = {.row_group_rows = p.rg_rows,
                                               .threads = threads[ti],
                                               .max_in_flight = 1 + (int)((round + (uint64_t)ti) % 3)};
                assert_int_equal(write_plan(&e, &par, &p, seed, &po, owned, QV_ENC_AUTO, &err), 0);
                assert_same_bytes(&ref, &par);
            }
        }
        if (round > 0) continue;
        /* A single row group big enough for the threads at finish. */
        struct plan one = {.n = 2, .rows = {3000, 2500}, .rg_rows = 10000};
        o.row_group_rows = 10000;
        assert_int_equal(write_plan(&e, &ref, &one, seed, &o, 0, QV_ENC_AUTO, &err), 0);
        struct qv_writer_options po = {.row_group_rows = 10000, .threads = 4};
        assert_int_equal(write_plan(&e, &par, &one, seed, &po, 1, QV_ENC_AUTO, &err), 0);
        assert_same_bytes(&ref, &par);
        /* Every integer column paired with an earlier one (encoding 17),
         * references and dependents with nulls: a dependent's task reads
         * its reference's input itself, so the same bytes too. */
        assert_int_equal(write_plan(&e, &ref, &one, seed, &o, 0, QV_ENC_RELATIVE, &err), 0);
        for (int owned = 0; owned < 2; owned++) {
            assert_int_equal(write_plan(&e, &par, &one, seed, &po, owned, QV_ENC_RELATIVE, &err), 0);
            assert_same_bytes(&ref, &par);
        }
    }
    free(ref.p);
    free(par.p);
    owned_env_done(&e);
}

/* ---- lessons: FSST tables row group 0 trained, reused by later ones ---- */

/* id int64, text utf8 (nullable): comment-like text from ten words, then
 * from row group `drift` on hex digits the words never use (a lesson that
 * no longer pays: those row groups train their own), and every 13th row
 * null. */
static const struct qv_field lesson_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "text", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field lesson_root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                            .children = (struct qv_field *)lesson_cols};

static void lesson_batch(const struct qv_schema *s, int64_t n, int64_t rg_rows, int64_t drift,
                         struct qv_reservation *r, struct ArrowArray *out) {
    static const char *w[] = {"carefully ", "final ", "requests ", "sleep ", "the ", "ironic ",
                              "deposits ", "haggle ", "quickly ", "furiously "};
    struct qv_builder *b;
    struct qv_error err;
    assert_int_equal(qv_builder_create(s, r, NULL, &b, &err), 0);
    uint64_t rng = 7;
    char buf[128];
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), i), 0);
        size_t len = 10 + rb_next(&rng) % 60, l = 0;
        if (i / rg_rows >= drift) {
            for (; l < len; l++) buf[l] = "0123456789ABCDEF#%"[rb_next(&rng) % 18];
        } else {
            while (l < len) {
                const char *x = w[rb_next(&rng) % 10];
                size_t xl = strlen(x) < len - l ? strlen(x) : len - l;
                memcpy(buf + l, x, xl);
                l += xl;
            }
        }
        struct qv_appender *t = qv_builder_column(b, 1);
        assert_int_equal(i % 13 == 5 ? qv_append_null(t) : qv_append_string(t, buf, len), 0);
    }
    assert_int_equal(qv_builder_finish(b, out, &err), 0);
    qv_builder_destroy(b);
}

static int lesson_write(struct qv_sink *sink, const struct qv_schema *s, const struct ArrowArray *batch,
                        const struct qv_writer_options *o, int (*hook)(void *, int64_t, int32_t), void *ctx,
                        struct qv_reservation *r, struct qv_error *err) {
    struct qv_writer *w;
    int rc = qv_writer_open_sink(sink, s, o, r, &w, err);
    if (rc) return rc;
    if (hook) qv_writer_set_encode_hook(w, hook, ctx);
    /* In pieces, so that row groups are sealed while others are encoded. */
    const int64_t cuts[] = {1000, 5000, 9000, 17000};
    rc = bio_write_pieces(w, batch, cuts, 4, err);
    if (!rc) rc = qv_writer_finish(w, err);
    qv_writer_close(w);
    return rc;
}

static int fail_text_rg0(void *ctx, int64_t rg, int32_t column) {
    (void)ctx;
    return rg == 0 && column == 1 ? EIO : 0;
}

static void test_lessons(void **state) {
    (void)state;
    alarm(300);
    struct owned_env e;
    owned_env_init(&e);
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&lesson_root, e.r, &s, NULL), 0);
    const int64_t rg_rows = 3000, n = 8 * 3000 - 700;
    struct ArrowArray batch;
    lesson_batch(s, n, rg_rows, 5, e.r, &batch);
    struct qv_error err;
    /* Inline, then threads: the same bytes (a later row group's text waits
     * for row group 0's lesson, whichever thread has it). */
    struct memsink ref = {0}, par = {0};
    struct qv_writer_options o = {.row_group_rows = rg_rows, .max_in_flight = QV_WRITER_INLINE};
    struct qv_sink sink = memsink_open(&ref, 0);
    assert_int_equal(lesson_write(&sink, s, &batch, &o, NULL, NULL, e.r, &err), 0);
    static const int threads[] = {1, 2, 4};
    for (int ti = 0; ti < 3; ti++) {
        struct qv_writer_options po = {.row_group_rows = rg_rows, .threads = threads[ti],
                                       .max_in_flight = 1 + ti};
        sink = memsink_open(&par, 0);
        assert_int_equal(lesson_write(&sink, s, &batch, &po, NULL, NULL, e.r, &err), 0);
        assert_same_bytes(&ref, &par);
    }
    /* Every row back, whole row groups and the drifted ones too. */
    char path[512];
    tu_path(path, sizeof path, "par_mt_lessons.qvr");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(ref.p, 1, ref.len, f), ref.len);
    fclose(f);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, e.r, &rd, &err), 0);
    assert_int_equal(qv_reader_num_row_groups(rd), 8);
    bio_check_row_groups(rd, s, &batch, e.r, 1);
    qv_reader_close(rd);
    unlink(path);
    /* Row group 0's text fails: the row groups waiting for its lesson do
     * not wait forever, and the failure is the one reported. */
    for (int ti = 0; ti < 3; ti++) {
        struct qv_writer_options po = {.row_group_rows = rg_rows, .threads = threads[ti]};
        sink = memsink_open(&par, 0);
        assert_int_equal(lesson_write(&sink, s, &batch, &po, fail_text_rg0, NULL, e.r, &err), EIO);
        assert_non_null(strstr(err.message, "row group 0, column 'text'"));
    }
    batch.release(&batch);
    qv_schema_destroy(s);
    free(ref.p);
    free(par.p);
    owned_env_done(&e);
}

/* Allocation failure at every step: the writer's reservation lives in a
 * pool of its own, so the injector counts the writer's allocations only
 * (the batches are made before, from the environment's pool). */
static void run_alloc_failures(int threads, int owned, int force) {
    struct owned_env e;
    owned_env_init(&e);
    struct memsink ref = {0}, out = {0};
    const struct plan p = {.n = 3, .rows = {200, 70, 130}, .rg_rows = 200};
    const uint64_t seed = 9;
    struct qv_error err;
    struct qv_writer_options ro = {.row_group_rows = p.rg_rows, .max_in_flight = QV_WRITER_INLINE};
    assert_int_equal(write_plan(&e, &ref, &p, seed, &ro, 0, force, &err), 0);
    struct qv_writer_options o = {.row_group_rows = p.rg_rows, .threads = threads};
    /* Every step in plain builds; the sanitizers run 3x (ASan) to 10x
     * (TSan) slower, so they take every 3rd / 7th step (still a few
     * hundred failures across the encoder, the threads and the committer). */
#if defined(__SANITIZE_THREAD__)
    const uint64_t stride = 7;
#elif defined(__SANITIZE_ADDRESS__)
    const uint64_t stride = 3;
#else
    const uint64_t stride = 1;
#endif
    int succeeded = 0;
    uint64_t failures = 0;
    for (uint64_t nth = 1; nth < 200000 && !succeeded; nth += stride) {
        struct qv_pool *wp;
        struct qv_reservation *wr;
        assert_int_equal(qv_pool_create(NULL, &wp, NULL), 0);
        assert_int_equal(qv_reservation_create(wp, NULL, &wr, NULL), 0);
        struct tracker t;
        tracker_init(&t);
        struct ArrowArray b[3];
        for (int i = 0; i < p.n; i++) {
            if (owned) owned_tracked_batch(&e, &t, p.rows[i], seed + (uint64_t)i, &b[i]);
            else
                assert_int_equal(rb_batch(e.s, p.rows[i], seed + (uint64_t)i, &OWNED_RO, e.r, &b[i]), 0);
        }
        uint64_t before = qv_pool_alloc_count(wp);
        qv_pool_inject_alloc_failure(wp, nth);
        struct qv_writer *w = NULL;
        struct qv_sink sink = memsink_open(&out, 0);
        int rc = qv_writer_open_sink(&sink, e.s, &o, wr, &w, &err);
        if (!rc) qv_writer_force_encoding(w, force);
        for (int i = 0; i < p.n; i++) {
            if (!rc) rc = owned ? qv_writer_write_owned(w, &b[i], &err) : qv_writer_write(w, &b[i], &err);
            if (b[i].release) b[i].release(&b[i]);
        }
        if (!rc) rc = qv_writer_finish(w, &err);
        qv_writer_close(w);
        uint64_t made = qv_pool_alloc_count(wp) - before;
        qv_pool_inject_alloc_failure(wp, 0);
        if (rc) {
            assert_int_equal(rc, ENOMEM);
            assert_true(err.message[0] != 0);
            assert_false(out.finished); /* nothing published */
            assert_true(out.aborted);
            failures++;
        } else {
            /* A failure the writer survived would have to leave the same
             * file; the loop ends once a write made fewer allocations than
             * nth (the injection did not hit). */
            assert_same_bytes(&ref, &out);
            if (made < nth) succeeded = 1;
        }
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(qv_reservation_used(wr), 0);
        qv_reservation_destroy(wr);
        assert_int_equal(qv_pool_used(wp), 0);
        qv_pool_destroy(wp);
    }
    assert_true(succeeded);
    assert_true(failures > 10);
    free(ref.p);
    free(out.p);
    owned_env_done(&e);
}

static void test_alloc_failure_every_step(void **state) {
    (void)state;
    alarm(1200);
    run_alloc_failures(2, 0, QV_ENC_AUTO);
    run_alloc_failures(4, 1, QV_ENC_AUTO);
}

/* The same with every integer column stored relative to an earlier one:
 * failures in the pair plan (caller's thread, at seal) and in a dependent
 * task's reading of its reference. */
static void test_alloc_failure_relative(void **state) {
    (void)state;
    alarm(1200);
    run_alloc_failures(2, 1, QV_ENC_RELATIVE);
}

/* Fails column 7 of row group 1 at once and column 2 of the same row group
 * later in time: the error names column 2, the first in file order. */
struct two_failures {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int late_failed; /* column 7 failed */
};

static int fail_two(void *ctx, int64_t rg, int32_t column) {
    struct two_failures *f = ctx;
    if (rg != 1) return 0;
    if (column == 7) {
        pthread_mutex_lock(&f->mu);
        f->late_failed = 1;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        return EIO;
    }
    if (column == 2) {
        /* Waits (at most 2 s) until column 7 failed when that column runs
         * on another thread at all; it may as well have been skipped. */
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 2;
        pthread_mutex_lock(&f->mu);
        while (!f->late_failed)
            if (pthread_cond_timedwait(&f->cv, &f->mu, &dl) == ETIMEDOUT) break;
        pthread_mutex_unlock(&f->mu);
        return ENOSPC;
    }
    return 0;
}

static void test_first_failure_in_file_order(void **state) {
    (void)state;
    alarm(300);
    struct owned_env e;
    owned_env_init(&e);
    assert_true(e.s->root.n_children > 7);
    char path[512];
    tu_path(path, sizeof path, "par_mt_fail.qvr");
    for (int threads = 1; threads <= 4; threads *= 2) {
        struct two_failures f = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
        struct qv_writer_options o = {.row_group_rows = 100, .threads = threads};
        struct qv_writer *w;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        qv_writer_set_encode_hook(w, fail_two, &f);
        int rc = 0;
        for (int i = 0; i < 5 && !rc; i++) {
            struct ArrowArray b;
            assert_int_equal(rb_batch(e.s, 100, 300 + (uint64_t)i, &OWNED_RO, e.r, &b), 0);
            rc = qv_writer_write(w, &b, &err);
            b.release(&b);
        }
        if (!rc) rc = qv_writer_finish(w, &err);
        assert_int_equal(rc, ENOSPC);
        char want[300];
        snprintf(want, sizeof want, "row group 1, column '%s'", e.s->root.children[2].name);
        assert_non_null(strstr(err.message, want));
        qv_writer_close(w);
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
    }
    owned_env_done(&e);
}

/* Holds every thread that reaches row group 0 until the writer is asked to
 * stop (polling, 20 s at most). */
static int hold_until_cancel(void *ctx, int64_t rg, int32_t column) {
    (void)column;
    struct qv_writer **wp = ctx;
    if (rg != 0) return 0;
    for (int i = 0; i < 20000; i++) {
        if (qv_writer_cancel_requested(*wp)) return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return ETIMEDOUT;
}

static void test_abort_with_busy_threads(void **state) {
    (void)state;
    alarm(300);
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "par_mt_abort.qvr");
    unlink(path);
    for (int use_close = 0; use_close < 2; use_close++) {
        struct tracker t;
        tracker_init(&t);
        struct qv_writer_options o = {.row_group_rows = 100, .threads = 4, .max_in_flight = 3};
        struct qv_writer *w;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), 0);
        qv_writer_set_encode_hook(w, hold_until_cancel, &w);
        for (int i = 0; i < 3; i++) {
            struct ArrowArray b;
            owned_tracked_batch(&e, &t, 100, 700 + (uint64_t)i, &b);
            assert_int_equal(qv_writer_write_owned(w, &b, &err), 0);
        }
        /* Row group 0 cannot be written: nothing was released. */
        assert_int_equal(tracker_live(&t), 3);
        if (use_close) {
            qv_writer_close(w);
        } else {
            qv_writer_abort(w);
            assert_int_equal(tracker_live(&t), 0);
            assert_int_equal(qv_writer_finish(w, &err), ECANCELED);
            qv_writer_close(w);
        }
        assert_int_equal(tracker_live(&t), 0);
        assert_int_equal(atomic_load(&t.foreign_release), 0);
        assert_int_equal(atomic_load(&t.double_release), 0);
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
    }
    owned_env_done(&e);
}

static void test_threads_option(void **state) {
    (void)state;
    alarm(60);
    struct owned_env e;
    owned_env_init(&e);
    char path[512];
    tu_path(path, sizeof path, "par_mt_opt.qvr");
    unlink(path);
    static const int bad[] = {-1, -2, QV_WRITER_MAX_THREADS + 1};
    for (int i = 0; i < 3; i++) {
        struct qv_writer_options o = {.threads = bad[i]};
        struct qv_writer *w = NULL;
        struct qv_error err;
        assert_int_equal(qv_writer_open(path, e.s, &o, e.r, &w, &err), EINVAL);
        assert_null(w);
        assert_non_null(strstr(err.message, "threads"));
        struct stat st;
        assert_int_not_equal(stat(path, &st), 0);
    }
    owned_env_done(&e);
}

static void no_release(struct ArrowArray *a) { a->release = NULL; }

/* A schema of no columns: a row group has no column task whose end would
 * commit it, and its rows must not be lost (rows are all such a file
 * holds), however many threads and row groups. */
static void test_no_columns(void **state) {
    (void)state;
    alarm(120);
    struct owned_env e;
    owned_env_init(&e);
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT};
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, e.r, &s, &err), 0);
    static const int threads[] = {QV_WRITER_INLINE, 1, 2, 4};
    for (int i = 0; i < 4; i++) {
        char path[512];
        tu_path(path, sizeof path, "par_mt_nocols.qvr");
        struct qv_writer_options o = {.row_group_rows = 3,
                                      .threads = threads[i] == QV_WRITER_INLINE ? 0 : threads[i],
                                      .max_in_flight = threads[i] == QV_WRITER_INLINE ? QV_WRITER_INLINE
                                                                                      : 0};
        struct qv_writer *w;
        assert_int_equal(qv_writer_open(path, s, &o, e.r, &w, &err), 0);
        for (int b = 0; b < 3; b++) {
            struct ArrowArray batch = {.length = 4, .n_buffers = 1};
            static const void *none[1] = {NULL};
            batch.buffers = none;
            batch.release = no_release;
            if (qv_writer_write(w, &batch, &err)) fail_msg("write: %s", err.message);
        }
        if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
        qv_writer_close(w);
        struct qv_reader *rd;
        assert_int_equal(qv_reader_open(path, NULL, e.r, &rd, &err), 0);
        assert_int_equal(qv_reader_num_rows(rd), 12);
        assert_int_equal(qv_reader_num_row_groups(rd), 4);
        qv_reader_close(rd);
        unlink(path);
    }
    qv_schema_destroy(s);
    owned_env_done(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_columns),
        cmocka_unit_test(test_threads_option),
        cmocka_unit_test(test_identical_across_threads),
        cmocka_unit_test(test_lessons),
        cmocka_unit_test(test_first_failure_in_file_order),
        cmocka_unit_test(test_abort_with_busy_threads),
        cmocka_unit_test(test_alloc_failure_every_step),
        cmocka_unit_test(test_alloc_failure_relative),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
