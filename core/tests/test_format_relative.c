/* Columns stored relative to another column of the same row group, end to
 * end: the writer's choice on correlated columns (and not on others),
 * forced pairings of every integer type, references and dependents with
 * nulls, row-group boundaries and chunked input, takes and scans that
 * touch only the dependent column, filters on it, and corrupted reference
 * or dependent segments (errors name both columns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "quiver/scan.h"
#include "format/format_testing.h"
#include "batch_io.h"
#include "pool_env.h"
#include "random_batch.h"
#include "test_util.h"

enum { C_SHIP, C_COMMIT, C_RECEIPT, C_KEY, C_KEY2, C_NOTE, C_NOISE, N_COLS };

static int setup(void **state) {
    struct schema_env *e = calloc(1, sizeof *e);
    static const struct qv_field cols[N_COLS] = {
        {.name = "ship", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "commit", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "receipt", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "key", .type = QV_TYPE_INT64},
        {.name = "key2", .type = QV_TYPE_INT64, .nullable = true},
        {.name = "note", .type = QV_TYPE_UTF8},
        {.name = "noise", .type = QV_TYPE_INT32},
    };
    schema_env_open(e, cols, N_COLS);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    schema_env_close(*state);
    free(*state);
    return 0;
}

static uint64_t next(uint64_t *s) { return rb_next(s); }

/* Rows like lineitem's dates: ship random over ~7 years, receipt 1..30 days
 * later, commit within 90 days; key random, key2 = key + 0..99. ship_nulls
 * and dep_nulls: per mille of null ship / commit, receipt and key2 slots. */
static void make_batch(struct schema_env *e, int64_t rows, uint64_t seed, int ship_nulls,
                       int dep_nulls, struct ArrowArray *out) {
    struct qv_builder *b;
    struct qv_error err;
    assert_int_equal(qv_builder_create(e->schema, e->r, NULL, &b, &err), 0);
    uint64_t s = seed;
    for (int64_t i = 0; i < rows; i++) {
        int32_t ship = 8000 + (int32_t)(next(&s) % 2500);
        int64_t key = (int64_t)(next(&s) >> 20);
        char note[24];
        int len = snprintf(note, sizeof note, "n%llu", (unsigned long long)(next(&s) % 1000));
        struct qv_appender *a[N_COLS];
        for (int c = 0; c < N_COLS; c++) a[c] = qv_builder_column(b, c);
        int rc = 0;
        rc |= (int)(next(&s) % 1000) < ship_nulls ? qv_append_null(a[C_SHIP]) : qv_append_date32(a[C_SHIP], ship);
        rc |= (int)(next(&s) % 1000) < dep_nulls
                  ? qv_append_null(a[C_COMMIT])
                  : qv_append_date32(a[C_COMMIT], ship + (int32_t)(next(&s) % 181) - 90);
        rc |= (int)(next(&s) % 1000) < dep_nulls
                  ? qv_append_null(a[C_RECEIPT])
                  : qv_append_date32(a[C_RECEIPT], ship + 1 + (int32_t)(next(&s) % 30));
        rc |= qv_append_int64(a[C_KEY], key);
        rc |= (int)(next(&s) % 1000) < dep_nulls ? qv_append_null(a[C_KEY2])
                                                  : qv_append_int64(a[C_KEY2], key + (int64_t)(next(&s) % 100));
        rc |= qv_append_string(a[C_NOTE], note, (size_t)len);
        rc |= qv_append_int32(a[C_NOISE], (int32_t)next(&s));
        assert_int_equal(rc, 0);
    }
    assert_int_equal(qv_builder_finish(b, out, &err), 0);
    qv_builder_destroy(b);
}

/* Writes `batch` cut into pieces at `cuts` (n_cuts + 1 pieces; none: whole)
 * with options o and `force` forced. */
static void write_file(struct schema_env *e, const char *path, const struct qv_schema *schema,
                       struct ArrowArray *batch, const int64_t *cuts, int n_cuts,
                       const struct qv_writer_options *o, int force) {
    struct qv_writer *w;
    struct qv_error err;
    assert_int_equal(qv_writer_open(path, schema, o, e->r, &w, &err), 0);
    qv_writer_force_encoding(w, force);
    if (bio_write_pieces(w, batch, cuts, n_cuts, &err)) fail_msg("write: %s", err.message);
    int rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
}

/* The encoding tree of column c's values segment in row group rg. */
static void describe(struct schema_env *e, struct qv_reader *rd, int64_t rg, int32_t c, char *buf,
                     size_t cap) {
    struct qv_error err;
    struct qv_segment_info si;
    int i;
    bio_values_segment(rd, rg, c, &i, &si);
    int rc = qv_reader_segment_describe(rd, rg, qv_reader_column_node(rd, c), i, e->r, buf, cap,
                                        NULL, NULL, &err);
    if (rc) fail_msg("describe: %s", err.message);
}

/* Takes of column c alone (only its reader, and the reference inside it),
 * compared row by row. */
static void check_takes(struct schema_env *e, struct qv_reader *rd, const struct qv_schema *schema,
                        const struct ArrowArray *batch, int32_t c, uint64_t seed) {
    struct qv_error err;
    uint64_t s = seed;
    int64_t first = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++) {
        int64_t rows_g = qv_reader_row_group_rows(rd, g);
        struct qv_column_reader *cr;
        int rc = qv_column_reader_open(rd, g, c, e->r, &cr, &err);
        if (rc) fail_msg("open: %s", err.message);
        int64_t rows[40];
        int64_t n = 0;
        for (int64_t r = (int64_t)(next(&s) % 7); r < rows_g && n < 40; r += 1 + (int64_t)(next(&s) % 900))
            rows[n++] = r;
        bio_check_take(cr, &schema->root.children[c], batch->children[c], first, rows, n, g);
        qv_column_reader_close(cr);
        first += rows_g;
    }
}

static void test_chosen_on_correlated_columns(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "relative_chosen.qvr");
    struct ArrowArray batch;
    make_batch(e, 20000, 1, 0, 0, &batch);
    const struct qv_writer_options wo = {.row_group_rows = 8192};
    write_file(e, path, e->schema, &batch, NULL, 0, &wo, QV_ENC_AUTO);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    char d[512];
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++) {
        describe(e, rd, g, C_RECEIPT, d, sizeof d);
        if (strncmp(d, "relative(ref=0,", 15) != 0) fail_msg("receipt rg %lld: %s", (long long)g, d);
        describe(e, rd, g, C_KEY2, d, sizeof d);
        if (strncmp(d, "relative(ref=3,", 15) != 0) fail_msg("key2 rg %lld: %s", (long long)g, d);
        /* Not correlated with anything: left alone. */
        describe(e, rd, g, C_NOISE, d, sizeof d);
        assert_null(strstr(d, "relative"));
        describe(e, rd, g, C_SHIP, d, sizeof d);
        assert_null(strstr(d, "relative"));
    }
    /* Receipt's values: 1..30 days after ship, 5 bits a value or so, far
     * below its own 12. */
    struct qv_chunk_info ci;
    assert_int_equal(qv_reader_chunk_info(rd, 0, qv_reader_column_node(rd, C_RECEIPT), &ci, &err), 0);
    assert_true(ci.encoded_bytes < 8192 * 7 / 8);
    bio_check_row_groups(rd, e->schema, &batch, e->r, 0);
    check_takes(e, rd, e->schema, &batch, C_RECEIPT, 5);
    check_takes(e, rd, e->schema, &batch, C_KEY2, 6);
    qv_reader_close(rd);
    /* Not allowed: not used. */
    struct qv_writer *w;
    struct qv_writer_options o = {.allowed_encodings = ~QV_ENC_BIT(QV_ENC_RELATIVE)};
    assert_int_equal(qv_writer_open(path, e->schema, &o, e->r, &w, &err), 0);
    assert_int_equal(qv_writer_write(w, &batch, &err), 0);
    assert_int_equal(qv_writer_finish(w, &err), 0);
    qv_writer_close(w);
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    describe(e, rd, 0, C_RECEIPT, d, sizeof d);
    assert_null(strstr(d, "relative"));
    qv_reader_close(rd);
    batch.release(&batch);
    unlink(path);
}

/* The parallel writer: a dependent column's task computes its reference's
 * values itself (null fill of the reference's input), so the file is the
 * same bytes with 1, 2 and 4 encoding threads, whole input (encoded in
 * place) or cut into pieces (joined), default and compact modes; and it
 * reads back. Chosen pairs with dependents with nulls; forced pairs with a
 * reference with nulls too (the sample does not pair a reference whose
 * null slots make the differences wide: null fill puts a neighbour's value
 * there, unrelated to the dependent's). */
static void test_same_bytes_any_threads(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "relative_threads.qvr");
    struct ArrowArray batches[2];
    make_batch(e, 60000, 7, 0, 100, &batches[0]);
    make_batch(e, 60000, 8, 150, 100, &batches[1]);
    static const int64_t cuts[] = {1, 9000, 9001, 30000, 47777};
    for (int shape = 0; shape < 6; shape++) {
        const int pieces = shape & 1, compact = shape == 2 || shape == 3, forced = shape >= 4;
        struct ArrowArray batch = batches[forced];
        unsigned char *first = NULL;
        size_t first_size = 0;
        for (int ti = 0; ti < 3; ti++) {
            const int threads = ti == 0 ? 1 : 2 * ti;
            struct qv_error err;
            struct qv_writer_options o = {.row_group_rows = 20000, .compact = compact,
                                          .threads = threads, .max_in_flight = 3};
            const int n_cuts = pieces ? (int)(sizeof cuts / sizeof cuts[0]) : 0;
            write_file(e, path, e->schema, &batch, cuts, n_cuts, &o,
                       forced ? QV_ENC_RELATIVE : QV_ENC_AUTO);
            size_t size = 0;
            unsigned char *bytes = tu_read_file(path, &size);
            assert_non_null(bytes);
            if (!first) {
                first = bytes;
                first_size = size;
                struct qv_reader *rd;
                assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
                char d[512];
                describe(e, rd, 0, C_RECEIPT, d, sizeof d);
                if (strncmp(d, "relative(ref=0,", 15) != 0) fail_msg("shape %d: receipt: %s", shape, d);
                bio_check_row_groups(rd, e->schema, &batch, e->r, 0);
                qv_reader_close(rd);
            } else {
                if (size != first_size || memcmp(bytes, first, size) != 0)
                    fail_msg("shape %d: %d threads wrote other bytes than 1 (%zu vs %zu)", shape,
                             threads, size, first_size);
                free(bytes);
            }
        }
        free(first);
    }
    batches[0].release(&batches[0]);
    batches[1].release(&batches[1]);
    unlink(path);
}

/* A reference with nulls (its null slots hold whatever its segment
 * decodes to) and dependents with nulls; every boundary of row groups and
 * input pieces; mapped and pread reads. */
static void test_nulls_and_boundaries(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "relative_nulls.qvr");
    const int64_t rg_sizes[] = {1, 1000, 1024, 3333, 0};
    const int64_t cuts[] = {1, 700, 2049, 5000};
    for (size_t i = 0; i < sizeof rg_sizes / sizeof rg_sizes[0]; i++) {
        const int64_t rows = rg_sizes[i] == 1 ? 50 : 7000;
        struct ArrowArray batch;
        make_batch(e, rows, 10 + i, 150, 100, &batch);
        for (int forced = 0; forced < 2; forced++) {
            int chunked = rows > 5000 && (i + forced) % 2;
            const struct qv_writer_options wo = {.row_group_rows = rg_sizes[i],
                                                 .compact = (int)i == 3};
            write_file(e, path, e->schema, &batch, cuts, chunked ? 4 : 0, &wo,
                       forced ? QV_ENC_RELATIVE : QV_ENC_AUTO);
            for (int mapped = 0; mapped < 2; mapped++) {
                struct qv_reader *rd;
                struct qv_error err;
                struct qv_reader_options ro = {.mmap = mapped};
                assert_int_equal(qv_reader_open(path, &ro, e->r, &rd, &err), 0);
                if (forced) {
                    char d[512];
                    describe(e, rd, 0, C_COMMIT, d, sizeof d);
                    if (strncmp(d, "relative(ref=0,", 15) != 0) fail_msg("commit: %s", d);
                    describe(e, rd, 0, C_RECEIPT, d, sizeof d);
                    if (strncmp(d, "relative(ref=0,", 15) != 0) fail_msg("receipt: %s", d);
                    describe(e, rd, 0, C_KEY2, d, sizeof d);
                    if (strncmp(d, "relative(ref=3,", 15) != 0) fail_msg("key2: %s", d);
                }
                bio_check_row_groups(rd, e->schema, &batch, e->r, 0);
                check_takes(e, rd, e->schema, &batch, C_COMMIT, 7 + i);
                check_takes(e, rd, e->schema, &batch, C_RECEIPT, 8 + i);
                qv_reader_close(rd);
            }
        }
        batch.release(&batch);
    }
    unlink(path);
}

/* Forced on the all-types schema: every integer column (dates, timestamps,
 * decimals <= 18 digits, every width) relative to the previous of its kind. */
static void test_forced_every_type(void **state) {
    struct schema_env *e = *state;
    struct qv_schema *all;
    assert_int_equal(rb_all_types_schema(e->r, &all), 0);
    char path[512];
    tu_path(path, sizeof path, "relative_all.qvr");
    struct rb_options o = {.null_prob = 0.2, .max_list = 4, .max_string = 20};
    struct ArrowArray batch;
    assert_int_equal(rb_batch(all, 5000, 3, &o, e->r, &batch), 0);
    const struct qv_writer_options wo = {.row_group_rows = 2048};
    write_file(e, path, all, &batch, NULL, 0, &wo, QV_ENC_RELATIVE);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    int relative = 0;
    for (int32_t c = 0; c < (int32_t)all->root.n_children; c++) {
        struct qv_chunk_info ci;
        int32_t node = qv_reader_column_node(rd, c);
        assert_int_equal(qv_reader_chunk_info(rd, 0, node, &ci, &err), 0);
        for (int i = 0; i < ci.n_segments; i++) {
            struct qv_segment_info si;
            char d[512];
            assert_int_equal(qv_reader_segment_info(rd, 0, node, i, &si, &err), 0);
            if (si.role != QV_SEGMENT_VALUES) continue;
            assert_int_equal(qv_reader_segment_describe(rd, 0, node, i, e->r, d, sizeof d, NULL,
                                                        NULL, &err),
                             0);
            relative += strncmp(d, "relative(", 9) == 0;
        }
    }
    assert_true(relative >= 2);
    bio_check_row_groups(rd, all, &batch, e->r, 0);
    for (int32_t c = 0; c < (int32_t)all->root.n_children; c++)
        check_takes(e, rd, all, &batch, c, 40 + (uint64_t)c);
    qv_reader_close(rd);
    batch.release(&batch);
    qv_schema_destroy(all);
    unlink(path);
}

/* Scans projecting only the dependent, with and without a filter on it. */
static void test_scan_dependent_only(void **state) {
    struct schema_env *e = *state;
    char path[512];
    tu_path(path, sizeof path, "relative_scan.qvr");
    struct ArrowArray batch;
    make_batch(e, 9000, 21, 50, 50, &batch);
    const struct qv_writer_options wo = {.row_group_rows = 4096};
    write_file(e, path, e->schema, &batch, NULL, 0, &wo, QV_ENC_RELATIVE);
    const int64_t *key2 = (const int64_t *)batch.children[C_KEY2]->buffers[1];
    const uint8_t *valid = batch.children[C_KEY2]->buffers[0];
    int64_t limit = key2[100];
    int64_t want = 0, want_sum = 0;
    for (int64_t i = 0; i < 9000; i++)
        if ((!valid || qv_bit_get(valid, i)) && key2[i] < limit) {
            want++;
            want_sum += key2[i];
        }
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    char filter[64];
    snprintf(filter, sizeof filter, "key2 < %lld", (long long)limit);
    /* On the caller's thread, and on two workers (each decoding the
     * reference in its own column reader). */
    for (int run = 0; run < 4; run++) {
        int filtered = run & 1;
        int32_t col = C_KEY2;
        struct qv_scan_options so = {.columns = &col, .n_columns = 1,
                                     .threads = run < 2 ? QV_SCAN_SYNC : 2, .batch_rows = 1000,
                                     .filter = filtered ? filter : NULL};
        struct ArrowArrayStream st;
        int rc = qv_scan_open(rd, &so, e->r, &st, &err);
        if (rc) fail_msg("scan: %s", err.message);
        int64_t got = 0, sum = 0, at = 0;
        for (;;) {
            struct ArrowArray b;
            rc = st.get_next(&st, &b);
            if (rc) fail_msg("next: %s", st.get_last_error(&st));
            if (!b.release) break;
            const struct ArrowArray *c = b.children[0];
            const int64_t *v = (const int64_t *)c->buffers[1];
            const uint8_t *cv = c->null_count ? c->buffers[0] : NULL;
            for (int64_t i = 0; i < c->length; i++) {
                int64_t j = c->offset + i;
                if (cv && !qv_bit_get(cv, j)) {
                    assert_false(filtered);
                    assert_false(valid && qv_bit_get(valid, at + i));
                    continue;
                }
                if (!filtered) assert_int_equal(v[j], key2[at + i]);
                got += !filtered || v[j] < limit;
                sum += v[j];
            }
            at += c->length;
            b.release(&b);
        }
        st.release(&st);
        if (filtered) {
            assert_int_equal(got, want);
            assert_int_equal(sum, want_sum);
        } else {
            assert_int_equal(at, 9000);
        }
    }
    qv_reader_close(rd);
    batch.release(&batch);
    unlink(path);
}

/* Flips one byte in a file at `off` (a copy at `out`). */
static void corrupt_copy(const char *in, const char *out, uint64_t off) {
    size_t size = 0;
    unsigned char *buf = tu_read_file(in, &size);
    assert_non_null(buf);
    assert_true(off < size);
    buf[off] ^= 0x5a;
    FILE *f = fopen(out, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, size, f), size);
    fclose(f);
    free(buf);
}

static uint64_t values_offset(struct qv_reader *rd, int64_t rg, int32_t c, uint64_t *len) {
    struct qv_segment_info si;
    bio_values_segment(rd, rg, c, NULL, &si);
    *len = si.length;
    return si.offset;
}

static void test_corrupt_reference_and_dependent(void **state) {
    struct schema_env *e = *state;
    char path[512], bad[512];
    tu_path(path, sizeof path, "relative_ok.qvr");
    tu_path(bad, sizeof bad, "relative_bad.qvr");
    struct ArrowArray batch;
    make_batch(e, 30000, 31, 0, 0, &batch);
    const struct qv_writer_options wo = {0};
    write_file(e, path, e->schema, &batch, NULL, 0, &wo, QV_ENC_AUTO);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    uint64_t ref_len, dep_len;
    uint64_t ref_off = values_offset(rd, 0, C_SHIP, &ref_len);
    uint64_t dep_off = values_offset(rd, 0, C_RECEIPT, &dep_len);
    char d[512];
    describe(e, rd, 0, C_RECEIPT, d, sizeof d);
    assert_int_equal(strncmp(d, "relative(ref=0,", 15), 0);
    qv_reader_close(rd);
    const uint64_t targets[4] = {ref_off + 3, ref_off + ref_len / 2, dep_off + 2,
                                 dep_off + dep_len - 9};
    for (int t = 0; t < 4; t++) {
        corrupt_copy(path, bad, targets[t]);
        for (int mapped = 0; mapped < 2; mapped++) {
            struct qv_reader_options ro = {.mmap = mapped};
            assert_int_equal(qv_reader_open(bad, &ro, e->r, &rd, &err), 0);
            struct qv_column_reader *cr = NULL;
            int rc = qv_column_reader_open(rd, 0, C_RECEIPT, e->r, &cr, &err);
            struct ArrowArray got;
            if (!rc) {
                rc = qv_column_reader_read(cr, 0, 30000, &got, &err);
                if (!rc) got.release(&got);
            }
            assert_int_equal(rc, EIO);
            assert_int_equal(err.kind, QV_ERROR_CORRUPT);
            /* Both columns named: the dependent, and the reference; a
             * dependent whose header is damaged cannot say which its
             * reference is, and names itself. */
            if (!strstr(err.message, "receipt") || (t != 2 && !strstr(err.message, "ship")))
                fail_msg("target %d: %s", t, err.message);
            qv_column_reader_close(cr);
            qv_reader_close(rd);
        }
    }
    batch.release(&batch);
    unlink(path);
    unlink(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_chosen_on_correlated_columns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nulls_and_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forced_every_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_dependent_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_reference_and_dependent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_bytes_any_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
