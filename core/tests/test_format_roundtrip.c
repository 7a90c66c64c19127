/* End to end: writer -> file -> reader -> Arrow, value by value, for every
 * type, nulls at every level, empty / 0-row / 1-row files, sliced and
 * chunked input, many row groups, row ranges and takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "format/format_testing.h"
#include "batch_io.h"
#include "pool_env.h"
#include "random_batch.h"
#include "test_util.h"

static int setup(void **state) {
    struct schema_env *e = calloc(1, sizeof *e);
    schema_env_open(e, NULL, 0); /* every type */
    *state = e;
    return 0;
}

static int teardown(void **state) {
    schema_env_close(*state);
    free(*state);
    return 0;
}

static void write_batches(struct schema_env *e, const char *path, struct ArrowArray *batches,
                          int nb, int64_t rg_rows, int force) {
    struct qv_writer *w;
    struct qv_error err;
    struct qv_writer_options o = {.row_group_rows = rg_rows};
    assert_int_equal(qv_writer_open(path, e->schema, &o, e->r, &w, &err), 0);
    qv_writer_force_encoding(w, force);
    for (int i = 0; i < nb; i++) {
        int rc = qv_writer_write(w, &batches[i], &err);
        if (rc) fail_msg("write: %s", err.message);
    }
    int rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

static void roundtrip(struct schema_env *e, int64_t rows, int64_t rg_rows, uint64_t seed) {
    char path[512];
    tu_path(path, sizeof path, "roundtrip.qvr");
    struct rb_options o = {.null_prob = 0.2, .max_list = 4, .max_string = 40};
    struct ArrowArray batch;
    assert_int_equal(rb_batch(e->schema, rows, seed, &o, e->r, &batch), 0);
    write_batches(e, path, &batch, 1, rg_rows, 0);

    struct qv_reader *rd;
    struct qv_error err;
    int rc = qv_reader_open(path, NULL, e->r, &rd, &err);
    if (rc) fail_msg("open: %s", err.message);
    assert_int_equal(qv_reader_num_rows(rd), rows);
    assert_true(qv_schema_equal(qv_reader_schema(rd), e->schema, 0));
    assert_int_equal(qv_reader_open_reads(rd), 1);
    bio_check_row_groups(rd, e->schema, &batch, e->r, 1); /* all `rows` rows */
    qv_reader_close(rd);
    batch.release(&batch);
    unlink(path);
}

static void test_all_types_many_row_groups(void **state) {
    roundtrip(*state, 5000, 1024, 1);
}
static void test_all_types_one_row_group(void **state) { roundtrip(*state, 3000, 0, 2); }
static void test_one_row(void **state) { roundtrip(*state, 1, 0, 3); }
static void test_zero_rows(void **state) { roundtrip(*state, 0, 0, 4); }

static void test_sliced_and_chunked_input(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "sliced.qvr");
    struct rb_options o = {.null_prob = 0.3, .max_list = 3, .max_string = 20};
    struct ArrowArray full;
    assert_int_equal(rb_batch(e->schema, 4000, 7, &o, e->r, &full), 0);
    /* Three slices of one batch, with non-zero offsets, as chunked input. */
    struct ArrowArray parts[3];
    int64_t cuts[4] = {0, 1, 2500, 4000};
    for (int i = 0; i < 3; i++) {
        parts[i] = full;
        parts[i].offset = cuts[i];
        parts[i].length = cuts[i + 1] - cuts[i];
        parts[i].release = bio_borrowed_release; /* borrowed views of `full` */
    }
    /* A STRUCT slice must slice its children: Arrow semantics add the
     * parent's offset to the children's. */
    write_batches(e, path, parts, 3, 1024, 0);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    assert_int_equal(qv_reader_num_rows(rd), 4000);
    assert_int_equal(qv_reader_num_row_groups(rd), 4);
    int64_t start = 0;
    for (int64_t g = 0; g < 4; g++) {
        struct ArrowArray got;
        assert_int_equal(qv_reader_read_row_group(rd, g, NULL, 0, e->r, &got, &err), 0);
        bio_assert_slice_equal(e->schema, &full, start, &got, g);
        start += got.length;
        got.release(&got);
    }
    qv_reader_close(rd);
    full.release(&full);
    unlink(path);
}

static void test_ranges_and_takes(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "take.qvr");
    struct rb_options o = {.null_prob = 0.25, .max_list = 20, .max_string = 30};
    struct ArrowArray full;
    assert_int_equal(rb_batch(e->schema, 6000, 9, &o, e->r, &full), 0);
    write_batches(e, path, &full, 1, 0, 0);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    uint64_t seed = 99;
    for (int32_t c = 0; c < (int32_t)e->schema->root.n_children; c++) {
        struct qv_column_reader *cr;
        int rc = qv_column_reader_open(rd, 0, c, e->r, &cr, &err);
        if (rc) fail_msg("open column %d: %s", c, err.message);
        const struct qv_field *f = &e->schema->root.children[c];
        for (int t = 0; t < 20; t++) {
            int64_t start = (int64_t)(rb_next(&seed) % 6000);
            int64_t n = (int64_t)(rb_next(&seed) % (uint64_t)(6000 - start + 1));
            struct ArrowArray got;
            rc = qv_column_reader_read(cr, start, n, &got, &err);
            if (rc) fail_msg("range %s: %s", f->name, err.message);
            struct ArrowArray view = *full.children[c];
            view.offset += start;
            view.length = n;
            char why[512];
            if (!qv_arrow_array_equal(f, &view, &got, why, sizeof why))
                fail_msg("range %s [%lld,+%lld): %s", f->name, (long long)start, (long long)n, why);
            got.release(&got);
        }
        /* Takes of sorted rows, compared one row at a time. */
        int64_t rows[64];
        int64_t n = 0;
        for (int64_t r = (int64_t)(rb_next(&seed) % 50); r < 6000 && n < 64; r += 1 + (int64_t)(rb_next(&seed) % 200))
            rows[n++] = r;
        bio_check_take(cr, f, full.children[c], 0, rows, n, 0);
        struct ArrowArray got;
        int64_t bad[2] = {5, 5};
        assert_int_equal(qv_column_reader_take(cr, bad, 2, &got, &err), EINVAL);
        /* One fault in lists of 1 to 13 rows (the check's vector steps and
         * tails), at every position: a row below 0, at the row count, a
         * step back, a repeat. Each is EINVAL naming that row and position,
         * and the reader then takes the good rows again. */
        for (int64_t len = 1; len <= 13; len++) {
            for (int64_t at = 0; at < len; at++) {
                for (int kind = 0; kind < 4; kind++) {
                    int64_t r[13];
                    for (int64_t i = 0; i < len; i++) r[i] = 10 + 37 * i;
                    if (kind == 0) r[at] = -1 - at;
                    else if (kind == 1) r[at] = 6000;
                    else if (at == 0) continue; /* order faults need a row before */
                    else r[at] = kind == 2 ? r[at - 1] - 1 : r[at - 1];
                    if (qv_column_reader_take(cr, r, len, &got, &err) != EINVAL)
                        fail_msg("%s: bad row %lld at %lld of %lld taken", f->name,
                                 (long long)r[at], (long long)at, (long long)len);
                    char want[64];
                    snprintf(want, sizeof want, "row %lld at position %lld ", (long long)r[at],
                             (long long)at);
                    if (!strstr(err.message, want)) fail_msg("%s: %s", f->name, err.message);
                }
            }
        }
        bio_check_take(cr, f, full.children[c], 0, rows, n, 0);
        /* Dense takes: one row in two (3,000 rows: decimals are taken in
         * pieces of 2,048) and one in five. */
        static int64_t dense[3000];
        for (int64_t step = 2; step <= 5; step += 3) {
            int64_t m = 0;
            for (int64_t r = step / 2; r < 6000; r += step) dense[m++] = r;
            bio_check_take(cr, f, full.children[c], 0, dense, m, 0);
        }
        qv_column_reader_close(cr);
    }
    qv_reader_close(rd);
    full.release(&full);
    unlink(path);
}

static void test_rows_through_builder_and_metadata(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "rows.qvr");
    struct qv_kv meta[] = {{"created_by", "test", -1, -1}, {"bin", "a\0b", -1, 3}};
    struct qv_writer_options o = {.row_group_rows = 1024, .metadata = meta, .n_metadata = 2};
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, e->schema, &o, e->r, &w, &err), 0);
    uint64_t seed = 5;
    struct rb_options ro = {.null_prob = 0.1, .max_list = 2, .max_string = 8};
    for (int i = 0; i < 30; i++) {
        assert_int_equal(rb_append_rows(qv_writer_builder(w), 100, &seed, &ro), 0);
        assert_int_equal(qv_writer_end_rows(w, &err), 0);
    }
    assert_int_equal(qv_writer_finish(w, &err), 0);
    assert_int_equal(qv_writer_rows_written(w), 3000);
    qv_writer_close(w);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    assert_int_equal(qv_reader_num_rows(rd), 3000);
    assert_int_equal(qv_reader_num_row_groups(rd), 3);
    int64_t n;
    const struct qv_kv *kv = qv_reader_metadata(rd, &n);
    assert_int_equal(n, 2);
    assert_string_equal(kv[0].key, "created_by");
    assert_int_equal(kv[1].value_len, 3);
    assert_memory_equal(kv[1].value, "a\0b", 3);
    assert_non_null(strstr(qv_reader_writer_version(rd), "quiver"));
    qv_reader_close(rd);
    unlink(path);
}

/* Regression: a forced dictionary over more distinct strings than one zstd
 * frame holds used to free its own distinct values while compressing them. */
static void test_forced_dictionary_of_many_strings(void **state) {
    (void)state;
    struct qv_pool *p;
    struct qv_reservation *r;
    assert_int_equal(qv_pool_create(NULL, &p, NULL), 0);
    assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
    static const struct qv_field col = {.name = "s", .type = QV_TYPE_UTF8, .nullable = false};
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 1,
                                         .children = &col};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&root, r, &s, NULL), 0);
    char path[512];
    tu_path(path, sizeof path, "dict_many.qvr");
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, s, NULL, r, &w, &err), 0);
    qv_writer_force_encoding(w, QV_ENC_DICT);
    struct qv_appender *a = qv_builder_column(qv_writer_builder(w), 0);
    char buf[64];
    for (int i = 0; i < 40000; i++) {
        int n = snprintf(buf, sizeof buf, "distinct value number %d, padded to compress", i * 7919);
        assert_int_equal(qv_append_string(a, buf, (size_t)n), 0);
    }
    assert_int_equal(qv_writer_end_rows(w, &err), 0);
    int rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, &err), 0);
    struct ArrowArray got;
    assert_int_equal(qv_reader_read_row_group(rd, 0, NULL, 0, r, &got, &err), 0);
    const int32_t *off = got.children[0]->buffers[1];
    const char *data = got.children[0]->buffers[2];
    for (int i = 0; i < 40000; i++) {
        int n = snprintf(buf, sizeof buf, "distinct value number %d, padded to compress", i * 7919);
        assert_int_equal(off[i + 1] - off[i], n);
        assert_memory_equal(data + off[i], buf, (size_t)n);
    }
    got.release(&got);
    qv_reader_close(rd);
    unlink(path);
    qv_schema_destroy(s);
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_all_types_many_row_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_types_one_row_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sliced_and_chunked_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges_and_takes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rows_through_builder_and_metadata, setup, teardown),
        cmocka_unit_test(test_forced_dictionary_of_many_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
