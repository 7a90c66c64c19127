/* Columns stored relative to another column (encoding 17) written by the
 * parallel writer: a dependent's task runs beside its reference's, on any
 * thread, in any order. The file must be the same bytes for 1, 2 and 4
 * threads, inline or not, from one batch (encoded in place) or from
 * batches of random sizes (joined), with the pairs chosen from the sample
 * and forced, with nulls in references and dependents (filled by the
 * writer) and decimals; it must read back as written; allocation failure
 * at every step and a sink failing at its k-th write give a clear error,
 * nothing published, nothing leaked, no hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "format/format_testing.h"
#include "memory/memory_testing.h"
#include "batch_io.h"
#include "mem_sink.h"
#include "pool_env.h"
#include "random_batch.h"
#include "test_util.h"

enum { C_SHIP, C_COMMIT, C_RECEIPT, C_KEY, C_KEY2, C_NOTE, C_PRICE, C_TAX, N_COLS };

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROWS 3000
#define STRIDE 5
#else
#define ROWS 9000
#define STRIDE 1
#endif

static int setup(void **state) {
    alarm(1200); /* a hang fails the test */
    struct schema_env *e = calloc(1, sizeof *e);
    static const struct qv_field cols[N_COLS] = {
        {.name = "ship", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "commit", .type = QV_TYPE_DATE32},
        {.name = "receipt", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "key", .type = QV_TYPE_INT64, .nullable = true},
        {.name = "key2", .type = QV_TYPE_INT64, .nullable = true},
        {.name = "note", .type = QV_TYPE_UTF8},
        {.name = "price", .type = QV_TYPE_DECIMAL128, .precision = 15, .scale = 2, .nullable = true},
        {.name = "tax", .type = QV_TYPE_DECIMAL128, .precision = 15, .scale = 2},
    };
    schema_env_open(e, cols, N_COLS);
    struct qv_error err;
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e->schema, e->r, NULL, &b, &err), 0);
    uint64_t s = 3;
    for (int64_t i = 0; i < ROWS; i++) {
        int32_t ship = 8000 + (int32_t)(rb_next(&s) % 2500);
        int64_t key = (int64_t)(rb_next(&s) >> 24);
        int64_t price = (int64_t)(rb_next(&s) % 10000000);
        char note[24];
        int len = snprintf(note, sizeof note, "n%llu", (unsigned long long)(rb_next(&s) % 50));
        struct qv_appender *a[N_COLS];
        for (int c = 0; c < N_COLS; c++) a[c] = qv_builder_column(b, c);
        int rc = 0;
        rc |= rb_next(&s) % 10 < 3 ? qv_append_null(a[C_SHIP]) : qv_append_date32(a[C_SHIP], ship);
        /* commit never null: the sample then sees receipt follow it
         * (ship's nulls make ship a poor reference for the chosen case). */
        rc |= qv_append_date32(a[C_COMMIT], ship + (int32_t)(rb_next(&s) % 181) - 90);
        rc |= rb_next(&s) % 10 == 0
                  ? qv_append_null(a[C_RECEIPT])
                  : qv_append_date32(a[C_RECEIPT], ship + 1 + (int32_t)(rb_next(&s) % 30));
        rc |= rb_next(&s) % 20 == 0 ? qv_append_null(a[C_KEY]) : qv_append_int64(a[C_KEY], key);
        rc |= rb_next(&s) % 20 == 0 ? qv_append_null(a[C_KEY2])
                                     : qv_append_int64(a[C_KEY2], key + (int64_t)(rb_next(&s) % 64));
        rc |= qv_append_string(a[C_NOTE], note, (size_t)len);
        rc |= rb_next(&s) % 10 == 0 ? qv_append_null(a[C_PRICE])
                                     : qv_append_decimal64(a[C_PRICE], price);
        rc |= qv_append_decimal64(a[C_TAX], price + (int64_t)(rb_next(&s) % 100));
        if (rc) fail_msg("append: %s", qv_builder_error(b)->message);
    }
    if (qv_builder_finish(b, &e->batch, &err)) fail_msg("finish: %s", err.message);
    qv_builder_destroy(b);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    schema_env_close(*state);
    free(*state);
    alarm(0);
    return 0;
}

/* Writes the batch cut at cuts[0..n_cuts) into m with writer options o in
 * reservation r. Returns the writer's result (err set). */
static int write_mem(struct schema_env *e, struct memsink *m, int fail_at, const int64_t *cuts,
                     int n_cuts, const struct qv_writer_options *o, int force,
                     struct qv_reservation *r, struct qv_error *err) {
    struct qv_sink sink = memsink_open(m, fail_at);
    struct qv_writer *w = NULL;
    int rc = qv_writer_open_sink(&sink, e->schema, o, r, &w, err);
    if (!rc) qv_writer_force_encoding(w, force);
    if (!rc) rc = bio_write_pieces(w, &e->batch, cuts, n_cuts, err);
    if (!rc) rc = qv_writer_finish(w, err);
    qv_writer_close(w);
    return rc;
}

/* Reads the file in m back whole and compares it with the batch; returns
 * how many values segments are relative. */
static int check_back(struct schema_env *e, const struct memsink *m) {
    struct qv_source src;
    struct qv_error err;
    assert_int_equal(qv_source_from_memory(m->p, m->len, "mem", &src, &err), 0);
    struct qv_reader *rd; /* the source moves into the reader */
    if (qv_reader_open_source(&src, NULL, e->r, &rd, &err)) fail_msg("open: %s", err.message);
    bio_check_row_groups(rd, e->schema, &e->batch, e->r, 0); /* all ROWS rows, in order */
    int relative = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++)
        for (int c = 0; c < N_COLS; c++) {
            int32_t node = qv_reader_column_node(rd, c);
            struct qv_chunk_info ci;
            assert_int_equal(qv_reader_chunk_info(rd, g, node, &ci, &err), 0);
            for (int i = 0; i < ci.n_segments; i++) {
                struct qv_segment_info si;
                assert_int_equal(qv_reader_segment_info(rd, g, node, i, &si, &err), 0);
                if (si.role != QV_SEGMENT_VALUES) continue;
                assert_true(si.offset < m->len);
                relative += m->p[si.offset] == QV_ENC_RELATIVE; /* the root's encoding */
            }
        }
    qv_reader_close(rd);
    return relative;
}

/* The same bytes for every thread count, in place and joined, chosen and
 * forced; and they read back as written, with relative segments in them. */
static void test_same_bytes_any_threads(void **state) {
    struct schema_env *e = *state;
    struct memsink ref = {0}, out = {0};
    struct qv_error err;
    uint64_t s = 17;
    int64_t cuts[12];
    int n_cuts = 0;
    for (int64_t at = 0; n_cuts < 12;) {
        at += 1 + (int64_t)(rb_next(&s) % (ROWS / 8));
        if (at >= ROWS) break;
        cuts[n_cuts++] = at;
    }
    static const int forced[] = {QV_ENC_AUTO, QV_ENC_RELATIVE};
    for (int f = 0; f < 2; f++) {
        for (int joined = 0; joined < 2; joined++) {
            struct qv_writer_options ro = {.row_group_rows = ROWS / 3 + 7,
                                           .max_in_flight = QV_WRITER_INLINE};
            int rc = write_mem(e, &ref, 0, cuts, joined ? n_cuts : 0, &ro, forced[f], e->r, &err);
            if (rc) fail_msg("inline: %s", err.message);
            int rel = check_back(e, &ref);
            /* Forced: commit and receipt against ship, key2, price and
             * tax against key (decimals are int64 values), in each of 3
             * row groups; chosen: at least receipt (against commit). */
            if (forced[f]) assert_int_equal(rel, 15);
            else if (rel < 1) fail_msg("joined %d: %d relative segments chosen", joined, rel);
            static const int threads[] = {1, 2, 4};
            for (int t = 0; t < 3; t++) {
                struct qv_writer_options o = {.row_group_rows = ROWS / 3 + 7,
                                              .threads = threads[t]};
                rc = write_mem(e, &out, 0, cuts, joined ? n_cuts : 0, &o, forced[f], e->r, &err);
                if (rc) fail_msg("threads %d: %s", threads[t], err.message);
                assert_true(out.finished);
                assert_int_equal(out.len, ref.len);
                if (memcmp(out.p, ref.p, ref.len))
                    fail_msg("forced %d joined %d threads %d: other bytes", f, joined, threads[t]);
            }
        }
    }
    free(ref.p);
    free(out.p);
}

/* Allocation failure at every step of a parallel write with relative
 * columns, and a sink failing at each of its writes: ENOMEM or EIO with a
 * message, nothing published, nothing left charged; a write the failure
 * missed is the same file. */
static void test_failures_every_step(void **state) {
    struct schema_env *e = *state;
    struct memsink ref = {0}, out = {0};
    struct qv_error err;
    const int64_t cuts[] = {ROWS / 5, ROWS / 2};
    struct qv_writer_options o = {.row_group_rows = ROWS / 4, .threads = 2};
    assert_int_equal(write_mem(e, &ref, 0, cuts, 2, &o, QV_ENC_RELATIVE, e->r, &err), 0);
    int succeeded = 0, failures = 0;
    for (uint64_t nth = 1; nth < 100000 && !succeeded; nth += STRIDE) {
        struct qv_pool *wp;
        struct qv_reservation *wr;
        assert_int_equal(qv_pool_create(NULL, &wp, NULL), 0);
        assert_int_equal(qv_reservation_create(wp, NULL, &wr, NULL), 0);
        uint64_t before = qv_pool_alloc_count(wp);
        qv_pool_inject_alloc_failure(wp, nth);
        int rc = write_mem(e, &out, 0, cuts, 2, &o, QV_ENC_RELATIVE, wr, &err);
        uint64_t made = qv_pool_alloc_count(wp) - before;
        qv_pool_inject_alloc_failure(wp, 0);
        if (rc) {
            if (rc != ENOMEM || !err.message[0]) fail_msg("step %llu: %d %s", (unsigned long long)nth, rc, err.message);
            assert_false(out.finished);
            failures++;
        } else {
            assert_int_equal(out.len, ref.len);
            assert_memory_equal(out.p, ref.p, ref.len);
            if (made < nth) succeeded = 1;
        }
        assert_int_equal(qv_reservation_used(wr), 0);
        qv_reservation_destroy(wr);
        assert_int_equal(qv_pool_used(wp), 0);
        qv_pool_destroy(wp);
    }
    assert_true(succeeded);
    assert_true(failures > 10);
    /* The sink fails at each of its writes in turn. */
    int writes = 0;
    {
        struct memsink count = {0};
        assert_int_equal(write_mem(e, &count, 1000000, cuts, 2, &o, QV_ENC_RELATIVE, e->r, &err), 0);
        writes = count.writes;
        free(count.p);
    }
    assert_true(writes > 3);
    const uint64_t used = qv_reservation_used(e->r);
    for (int k = 1; k <= writes; k++) {
        int rc = write_mem(e, &out, k, cuts, 2, &o, QV_ENC_RELATIVE, e->r, &err);
        if (rc != EIO || !strstr(err.message, "injected write failure"))
            fail_msg("sink failing at write %d: rc %d: %s", k, rc, err.message);
        assert_false(out.finished);
        assert_true(out.aborted);
        assert_int_equal(qv_reservation_used(e->r), used);
    }
    free(ref.p);
    free(out.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_bytes_any_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_every_step, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
