/* Takes from several threads on one file object while the take cache lends
 * the bytes its free readers hold (take_cache.c, qv__take_cache_lend) and
 * small dense chunks are read whole (column_reader.c, take_mode): a column
 * "v" and a column "w" stored relative to it (w's reference is what is
 * lent), sparse and dense row sets, every column subset, take caches of the
 * default size, tiny, 1 byte, negative (none), and pools so tight that
 * readers fail to allocate in the middle of a take. Then takes while
 * another thread rewrites the file in place with other values, and while it
 * truncates it. Every take is exact, or fails with EIO naming where (the
 * rewrite and the truncation) or ENOMEM (the tight pools): never other
 * values. Runs under ThreadSanitizer (the _mt suffix). */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pool_env.h"
#include "format/format_testing.h"
#include "quiver/file.h"
#include "quiver/format.h"
#include "test_util.h"

#define ROWS 98304
#define RG 24576 /* 4 row groups; ~120 KiB per chunk of v at 40 bits */
#define THREADS 4
#define WIDTH 40

static uint64_t value_of(int64_t i, uint64_t salt) {
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15u;
    x ^= x >> 29;
    x ^= salt;
    return i == 0 ? (UINT64_C(1) << WIDTH) - 1 : x & ((UINT64_C(1) << WIDTH) - 1);
}

/* v: the values; w: v + (i % 3), stored relative to v (forced). */
static void write_file(struct pool_env *e, const char *path, uint64_t salt) {
    static const struct qv_field cols[] = {
        {.name = "v", .type = QV_TYPE_INT64, .nullable = false},
        {.name = "w", .type = QV_TYPE_INT64, .nullable = false},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                         .children = cols};
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, e->r, &s, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, e->r, NULL, &b, &err), 0);
    for (int64_t i = 0; i < ROWS; i++) {
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), (int64_t)value_of(i, salt)), 0);
        assert_int_equal(qv_append_int64(qv_builder_column(b, 1), (int64_t)value_of(i, salt) + i % 3), 0);
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG};
    assert_int_equal(qv_writer_open(path, s, &o, e->r, &w, &err), 0);
    qv_writer_force_encoding(w, QV_ENC_RELATIVE);
    assert_int_equal(qv_writer_write(w, &batch, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(s);
}

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* A row set: sparse (1-4 rows anywhere: chunks read by blocks) or dense
 * (60-250 rows in one or two row groups: chunks read whole), unsorted, with
 * duplicates now and then. */
static int64_t make_rows(int64_t *rows, uint64_t *s) {
    int64_t n;
    if (rng(s) & 1) {
        n = 1 + (int64_t)(rng(s) % 4);
        for (int64_t i = 0; i < n; i++) rows[i] = (int64_t)(rng(s) % ROWS);
    } else {
        n = 60 + (int64_t)(rng(s) % 191);
        int64_t g = (int64_t)(rng(s) % (ROWS / RG)), g2 = (int64_t)(rng(s) % (ROWS / RG));
        for (int64_t i = 0; i < n; i++)
            rows[i] = (i & 1 ? g : g2) * RG + (int64_t)(rng(s) % RG);
    }
    if (n > 2 && rng(s) % 4 == 0) rows[n - 1] = rows[0];
    return n;
}

struct outcome {
    int ok, eio, enomem;
    char other[1200]; /* the first unexpected failure */
};

/* One take of the columns `cols` (a subset of v, w in some order). Values
 * are checked against `salt`: a take that returns rows returns exactly
 * them. */
static void one_take(struct qv_file *f, const int64_t *rows, int64_t n, int which, uint64_t salt,
                     struct outcome *out) {
    static const char *const sets[4][2] = {{"v", "w"}, {"w", "v"}, {"w", NULL}, {"v", NULL}};
    const int ncols = which < 2 ? 2 : 1;
    struct qv_file_scan_options o = {.columns = sets[which], .n_columns = ncols};
    struct qv_error err = {0};
    struct ArrowArrayStream st;
    int rc = qv_file_take(f, rows, n, &o, &st, &err);
    char msg[1100] = "";
    if (rc) {
        snprintf(msg, sizeof msg, "%s", err.message);
    } else {
        int64_t got = 0;
        for (;;) {
            struct ArrowArray b;
            rc = st.get_next(&st, &b);
            if (rc) {
                const char *m = st.get_last_error(&st);
                snprintf(msg, sizeof msg, "%s", m ? m : "");
                break;
            }
            if (!b.release) break;
            for (int c = 0; c < ncols; c++) {
                const int is_w = sets[which][c][0] == 'w';
                const struct ArrowArray *a = b.children[c];
                const int64_t *v = (const int64_t *)a->buffers[1];
                for (int64_t i = 0; i < b.length; i++) {
                    int64_t r = rows[got + i];
                    uint64_t want = value_of(r, salt) + (is_w ? (uint64_t)(r % 3) : 0);
                    /* Recorded, not failed here: cmocka fails on the main thread. */
                    if ((uint64_t)v[a->offset + i] != want && !out->other[0])
                        snprintf(out->other, sizeof out->other,
                                 "WRONG DATA: column %s row %lld: %llu, want %llu",
                                 sets[which][c], (long long)r,
                                 (unsigned long long)v[a->offset + i], (unsigned long long)want);
                }
            }
            got += b.length;
            b.release(&b);
        }
        st.release(&st);
        if (!rc && got != n && !out->other[0])
            snprintf(out->other, sizeof out->other, "take returned %lld rows of %lld",
                     (long long)got, (long long)n);
    }
    if (!rc) out->ok++;
    else if (rc == EIO && strstr(msg, "row group") && strstr(msg, "column")) out->eio++;
    else if (rc == ENOMEM) out->enomem++;
    else if (!out->other[0]) snprintf(out->other, sizeof out->other, "rc %d: %s", rc, msg);
}

struct worker {
    pthread_t t;
    struct qv_file *f;
    uint64_t seed, salt;
    int takes;
    struct outcome out;
};

static void *work(void *arg) {
    struct worker *w = arg;
    uint64_t s = w->seed;
    int64_t rows[256];
    for (int k = 0; k < w->takes; k++) {
        int64_t n = make_rows(rows, &s);
        one_take(w->f, rows, n, (int)(rng(&s) % 4), w->salt, &w->out);
    }
    return NULL;
}

static void run_threads(struct qv_file *f, int takes, uint64_t seed, struct outcome *sum) {
    struct worker w[THREADS];
    memset(w, 0, sizeof w);
    memset(sum, 0, sizeof *sum);
    for (int i = 0; i < THREADS; i++) {
        w[i].f = f;
        w[i].seed = seed * 1000 + (uint64_t)i;
        w[i].takes = takes;
        assert_int_equal(pthread_create(&w[i].t, NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(w[i].t, NULL);
        sum->ok += w[i].out.ok;
        sum->eio += w[i].out.eio;
        sum->enomem += w[i].out.enomem;
        if (!sum->other[0] && w[i].out.other[0]) memcpy(sum->other, w[i].out.other, sizeof sum->other);
    }
}

static void test_concurrent_takes_every_cache(void **state) {
    struct pool_env *e = *state;
    alarm(600);
    char path[512];
    tu_path(path, sizeof path, "take_lend_mt.qvr");
    write_file(e, path, 0);
    static const int64_t caches[] = {0, 200000, 1, -1};
    for (size_t ci = 0; ci < sizeof caches / sizeof caches[0]; ci++) {
        struct qv_file_options fo = {.take_cache_bytes = caches[ci]};
        struct qv_file *f;
        struct qv_error err;
        assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
        struct outcome o;
        run_threads(f, 40, ci + 1, &o);
        if (o.other[0] || o.eio || o.enomem)
            fail_msg("cache %lld: %d failed with EIO, %d ENOMEM; %s", (long long)caches[ci], o.eio,
                     o.enomem, o.other);
        assert_int_equal(o.ok, THREADS * 40);
        qv_file_close(f);
    }
    remove(path);
}

/* Pools from a few KiB to what a take needs: takes fail with ENOMEM or
 * succeed exactly, and the file still takes exactly afterwards once
 * memory is given back (readers that failed mid-take were not kept). */
static void test_tight_pools(void **state) {
    struct pool_env *e = *state;
    alarm(600);
    char path[512];
    tu_path(path, sizeof path, "take_lend_tight_mt.qvr");
    write_file(e, path, 0);
    static const uint64_t limits[] = {16384, 200000, 400000, 700000, 1200000};
    int saw_enomem = 0, saw_ok = 0;
    for (size_t li = 0; li < sizeof limits / sizeof limits[0]; li++) {
        struct qv_file_options fo = {.memory_limit = limits[li]};
        struct qv_file *f;
        struct qv_error err;
        int rc = qv_file_open(path, &fo, &f, &err);
        if (rc) {
            assert_int_equal(rc, ENOMEM);
            saw_enomem++;
            continue;
        }
        struct outcome o;
        run_threads(f, 60, 100 + li, &o);
        if (o.other[0] || o.eio) fail_msg("limit %llu: %d EIO; %s", (unsigned long long)limits[li], o.eio, o.other);
        print_message("limit %llu: %d exact, %d ENOMEM\n", (unsigned long long)limits[li], o.ok,
                      o.enomem);
        saw_enomem += o.enomem;
        saw_ok += o.ok;
        /* One thread alone, small takes: the cache gave its readers back. */
        uint64_t s = 7;
        int64_t rows[256];
        struct outcome one = {0};
        for (int k = 0; k < 10; k++) {
            int64_t n = 1 + (int64_t)(rng(&s) % 3);
            for (int64_t i = 0; i < n; i++) rows[i] = (int64_t)(rng(&s) % ROWS);
            one_take(f, rows, n, k % 4, 0, &one);
        }
        if (one.other[0] || one.eio) fail_msg("limit %llu after: %s", (unsigned long long)limits[li], one.other);
        qv_file_close(f);
    }
    /* The limits cover both outcomes. */
    assert_true(saw_enomem > 0);
    assert_true(saw_ok > 0);
    remove(path);
}

struct vandal {
    pthread_t t;
    const char *path, *other;
    int truncate_it;
    atomic_int stop;
};

/* Overwrites the file in place with the bytes of `other` (same schema,
 * other values), or truncates it to a third, and back, over and over. */
static void *vandalize(void *arg) {
    struct vandal *v = arg;
    size_t a_size = 0, b_size = 0;
    unsigned char *a = tu_read_file(v->path, &a_size);
    unsigned char *b = tu_read_file(v->other, &b_size);
    for (int k = 0; !atomic_load(&v->stop) && k < 400; k++) {
        FILE *f = fopen(v->path, "r+b");
        if (!f) break;
        if (v->truncate_it) {
            fclose(f);
            if (truncate(v->path, (off_t)(a_size / 3 * (1 + k % 2)))) break;
            f = fopen(v->path, "r+b");
            if (!f) break;
            fwrite(a, 1, a_size, f);
        } else {
            fwrite(k % 2 ? a : b, 1, k % 2 ? a_size : b_size, f);
        }
        fclose(f);
        usleep(500);
    }
    free(a);
    free(b);
    return NULL;
}

static void takes_under_vandal(struct pool_env *e, int truncate_it) {
    alarm(600);
    char path[512], other[512];
    tu_path(path, sizeof path, truncate_it ? "take_lend_trunc_mt.qvr" : "take_lend_rewrite_mt.qvr");
    tu_path(other, sizeof other, truncate_it ? "take_lend_trunc2_mt.qvr" : "take_lend_rewrite2_mt.qvr");
    write_file(e, path, 0);
    write_file(e, other, 0x5A5A5A5A5Aull);
    struct qv_file_options fo = {0};
    struct qv_file *f;
    struct qv_error err;
    assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
    /* Warm the cache: free readers hold blocks to lend. */
    struct outcome o;
    run_threads(f, 8, 300, &o);
    assert_int_equal(o.ok, THREADS * 8);
    struct vandal v = {.path = path, .other = other, .truncate_it = truncate_it};
    assert_int_equal(pthread_create(&v.t, NULL, vandalize, &v), 0);
    run_threads(f, 60, 400 + (uint64_t)truncate_it, &o);
    atomic_store(&v.stop, 1);
    pthread_join(v.t, NULL);
    print_message("%s: %d exact, %d EIO\n", truncate_it ? "truncated" : "rewritten", o.ok, o.eio);
    if (o.other[0] || o.enomem) fail_msg("%d ENOMEM; %s", o.enomem, o.other);
    assert_int_equal(o.ok + o.eio, THREADS * 60);
    qv_file_close(f);
    remove(path);
    remove(other);
}

static void test_takes_while_rewritten(void **state) { takes_under_vandal(*state, 0); }
static void test_takes_while_truncated(void **state) { takes_under_vandal(*state, 1); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_concurrent_takes_every_cache, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_tight_pools, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_takes_while_rewritten, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_takes_while_truncated, pool_env_setup,
                                        pool_env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
