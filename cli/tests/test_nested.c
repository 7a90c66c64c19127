/* Every Arrow type the format stores, nested ones included, written to a
 * file, read back through the CLI's scan source (which `qv scan` and
 * `qv export` use) and rendered as text: checks the value formatter's
 * JSON-like nested output and the projected, limited batch walk. */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli.h"
#include "io/scan_source.h"
#include "term/value_format.h"

__extension__ typedef __int128 i128;

static const struct qv_field s_kids[] = {{.name = "a", .type = QV_TYPE_INT32, .nullable = true},
                                         {.name = "b", .type = QV_TYPE_UTF8, .nullable = true}};
static const struct qv_field l_kid[] = {{.name = "item", .type = QV_TYPE_FLOAT64, .nullable = true}};
static const struct qv_field m_entry_kids[] = {
    {.name = "key", .type = QV_TYPE_UTF8},
    {.name = "value", .type = QV_TYPE_INT64, .nullable = true}};
static const struct qv_field m_kid[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2, .children = m_entry_kids}};
static const struct qv_field f_kid[] = {{.name = "item", .type = QV_TYPE_INT16, .nullable = true}};
static const struct qv_field ll_kid[] = {{.name = "item", .type = QV_TYPE_LARGE_UTF8, .nullable = true}};
static const struct qv_field mk_kids[] = {
    {.name = "key", .type = QV_TYPE_DATE32},
    {.name = "value", .type = QV_TYPE_BOOL, .nullable = true}};
static const struct qv_field mk_kid[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2, .children = mk_kids}};

static const struct qv_field cols[] = {
    {.name = "s", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = s_kids},
    {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = l_kid},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = m_kid},
    {.name = "f", .type = QV_TYPE_FIXED_LIST, .nullable = true, .list_size = 2, .n_children = 1,
     .children = f_kid},
    {.name = "d", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 30, .scale = 3},
    {.name = "t", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_NS, .timezone = "UTC"},
    {.name = "bin", .type = QV_TYPE_BINARY, .nullable = true},
    {.name = "fb", .type = QV_TYPE_FIXED_BINARY, .nullable = true, .byte_width = 3},
    {.name = "h", .type = QV_TYPE_FLOAT16, .nullable = true},
    {.name = "u", .type = QV_TYPE_UINT64, .nullable = true},
    {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "ll", .type = QV_TYPE_LARGE_LIST, .nullable = true, .n_children = 1, .children = ll_kid},
    {.name = "mk", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = mk_kid},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
static const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = NCOLS, .children = cols};

/* Expected text per row, columns joined by " ; " (nulls as <null>). */
static const char *const want[] = {
    "{\"a\": 1, \"b\": \"x\\\"y\"} ; [1.5, null, \"NaN\"] ; {\"k1\": 1, \"k2\": null} ; [1, 2] ; "
    "-12345678901234567890.123 ; 2023-11-14T22:13:20.123456789Z ; 00ff ; 616263 ; 1 ; "
    "18446744073709551615 ; true ; [\"a\", \"\xc3\xbc\"] ; {\"2024-01-31\": false}",
    "<null> ; <null> ; <null> ; <null> ; <null> ; <null> ; <null> ; <null> ; <null> ; <null> ; "
    "<null> ; <null> ; <null>",
    "{\"a\": null, \"b\": \"\"} ; [] ; {} ; [null, 3] ; 0.000 ; 1969-12-31T23:59:59.999999999Z ; "
    " ; 000000 ; -2 ; 0 ; false ; [null] ; {}",
};
#define NROWS 3

static void append_rows(struct qv_builder *b) {
    struct qv_appender *a[NCOLS];
    for (int c = 0; c < NCOLS; c++) a[c] = qv_builder_column(b, c);
    /* row 0 */
    assert_int_equal(qv_append_struct_begin(a[0]), 0);
    qv_append_int32(qv_appender_child(a[0], 0), 1);
    qv_append_string(qv_appender_child(a[0], 1), "x\"y", 3);
    qv_append_struct_end(a[0]);
    qv_append_list_begin(a[1]);
    qv_append_float64(qv_appender_child(a[1], 0), 1.5);
    qv_append_null(qv_appender_child(a[1], 0));
    qv_append_float64(qv_appender_child(a[1], 0), (double)NAN);
    qv_append_list_end(a[1]);
    qv_append_map_begin(a[2]);
    qv_append_string(qv_appender_map_keys(a[2]), "k1", 2);
    qv_append_int64(qv_appender_map_values(a[2]), 1);
    qv_append_string(qv_appender_map_keys(a[2]), "k2", 2);
    qv_append_null(qv_appender_map_values(a[2]));
    qv_append_map_end(a[2]);
    qv_append_list_begin(a[3]);
    qv_append_int16(qv_appender_child(a[3], 0), 1);
    qv_append_int16(qv_appender_child(a[3], 0), 2);
    qv_append_list_end(a[3]);
    i128 dv = -(i128)12345678901234567890ull * 1000 - 123;
    qv_append_decimal128(a[4], (uint64_t)dv, (int64_t)(dv >> 64));
    qv_append_timestamp(a[5], 1700000000123456789LL);
    qv_append_binary(a[6], "\x00\xff", 2);
    qv_append_fixed_binary(a[7], "abc", 3);
    qv_append_float16(a[8], 0x3c00);
    qv_append_uint64(a[9], UINT64_MAX);
    qv_append_bool(a[10], true);
    qv_append_list_begin(a[11]);
    qv_append_string(qv_appender_child(a[11], 0), "a", 1);
    qv_append_string(qv_appender_child(a[11], 0), "\xc3\xbc", 2);
    qv_append_list_end(a[11]);
    qv_append_map_begin(a[12]);
    qv_append_date32(qv_appender_map_keys(a[12]), 19753);
    qv_append_bool(qv_appender_map_values(a[12]), false);
    qv_append_map_end(a[12]);
    /* row 1: all null */
    for (int c = 0; c < NCOLS; c++) assert_int_equal(qv_append_null(a[c]), 0);
    /* row 2 */
    qv_append_struct_begin(a[0]);
    qv_append_null(qv_appender_child(a[0], 0));
    qv_append_string(qv_appender_child(a[0], 1), "", 0);
    qv_append_struct_end(a[0]);
    qv_append_list_begin(a[1]);
    qv_append_list_end(a[1]);
    qv_append_map_begin(a[2]);
    qv_append_map_end(a[2]);
    qv_append_list_begin(a[3]);
    qv_append_null(qv_appender_child(a[3], 0));
    qv_append_int16(qv_appender_child(a[3], 0), 3);
    qv_append_list_end(a[3]);
    qv_append_decimal64(a[4], 0);
    qv_append_timestamp(a[5], -1);
    qv_append_binary(a[6], "", 0);
    qv_append_fixed_binary(a[7], "\0\0\0", 3);
    qv_append_float16(a[8], 0xc000);
    qv_append_uint64(a[9], 0);
    qv_append_bool(a[10], false);
    qv_append_list_begin(a[11]);
    qv_append_null(qv_appender_child(a[11], 0));
    qv_append_list_end(a[11]);
    qv_append_map_begin(a[12]);
    qv_append_map_end(a[12]);
    const struct qv_error *e = qv_builder_error(b);
    if (e->code) fail_msg("builder: %s", e->message);
}

/* Runs a subcommand in-process with stdout captured into `out_path`;
 * returns its exit code. */
static int run_cli(int (*cmd)(struct cli_ctx *, int, char **), const char *name,
                   const char *out_path, int argc, char **argv) {
    fflush(stdout);
    int saved = dup(1);
    FILE *f = fopen(out_path, "w");
    assert_non_null(f);
    dup2(fileno(f), 1);
    struct cli_ctx ctx = {.command = name};
    int rc = cmd(&ctx, argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    fclose(f);
    return rc;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc((size_t)n + 1, 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

static void expect_in(const char *text, const char *needle) {
    if (!strstr(text, needle)) fail_msg("output lacks [%s]", needle);
}

static void render(const struct qv_field *r, const struct ArrowArray *batch, int64_t i,
                   struct cli_buf *out) {
    cli_buf_clear(out);
    for (int64_t c = 0; c < r->n_children; c++) {
        if (c) cli_buf_puts(out, " ; ");
        if (cli_format_value(out, &r->children[c], batch->children[c], batch->offset + i))
            cli_buf_puts(out, "<null>");
    }
}

static void test_nested(void **state) {
    (void)state;
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_pool_options po = {0};
    struct qv_reservation_options ro = {0};
    struct qv_error err;
    assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, &ro, &r, NULL), 0);
    struct qv_schema *schema;
    if (qv_schema_create(&root, r, &schema, &err)) fail_msg("schema: %s", err.message);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(schema, r, NULL, &b, NULL), 0);
    append_rows(b);
    struct ArrowArray built;
    if (qv_builder_finish(b, &built, &err)) fail_msg("finish: %s", err.message);
    struct cli_buf text;
    cli_buf_init(&text);
    for (int64_t i = 0; i < NROWS; i++) {
        render(&schema->root, &built, i, &text);
        if (strcmp(cli_buf_str(&text), want[i]) != 0)
            fail_msg("row %lld\n got: %s\nwant: %s", (long long)i, cli_buf_str(&text), want[i]);
    }

    /* Through a file and the scan source, whole and projected / limited. */
    const char *dir = getenv("QV_TEST_TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/nested_%d.qvr", dir ? dir : "/tmp", (int)getpid());
    struct qv_writer *w;
    if (qv_writer_open(path, schema, NULL, r, &w, &err)) fail_msg("open: %s", err.message);
    for (int k = 0; k < 700; k++) /* 2100 rows: several vectors */
        if (qv_writer_write(w, &built, &err)) fail_msg("write: %s", err.message);
    if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
    built.release(&built);

    struct qv_file *file;
    struct qv_file_options fopts = {.pool = pool};
    if (qv_file_open(path, &fopts, &file, &err)) fail_msg("open: %s", err.message);
    struct cli_scan *scan;
    struct cli_scan_options so = {.limit = -1, .batch_rows = 1000, .validate = 1};
    assert_int_equal(cli_scan_open(file, &so, r, &scan, &err), 0);
    int64_t row = 0;
    for (;;) {
        struct ArrowArray batch;
        if (cli_scan_next(scan, &batch, &err)) fail_msg("scan: %s", err.message);
        if (!batch.release) break;
        assert_true(batch.length <= 1000);
        for (int64_t i = 0; i < batch.length; i++, row++) {
            render(cli_scan_root(scan), &batch, i, &text);
            if (strcmp(cli_buf_str(&text), want[row % NROWS]) != 0)
                fail_msg("file row %lld\n got: %s\nwant: %s", (long long)row, cli_buf_str(&text),
                         want[row % NROWS]);
        }
        batch.release(&batch);
    }
    assert_int_equal(row, 700 * NROWS);
    cli_scan_close(scan);

    /* A take in any order, repeats included, across vectors and batches:
     * every nested type is copied row by row into the reordered output. */
    static const int64_t order[] = {2099, 0, 1500, 1, 1500, 1024, 3, 2, 1023, 2099};
    const int64_t n_order = (int64_t)(sizeof order / sizeof order[0]);
    for (int with_limit = 0; with_limit < 2; with_limit++) {
        struct cli_scan_options to = {.limit = with_limit ? 7 : -1, .batch_rows = 4,
                                      .validate = 1, .take = order, .n_take = n_order};
        if (cli_scan_open(file, &to, r, &scan, &err)) fail_msg("take: %s", err.message);
        int64_t k = 0;
        for (;;) {
            struct ArrowArray tb;
            if (cli_scan_next(scan, &tb, &err)) fail_msg("take: %s", err.message);
            if (!tb.release) break;
            assert_true(tb.length <= 4);
            for (int64_t i = 0; i < tb.length; i++, k++) {
                render(cli_scan_root(scan), &tb, i, &text);
                if (strcmp(cli_buf_str(&text), want[order[k] % NROWS]) != 0)
                    fail_msg("take #%lld (row %lld)\n got: %s\nwant: %s", (long long)k,
                             (long long)order[k], cli_buf_str(&text), want[order[k] % NROWS]);
            }
            tb.release(&tb);
        }
        assert_int_equal(k, with_limit ? 7 : n_order);
        cli_scan_close(scan);
    }

    /* Columns by name: the file layer's rule (unknown names are ENOENT
     * naming them; nested fields by path). */
    struct cli_scan_options bad = {.columns = "s,zz", .limit = -1};
    scan = (struct cli_scan *)1;
    assert_int_equal(cli_scan_open(file, &bad, r, &scan, &err), ENOENT);
    assert_null(scan);
    assert_non_null(strstr(err.message, "'zz'"));
    struct cli_scan_options nested = {.columns = "s.b,mk", .limit = -1, .validate = 1};
    assert_int_equal(cli_scan_open(file, &nested, r, &scan, &err), 0);
    const struct qv_field *nroot = cli_scan_root(scan);
    assert_int_equal(nroot->n_children, 2);
    assert_string_equal(nroot->children[0].name, "s");
    assert_int_equal(nroot->children[0].n_children, 1);
    assert_string_equal(nroot->children[0].children[0].name, "b");
    cli_scan_close(scan);
    struct cli_scan_options po2 = {.columns = "mk,s", .limit = 4, .validate = 1};
    assert_int_equal(cli_scan_open(file, &po2, r, &scan, &err), 0);
    struct ArrowArray batch;
    assert_int_equal(cli_scan_next(scan, &batch, &err), 0);
    assert_int_equal(batch.length, 4);
    render(cli_scan_root(scan), &batch, 0, &text);
    assert_string_equal(cli_buf_str(&text), "{\"2024-01-31\": false} ; {\"a\": 1, \"b\": \"x\\\"y\"}");
    batch.release(&batch);
    assert_int_equal(cli_scan_next(scan, &batch, &err), 0);
    assert_null(batch.release); /* the limit ends the scan */
    cli_scan_close(scan);

    qv_file_close(file);

    /* The commands themselves on this file. */
    char out[1100];
    snprintf(out, sizeof out, "%s.out", path);
    char *argv_json[] = {"inspect", "--json", path};
    assert_int_equal(run_cli(cli_cmd_inspect, "inspect", out, 3, argv_json), 0);
    char *text_out = slurp(out);
    expect_in(text_out, "\"path\": \"m.entries.key\"");
    expect_in(text_out, "\"role\": \"validity\"");
    expect_in(text_out, "\"role\": \"offsets\"");
    expect_in(text_out, "\"min\": \"-12345678901234567890.123\"");
    expect_in(text_out, "\"max\": \"0.000\"");
    expect_in(text_out, "\"min\": \"1969-12-31T23:59:59.999999999Z\"");
    expect_in(text_out, "\"max\": 18446744073709551615");
    expect_in(text_out, "\"nan_count\": 700");
    expect_in(text_out, "\"num_nodes\": 24");
    free(text_out);
    char *argv_text[] = {"inspect", path};
    assert_int_equal(run_cli(cli_cmd_inspect, "inspect", out, 2, argv_text), 0);
    text_out = slurp(out);
    expect_in(text_out, "      key: utf8 not null");
    expect_in(text_out, "min false, max true");
    free(text_out);
    char *argv_export[] = {"export", path, "-", "--columns", "s,d,ll"};
    assert_int_equal(run_cli(cli_cmd_export, "export", out, 5, argv_export), 0);
    text_out = slurp(out);
    expect_in(text_out, "s,d,ll\n\"{\"\"a\"\": 1, \"\"b\"\": \"\"x\\\"\"y\"\"}\","
                        "-12345678901234567890.123,\"[\"\"a\"\", \"\"\xc3\xbc\"\"]\"\n,,\n");
    free(text_out);
    char *argv_scan[] = {"scan", path, "--limit", "3", "--columns", "f,h,mk"};
    assert_int_equal(run_cli(cli_cmd_scan, "scan", out, 6, argv_scan), 0);
    text_out = slurp(out);
    expect_in(text_out, "f         |    h | mk");
    expect_in(text_out, "[null, 3]");
    expect_in(text_out, "(3 rows)");
    free(text_out);
    unlink(out);
    unlink(path);
    cli_buf_free(&text);
    qv_builder_destroy(b);
    qv_schema_destroy(schema);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_nested)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
