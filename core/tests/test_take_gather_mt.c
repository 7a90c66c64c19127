/* Takes gathered straight into their output batch (file/take_gather.c):
 * every flat type, with nulls, against the batch the file was written
 * from; row groups of 700 rows (not vector multiples) and 1024; default
 * and compact files and files with each encoding forced on the values;
 * rows sorted, in any order with duplicates, at row-group boundaries, in
 * one row group; output batches cut small; with and without the take
 * cache, mapped; repeated (warm) takes; a corrupt block; every allocation
 * failing in turn; pool limits under which a take with a helper must fit
 * wherever it fits alone. Each on the caller's thread alone (QV_SCAN_SYNC) and
 * with two threads, where a cold take of enough values starts a helper
 * that takes columns beside the caller (checked: helpers were started);
 * so this runs under ThreadSanitizer too ("_mt"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/quiver.h"
#include "file/file_internal.h"
#include "format/format_testing.h"
#include "format/reader_internal.h"
#include "memory/memory_testing.h"
#include "random_batch.h"
#include "test_util.h"

#define ROWS 5000

/* The all-types schema's columns without children (a take of them is
 * gathered), and their index in the schema. */
static const char *const FLAT[] = {"b",   "i8",  "i16", "i32", "i64", "u8",  "u16",
                                   "u32", "u64", "f16", "f32", "f64", "d9",  "d38",
                                   "day", "ts",  "tsn", "s",   "ls",  "bin", "lbin", "fb"};
#define N_FLAT ((int)(sizeof FLAT / sizeof FLAT[0]))

struct env {
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_schema *schema;
    struct ArrowArray batch; /* what the files hold */
    int flat_index[N_FLAT];
};

static int setup(void **state) {
    alarm(600); /* a hang fails the test */
    struct env *e = calloc(1, sizeof *e);
    assert_int_equal(qv_pool_create(NULL, &e->pool, NULL), 0);
    assert_int_equal(qv_reservation_create(e->pool, NULL, &e->r, NULL), 0);
    assert_int_equal(rb_all_types_schema(e->r, &e->schema), 0);
    struct rb_options o = {.null_prob = 0.2, .max_list = 2, .max_string = 30};
    assert_int_equal(rb_batch(e->schema, ROWS, 14, &o, e->r, &e->batch), 0);
    for (int j = 0; j < N_FLAT; j++) {
        e->flat_index[j] = -1;
        for (int64_t c = 0; c < e->schema->root.n_children; c++)
            if (!strcmp(e->schema->root.children[c].name, FLAT[j])) e->flat_index[j] = (int)c;
        assert_true(e->flat_index[j] >= 0);
    }
    *state = e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    e->batch.release(&e->batch);
    qv_schema_destroy(e->schema);
    qv_reservation_destroy(e->r);
    qv_pool_destroy(e->pool);
    free(e);
    return 0;
}

static void write_file(struct env *e, const char *path, int64_t rg_rows, int compact, int force) {
    struct qv_writer *w;
    struct qv_error err = {0};
    struct qv_writer_options o = {.row_group_rows = rg_rows, .compact = compact};
    if (qv_writer_open(path, e->schema, &o, e->r, &w, &err)) fail_msg("open: %s", err.message);
    qv_writer_force_encoding(w, force);
    if (qv_writer_write(w, &e->batch, &err)) fail_msg("write: %s", err.message);
    if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

/* Takes rows[0..n) of the flat columns and compares each output row with
 * the written batch's. Returns rows handed out. */
static int threads = QV_SCAN_SYNC; /* of every take below */

static int64_t check_take(struct env *e, struct qv_file *f, const int64_t *rows, int64_t n,
                          int64_t batch_rows) {
    struct qv_file_scan_options o = {.columns = FLAT, .n_columns = N_FLAT,
                                     .scan = {.batch_rows = batch_rows, .threads = threads,
                                              .validate = QV_SCAN_VALIDATE_FULL}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_file_take(f, rows, n, &o, &st, &err)) fail_msg("take: %s", err.message);
    int64_t pos = 0, batches = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st.get_next(&st, &b);
        if (rc) fail_msg("get_next: %d %s", rc, st.get_last_error(&st));
        if (!b.release) break;
        batches++;
        assert_int_equal(b.n_children, N_FLAT);
        if (batch_rows) assert_true(b.length <= batch_rows);
        for (int j = 0; j < N_FLAT; j++) {
            const struct qv_field *fd = &e->schema->root.children[e->flat_index[j]];
            assert_int_equal(b.children[j]->length, b.length);
            for (int64_t i = 0; i < b.length; i++) {
                struct ArrowArray want = *e->batch.children[e->flat_index[j]];
                want.offset += rows[pos + i];
                want.length = 1; /* borrowed views: never released */
                struct ArrowArray got = *b.children[j];
                got.offset += i;
                got.length = 1;
                char why[256] = "";
                if (!qv_arrow_array_equal(fd, &want, &got, why, sizeof why))
                    fail_msg("column %s, output row %lld (row %lld): %s", FLAT[j],
                             (long long)(pos + i), (long long)rows[pos + i], why);
            }
        }
        pos += b.length;
        b.release(&b);
    }
    st.release(&st);
    assert_int_equal(pos, n);
    /* Up to batch_rows rows come as one batch, whatever row groups they touch. */
    if (n && n <= (batch_rows ? batch_rows : 65536)) assert_int_equal(batches, 1);
    return pos;
}

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Every kind of row set on one open file, twice (the second time the
 * readers come from the take cache). */
static void check_file(struct env *e, const char *path, int64_t rg_rows,
                       const struct qv_file_options *fo) {
    struct qv_file *f;
    struct qv_error err = {0};
    if (qv_file_open(path, fo, &f, &err)) fail_msg("open: %s", err.message);
    uint64_t seed = 99;
    int64_t any[300], sorted[300];
    for (int i = 0; i < 300; i++) any[i] = (int64_t)(lcg(&seed) % ROWS);
    any[7] = any[8] = any[299] = 0; /* duplicates, side by side and apart */
    memcpy(sorted, any, sizeof sorted);
    qsort(sorted, 300, sizeof *sorted, cmp64);
    int64_t k = 0;
    for (int i = 0; i < 300; i++)
        if (!k || sorted[i] != sorted[k - 1]) sorted[k++] = sorted[i];
    /* The first and last row of every row group, and their neighbours. */
    int64_t edges[64], ne = 0;
    for (int64_t s = 0; s < ROWS && ne + 4 <= 64; s += rg_rows) {
        if (s) edges[ne++] = s - 1;
        edges[ne++] = s;
        if (s + 1 < ROWS) edges[ne++] = s + 1;
    }
    edges[ne++] = ROWS - 1;
    static const int64_t one_group[] = {3, 4, 5, 200, 600};
    static const int64_t reversed[] = {ROWS - 1, 2100, 2099, 1024, 1023, 700, 699, 1, 0};
    for (int round = 0; round < 2; round++) {
        check_take(e, f, sorted, k, 0);
        check_take(e, f, any, 300, 0);
        check_take(e, f, any, 300, 7); /* many output batches */
        check_take(e, f, sorted, k, 16);
        check_take(e, f, edges, ne, 0);
        check_take(e, f, one_group, 5, 0);
        check_take(e, f, reversed, 9, 0);
        check_take(e, f, reversed + 8, 1, 0);
    }
    qv_file_close(f);
}

static void default_files(struct env *e) {
    char path[512];
    tu_path(path, sizeof path, "take_gather.qvr");
    static const int64_t rgs[] = {700, 1024, 0};
    for (int i = 0; i < 3; i++) {
        int64_t rg = rgs[i];
        write_file(e, path, rg, 0, QV_ENC_AUTO);
        int64_t step = rg ? rg : ROWS;
        check_file(e, path, step, NULL);
        struct qv_file_options no_cache = {.take_cache_bytes = -1};
        check_file(e, path, step, &no_cache);
        struct qv_file_options small_cache = {.take_cache_bytes = 1};
        check_file(e, path, step, &small_cache);
        struct qv_file_options mapped = {.mmap = true};
        check_file(e, path, step, &mapped);
    }
    write_file(e, path, 700, 1, QV_ENC_AUTO); /* compact: zstd / lz4 frames */
    check_file(e, path, 700, NULL);
    unlink(path);
}

static void test_default_files(void **state) {
    int64_t before = __atomic_load_n(&qv__take_gather_helpers, __ATOMIC_RELAXED);
    threads = QV_SCAN_SYNC;
    default_files(*state);
    assert_int_equal(__atomic_load_n(&qv__take_gather_helpers, __ATOMIC_RELAXED), before);
    threads = 2;
    default_files(*state);
    /* Cold takes of ~290 rows x 22 columns: helpers started. */
    assert_true(__atomic_load_n(&qv__take_gather_helpers, __ATOMIC_RELAXED) > before);
    threads = QV_SCAN_SYNC;
}

/* Each encoding forced on the values segments: a column it cannot hold
 * fails the write, so those are written one column at a time below; here
 * the encodings every flat column accepts. */
static void test_forced_encodings(void **state) {
    struct env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "take_gather_forced.qvr");
    /* Relative: every integer column stored against an earlier one of its
     * kind, so takes of a dependent read its reference inside its reader. */
    static const int forced[] = {QV_ENC_PLAIN, QV_ENC_ZSTD, QV_ENC_RELATIVE};
    for (int i = 0; i < 3; i++) {
        write_file(e, path, 700, 0, forced[i]);
        threads = QV_SCAN_SYNC;
        check_file(e, path, 700, NULL);
        threads = 2;
        check_file(e, path, 700, NULL);
    }
    threads = QV_SCAN_SYNC;
    unlink(path);
}

/* A flipped byte in one block of a flat column's values: the take fails
 * with EIO naming the checksum and the column; other columns' takes of
 * other rows still work. */
static void test_corrupt_block(void **state) {
    struct env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "take_gather_corrupt.qvr");
    write_file(e, path, 1024, 0, QV_ENC_PLAIN);
    struct qv_pool *p;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    struct qv_reader *rd;
    struct qv_error err = {0};
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, &err), 0);
    int32_t node = qv_reader_column_node(rd, e->flat_index[4]); /* i64: not null, plain */
    const struct qv__chunk *ch = qv__reader_chunk(rd, 1, node);
    const struct qv__segment *sg = &rd->f.segments[ch->first_segment + ch->n_segments - 1];
    uint64_t at = sg->offset + sg->length - 1; /* the last block of row group 1's values */
    qv_reader_close(rd);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    size_t size = 0;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_non_null(bytes);
    bytes[at] ^= 0x5a;
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, size, fp), size);
    fclose(fp);
    free(bytes);
    struct qv_file *f;
    assert_int_equal(qv_file_open(path, NULL, &f, &err), 0);
    static const char *const cols[] = {"i64"};
    struct qv_file_scan_options o = {.columns = cols, .n_columns = 1};
    static const int64_t rows[] = {5, 2047, 3000};
    struct ArrowArrayStream st;
    assert_int_equal(qv_file_take(f, rows, 3, &o, &st, &err), 0);
    struct ArrowArray b;
    assert_int_equal(st.get_next(&st, &b), EIO);
    const char *msg = st.get_last_error(&st);
    assert_non_null(msg);
    if (!strstr(msg, "checksum mismatch") || !strstr(msg, "i64")) fail_msg("%s", msg);
    st.release(&st);
    /* Every flat column of 100 rows, 3000 among them, with a helper: the
     * same error, naming i64 (the first failing column), whichever thread
     * took it. Fresh files: the take is cold. */
    for (int t = 0; t < 2; t++) {
        struct qv_file *g;
        assert_int_equal(qv_file_open(path, NULL, &g, &err), 0);
        int64_t many[100];
        for (int i = 0; i < 100; i++) many[i] = 1950 + 17 * i; /* 1950 .. 3633 */
        many[5] = 2047; /* in the corrupt block (between 2035 and 2052) */
        struct qv_file_scan_options wide = {.columns = FLAT, .n_columns = N_FLAT,
                                            .scan = {.threads = t ? 2 : QV_SCAN_SYNC}};
        assert_int_equal(qv_file_take(g, many, 100, &wide, &st, &err), 0);
        assert_int_equal(st.get_next(&st, &b), EIO);
        msg = st.get_last_error(&st);
        if (!msg || !strstr(msg, "checksum mismatch") || !strstr(msg, "i64"))
            fail_msg("%s", msg ? msg : "(none)");
        st.release(&st);
        qv_file_close(g);
    }
    /* Rows outside the corrupt block still read (the failed reader was not kept). */
    static const int64_t fine[] = {5, 3000};
    assert_int_equal(qv_file_take(f, fine, 2, &o, &st, &err), 0);
    assert_int_equal(st.get_next(&st, &b), 0);
    assert_non_null(b.release);
    assert_int_equal(b.length, 2);
    b.release(&b);
    st.release(&st);
    /* A bad thread count is the take's error, naming it. */
    struct qv_file_scan_options bad = {.columns = cols, .n_columns = 1, .scan = {.threads = -5}};
    assert_int_equal(qv_file_take(f, fine, 2, &bad, &st, &err), EINVAL);
    if (!strstr(err.message, "take: threads -5")) fail_msg("%s", err.message);
    qv_file_close(f);
    unlink(path);
}

/* Takes rows[0..n) of the flat columns with `th` threads, validated
 * fully (a failed row group's nulls counted twice on its retry showed as
 * a corrupt file, EIO), and drains the stream; on success asserts all n
 * rows came. Returns the take's or the stream's error. */
static int take_all(struct qv_file *f, const int64_t *rows, int64_t n, int th,
                    struct qv_error *err) {
    struct qv_file_scan_options o = {.columns = FLAT, .n_columns = N_FLAT,
                                     .scan = {.threads = th, .validate = QV_SCAN_VALIDATE_FULL}};
    struct ArrowArrayStream st;
    int rc = qv_file_take(f, rows, n, &o, &st, err);
    int64_t got = 0;
    while (!rc) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc || !b.release) break;
        got += b.length;
        b.release(&b);
    }
    if (st.release) st.release(&st);
    if (!rc) assert_int_equal(got, n);
    return rc;
}

/* Every allocation of a gathered take failing in turn (a cold take, then
 * a warm one on the same file): ENOMEM or success, nothing leaked (ASan),
 * the pool empty once the file is closed. */
static void allocation_failures(struct env *e, const int64_t *rows, int64_t n_rows, int th) {
    char path[512];
    tu_path(path, sizeof path, "take_gather_alloc.qvr");
    write_file(e, path, 700, 0, QV_ENC_AUTO);
    /* Odd nth: allocation nth / 2 + 1 of the cold take fails; even: of the
     * warm one. Until each has gone through untouched twice. */
    int passed[2] = {0, 0}, failed = 0;
    for (uint64_t nth = 1; nth < 4000 && (passed[0] < 2 || passed[1] < 2); nth++) {
        int inject = (int)(nth & 1) ? 0 : 1;
        struct qv_pool *p;
        assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
        struct qv_file_options fo = {.pool = p};
        struct qv_file *f;
        struct qv_error err = {0};
        assert_int_equal(qv_file_open(path, &fo, &f, &err), 0);
        for (int warm = 0; warm < 2; warm++) {
            if (warm == inject) qv_pool_inject_alloc_failure(p, nth / 2 + 1);
            int rc = take_all(f, rows, n_rows, th, &err);
            qv_pool_inject_alloc_failure(p, 0);
            if (rc != 0 && rc != ENOMEM)
                fail_msg("allocation %llu: rc %d", (unsigned long long)nth, rc);
            if (warm == inject) {
                if (rc) failed++;
                else passed[inject]++;
            }
        }
        qv_file_close(f);
        struct qv_pool_stats ps;
        qv_pool_get_stats(p, &ps);
        assert_int_equal(ps.reserved, 0);
        qv_pool_destroy(p);
    }
    assert_true(failed > 0);
    assert_true(passed[0] >= 2 && passed[1] >= 2);
    unlink(path);
}

static void test_allocation_failures(void **state) {
    static const int64_t rows[] = {4000, 3, 699, 700, 3, 2500};
    allocation_failures(*state, rows, 6, 0);
}

/* The same with 60 rows in every row group: on the caller alone (a
 * reader's reservation failing while the cache holds free readers had
 * crashed the take), then with two threads (the cold take starts a
 * helper, and an allocation of either thread fails). */
static void test_allocation_failures_helped(void **state) {
    int64_t rows[60];
    for (int i = 0; i < 60; i++) rows[i] = (int64_t)i * 83 % ROWS;
    allocation_failures(*state, rows, 60, QV_SCAN_SYNC);
    int64_t before = __atomic_load_n(&qv__take_gather_helpers, __ATOMIC_RELAXED);
    allocation_failures(*state, rows, 60, 2);
    assert_true(__atomic_load_n(&qv__take_gather_helpers, __ATOMIC_RELAXED) > before);
}

/* Under a pool limit, a take with two threads succeeds wherever the same
 * take on the caller alone does: a column the helper's readers left no
 * memory for runs again on the caller (it had failed with ENOMEM at limits
 * where the caller alone fits). Each limit on fresh files: a cold take,
 * then the same rows again. */
static void test_limit_helped_fits_as_alone(void **state) {
    struct env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "take_gather_limit.qvr");
    write_file(e, path, 700, 0, QV_ENC_AUTO);
    int64_t rows[200];
    for (int i = 0; i < 200; i++) rows[i] = (int64_t)i * 24 + 3;
    int fits = 0, short_of = 0;
    for (uint64_t limit = 64 << 10; limit <= (uint64_t)6 << 20; limit += 96 << 10) {
        int ok[2];
        for (int t = 0; t < 2; t++) {
            struct qv_pool *p;
            struct qv_pool_options po = {.limit = limit};
            assert_int_equal(qv_pool_create(&po, &p, NULL), 0);
            struct qv_file_options fo = {.pool = p};
            struct qv_file *f = NULL;
            struct qv_error err = {0};
            int rc = qv_file_open(path, &fo, &f, &err);
            /* A cold take, then the same rows again (the cache full). */
            for (int again = 0; !rc && again < 2; again++) {
                rc = take_all(f, rows, 200, t ? 2 : QV_SCAN_SYNC, &err);
            }
            if (f) qv_file_close(f);
            if (rc != 0 && rc != ENOMEM) fail_msg("limit %llu: rc %d", (unsigned long long)limit, rc);
            ok[t] = rc == 0;
            struct qv_pool_stats ps;
            qv_pool_get_stats(p, &ps);
            assert_int_equal(ps.reserved, 0);
            qv_pool_destroy(p);
        }
        if (ok[0] && !ok[1])
            fail_msg("limit %llu: the take fits alone but not with a helper",
                     (unsigned long long)limit);
        fits += ok[0];
        short_of += !ok[0];
    }
    assert_true(fits > 0 && short_of > 0); /* the sweep crosses the edge */
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_files),
        cmocka_unit_test(test_forced_encodings),
        cmocka_unit_test(test_corrupt_block),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_allocation_failures_helped),
        cmocka_unit_test(test_limit_helped_fits_as_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
