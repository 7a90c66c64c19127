/* The file `qv gen` writes (cmd/gen.h, over the qvgen library): read back
 * through the C API, it equals what the generator produces, in the row
 * groups asked for. The generator itself is tested in gen/tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* cmocka after the standard headers it needs */
#include <cmocka.h>

#include "cmd/gen.h"
#include "qvgen/lineitem.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

static int setup(void **state) {
    (void)state;
    struct qv_pool_options po = {.name = "test"};
    if (qv_pool_create(&po, &pool, NULL)) return -1;
    struct qv_reservation_options ro = {.name = "test"};
    return qv_reservation_create(pool, &ro, &res, NULL);
}

static int teardown(void **state) {
    (void)state;
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

static struct qv_builder *new_builder(void) {
    struct qv_schema *s;
    assert_int_equal(qvgen_lineitem_schema(res, &s, NULL), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, res, NULL, &b, NULL), 0);
    qv_schema_destroy(s);
    return b;
}

static void finish(struct qv_builder *b, struct ArrowArray *out) {
    struct qv_error err;
    int rc = qv_builder_finish(b, out, &err);
    if (rc) fail_msg("finish: %s", err.message);
}

/* The file written by `qv gen` reads back equal to the generator's rows,
 * with the requested row groups. */
static void test_file_roundtrip(void **state) {
    (void)state;
    const char *dir = getenv("QV_TEST_TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/lineitem_test_%d.qvr", dir ? dir : "/tmp", (int)getpid());
    struct cli_gen_options o = {.sf = 0.001, .path = path, .row_group_rows = 2048};
    struct cli_gen_result gr;
    struct qv_error err;
    int rc = cli_gen_lineitem_file(&o, res, &gr, &err);
    if (rc) fail_msg("gen: %s", err.message);
    assert_int_equal(gr.orders, 1500);
    assert_int_equal(gr.rows, qvgen_lineitem_count_rows(0, 1500));

    struct qv_reader *rd;
    rc = qv_reader_open(path, NULL, res, &rd, &err);
    if (rc) fail_msg("open: %s", err.message);
    assert_int_equal(qv_reader_num_rows(rd), gr.rows);
    assert_int_equal(qv_reader_num_row_groups(rd), (gr.rows + 2047) / 2048);
    assert_int_equal(qv_reader_row_group_rows(rd, 0), 2048);
    const struct qv_field *root = qvgen_lineitem_schema_template();
    assert_true(qv_field_equal(root, &qv_reader_schema(rd)->root,
                               QV_EQUAL_IGNORE_NAMES | QV_EQUAL_IGNORE_METADATA));

    struct qv_builder *b = new_builder();
    struct qvgen_lineitem_cursor cur;
    assert_int_equal(qvgen_lineitem_cursor_init(&cur, 0.001, 0, 1500, NULL), 0);
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++) {
        struct ArrowArray got, want;
        rc = qv_reader_read_row_group(rd, rg, NULL, 0, res, &got, &err);
        if (rc) fail_msg("read rg %lld: %s", (long long)rg, err.message);
        assert_int_equal(qvgen_lineitem_append(&cur, b, got.length, NULL, NULL), 0);
        finish(b, &want);
        char why[256] = "";
        if (!qv_arrow_array_equal(root, &want, &got, why, sizeof why))
            fail_msg("row group %lld differs: %s", (long long)rg, why);
        got.release(&got);
        want.release(&want);
    }
    assert_true(qvgen_lineitem_cursor_done(&cur));
    qv_builder_destroy(b);
    qv_reader_close(rd);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_roundtrip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
