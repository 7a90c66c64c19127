/* `qv scan` and `qv export` read through the scan source, which asks the
 * engine to validate every column it decodes (qv_scan_options.validate): a
 * file whose checksums are right but whose contents are not valid Arrow
 * (invalid UTF-8 in a struct's string child, which the writer's cheap tier
 * lets through) is EIO naming file, column and row group, never handed to
 * the value formatter. With the reader's mmap option, the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli.h"
#include "io/scan_source.h"

static const struct qv_field kids[] = {{.name = "b", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = kids},
};
static const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 2, .children = cols};

#define ROWS 5000
#define BAD 3000

static void test_invalid_utf8_is_eio(void **state) {
    (void)state;
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_error err;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    struct qv_schema *schema;
    if (qv_schema_create(&root, r, &schema, &err)) fail_msg("schema: %s", err.message);
    const char *dir = getenv("QV_TEST_TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/scan_validate_%d.qvr", dir ? dir : "/tmp", (int)getpid());
    struct qv_writer *w;
    struct qv_writer_options wo = {.row_group_rows = 2048};
    if (qv_writer_open(path, schema, &wo, r, &w, &err)) fail_msg("open: %s", err.message);
    struct qv_builder *b = qv_writer_builder(w);
    for (int64_t i = 0; i < ROWS; i++) {
        assert_int_equal(qv_append_int64(qv_builder_column(b, 0), i), 0);
        struct qv_appender *st = qv_builder_column(b, 1);
        assert_int_equal(qv_append_struct_begin(st), 0);
        const char *v = i == BAD ? "x\xc3(" : "fine";
        assert_int_equal(qv_append_string(qv_appender_child(st, 0), v, strlen(v)), 0);
        assert_int_equal(qv_append_struct_end(st), 0);
        if (i % 1000 == 999 && qv_writer_end_rows(w, &err)) fail_msg("rows: %s", err.message);
    }
    if (qv_writer_end_rows(w, &err) || qv_writer_finish(w, &err))
        fail_msg("finish: %s", err.message);
    qv_writer_close(w);

    for (int use_mmap = 0; use_mmap < 2; use_mmap++)
        for (int validate = 0; validate < 2; validate++) {
            struct qv_file *file;
            struct qv_file_options fo = {.pool = pool, .mmap = use_mmap};
            assert_int_equal(qv_file_open(path, &fo, &file, NULL), 0);
            struct cli_scan_options so = {.limit = -1, .validate = validate, .batch_rows = 1000};
            struct cli_scan *s;
            if (cli_scan_open(file, &so, r, &s, &err)) fail_msg("scan: %s", err.message);
            int64_t rows = 0;
            int rc;
            for (;;) {
                struct ArrowArray a;
                rc = cli_scan_next(s, &a, &err);
                if (rc || !a.release) break;
                rows += a.length;
                a.release(&a);
            }
            if (validate) {
                assert_int_equal(rc, EIO);
                assert_true(rows <= BAD);
                assert_non_null(strstr(err.message, "scan_validate_"));
                assert_non_null(strstr(err.message, "column 'st'"));
                assert_non_null(strstr(err.message, "row group 1"));
                assert_non_null(strstr(err.message, "UTF-8"));
            } else {
                assert_int_equal(rc, 0);
                assert_int_equal(rows, ROWS);
            }
            cli_scan_close(s);
            qv_file_close(file);
        }
    unlink(path);
    qv_schema_destroy(schema);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_invalid_utf8_is_eio)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
