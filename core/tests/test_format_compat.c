/* Files written by earlier versions of the format still read, value for
 * value. core/tests/data holds files the format 1.0, 2.0, 3.0 and 4.0
 * writers wrote (data/README.md); the rows they hold are regenerated here
 * from their specification (support/compat_fixtures.c) and every row
 * group, and takes (repeated on one column reader, and row by row from the
 * last) of scattered rows, are compared with them, for each version's
 * files. A byte flipped in a 1.0 file's segment is still caught by its
 * whole-segment checksum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pool_env.h"
#include "compat_fixtures.h"
#include "quiver/format.h"
#include "test_util.h"

static void fixture_path(const struct cf_spec *s, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", QV_TEST_DATA_DIR, s->file);
}

/* Rows [start, start + got->length) of `expect` equal `got`, column by
 * column (`cols` maps got's columns to expect's; NULL = the same). */
static void assert_rows_equal(const struct qv_schema *s, const struct ArrowArray *expect,
                              int64_t start, const struct ArrowArray *got, const char *what) {
    for (int64_t c = 0; c < s->root.n_children; c++) {
        struct ArrowArray view = *expect->children[c];
        view.offset += start;
        view.length = got->length;
        char why[512] = "";
        if (!qv_arrow_array_equal(&s->root.children[c], &view, got->children[c], why, sizeof why))
            fail_msg("%s: column %s: %s", what, s->root.children[c].name, why);
    }
}

/* The single row `row` of `expect` equals row `i` of `got`. */
static void assert_row_equal(const struct qv_field *f, const struct ArrowArray *expect, int64_t row,
                             const struct ArrowArray *got, int64_t i, const char *what) {
    struct ArrowArray a = *expect, b = *got;
    a.offset += row;
    a.length = 1;
    b.offset += i;
    b.length = 1;
    char why[512] = "";
    if (!qv_arrow_array_equal(f, &a, &b, why, sizeof why))
        fail_msg("%s: column %s, row %lld: %s", what, f->name, (long long)row, why);
}

static void check_fixture(struct pool_env *e, const struct cf_spec *s,
                          const struct qv_reader_options *ro) {
    char path[1024];
    fixture_path(s, path, sizeof path);
    struct qv_schema *schema;
    struct ArrowArray expect;
    assert_int_equal(cf_schema(s, e->r, &schema), 0);
    assert_int_equal(cf_batch(s, schema, e->r, &expect), 0);
    struct qv_reader *rd;
    struct qv_error err = {0};
    int rc = qv_reader_open(path, ro, e->r, &rd, &err);
    if (rc) fail_msg("%s: %s", path, err.message);
    assert_true(qv_schema_equal(schema, qv_reader_schema(rd), 0));
    assert_int_equal(qv_reader_num_rows(rd), s->rows);
    int64_t nrg = qv_reader_num_row_groups(rd);
    assert_int_equal(nrg, (s->rows + s->row_group_rows - 1) / s->row_group_rows);
    assert_int_equal(qv_reader_open_reads(rd), 1);
    /* Whole row groups. */
    for (int64_t rg = 0; rg < nrg; rg++) {
        struct ArrowArray got;
        rc = qv_reader_read_row_group(rd, rg, NULL, 0, e->r, &got, &err);
        if (rc) fail_msg("%s row group %lld: %s", s->file, (long long)rg, err.message);
        assert_int_equal(got.length, qv_reader_row_group_rows(rd, rg));
        assert_rows_equal(schema, &expect, qv_reader_row_group_first_row(rd, rg), &got, s->file);
        got.release(&got);
    }
    /* Takes of scattered rows, column by column: a few rows per vector, the
     * first and last row of each row group. */
    for (int64_t rg = 0; rg < nrg; rg++) {
        int64_t rows = qv_reader_row_group_rows(rd, rg), first = qv_reader_row_group_first_row(rd, rg);
        int64_t take[64], n = 0;
        for (int64_t t = 0; t < rows && n < 63; t += 1 + (t * 7919 + 13) % 700) take[n++] = t;
        if (take[n - 1] != rows - 1) take[n++] = rows - 1;
        for (int32_t c = 0; c < (int32_t)schema->root.n_children; c++) {
            struct qv_column_reader *cr;
            rc = qv_column_reader_open(rd, rg, c, e->r, &cr, &err);
            if (rc) fail_msg("%s: %s", s->file, err.message);
            /* Three times on the same reader (the decoders keep what the
             * takes come back to), then one row a take, last to first,
             * twice. */
            for (int rep = 0; rep < 3; rep++) {
                struct ArrowArray got;
                rc = qv_column_reader_take(cr, take, n, &got, &err);
                if (rc) fail_msg("%s take: %s", s->file, err.message);
                assert_int_equal(got.length, n);
                for (int64_t i = 0; i < n; i++)
                    assert_row_equal(&schema->root.children[c], expect.children[c],
                                     first + take[i], &got, i, s->file);
                got.release(&got);
            }
            for (int rep = 0; rep < 2; rep++)
                for (int64_t i = n - 1; i >= 0; i--) {
                    struct ArrowArray got;
                    rc = qv_column_reader_take(cr, take + i, 1, &got, &err);
                    if (rc) fail_msg("%s take: %s", s->file, err.message);
                    assert_int_equal(got.length, 1);
                    assert_row_equal(&schema->root.children[c], expect.children[c],
                                     first + take[i], &got, 0, s->file);
                    got.release(&got);
                }
            qv_column_reader_close(cr);
        }
    }
    qv_reader_close(rd);
    expect.release(&expect);
    qv_schema_destroy(schema);
}

static void test_read_fixtures(void **state) {
    struct pool_env *e = *state;
    for (int i = 0; i < cf_n_specs; i++) check_fixture(e, &cf_specs[i], NULL);
}

static void test_read_fixtures_mapped(void **state) {
    struct pool_env *e = *state;
    struct qv_reader_options ro = {.mmap = 1};
    for (int i = 0; i < cf_n_specs; i++) check_fixture(e, &cf_specs[i], &ro);
}

static int find_zstd(void *ctx, const struct qv_enc_node_info *info) {
    if (strcmp(info->name, "zstd") == 0) ++*(int *)ctx;
    return 0;
}

/* The long-strings fixture does hold zstd frames (what it is for). */
static void test_strings_fixture_has_zstd(void **state) {
    struct pool_env *e = *state;
    const struct cf_spec *s = NULL;
    for (int i = 0; i < cf_n_specs; i++)
        if (cf_specs[i].strings) s = &cf_specs[i];
    assert_non_null(s);
    char path[1024];
    fixture_path(s, path, sizeof path);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    int32_t node = qv_reader_column_node(rd, 1);
    struct qv_chunk_info ci;
    assert_int_equal(qv_reader_chunk_info(rd, 0, node, &ci, &err), 0);
    int zstd = 0;
    for (int i = 0; i < ci.n_segments; i++) {
        struct qv_segment_info si;
        assert_int_equal(qv_reader_segment_info(rd, 0, node, i, &si, &err), 0);
        if (si.role == QV_SEGMENT_VALUES)
            assert_int_equal(qv_reader_segment_describe(rd, 0, node, i, e->r, NULL, 0, find_zstd,
                                                        &zstd, &err), 0);
    }
    assert_true(zstd > 0);
    qv_reader_close(rd);
}

/* A byte flipped in the middle of a values segment of an old file: reading
 * that column fails with EIO naming the column and row group (the segment's
 * whole checksum), other columns still read. */
static void test_old_file_corrupt_segment(void **state) {
    struct pool_env *e = *state;
    const struct cf_spec *s = &cf_specs[0];
    char path[1024], copy[1024];
    fixture_path(s, path, sizeof path);
    size_t size = 0;
    unsigned char *bytes = tu_read_file(path, &size);
    assert_non_null(bytes);
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, e->r, &rd, &err), 0);
    int32_t node = qv_reader_column_node(rd, 4); /* i64, never null: one values segment */
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 1, node, 0, &si, &err), 0);
    qv_reader_close(rd);
    bytes[si.offset + si.length / 2] ^= 0x40;
    tu_path(copy, sizeof copy, "compat_corrupt.qvr");
    FILE *f = fopen(copy, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    fclose(f);
    free(bytes);
    assert_int_equal(qv_reader_open(copy, NULL, e->r, &rd, &err), 0);
    struct qv_column_reader *cr = NULL;
    assert_int_equal(qv_column_reader_open(rd, 1, 4, e->r, &cr, &err), EIO);
    assert_non_null(strstr(err.message, "i64"));
    assert_non_null(strstr(err.message, "row group 1"));
    assert_int_equal(qv_column_reader_open(rd, 0, 4, e->r, &cr, &err), 0);
    qv_column_reader_close(cr);
    assert_int_equal(qv_column_reader_open(rd, 1, 3, e->r, &cr, &err), 0);
    qv_column_reader_close(cr);
    qv_reader_close(rd);
    remove(copy);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_fixtures, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_read_fixtures_mapped, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_strings_fixture_has_zstd, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_old_file_corrupt_segment, pool_env_setup,
                                        pool_env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
