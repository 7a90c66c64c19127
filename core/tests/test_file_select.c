/* The name rule (arrow.h, "Field paths") through qv_file_select and the
 * predicate language: dots, quotes, "" escapes, spaces, case, ambiguity,
 * unknown names with the closest field, non-UTF-8 names, lists and maps;
 * and a filter and a projection naming the same field the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/quiver.h"
#include "test_util.h"

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_file *file;
static char path[512];

/* Columns (index: name):
 *  0 "a.b" int32          1 a struct<b int32, "c.d" int32, Mixed int32>
 *  2 q"uote int32         3 " lead" int32    4 dup int32   5 dup int32
 *  6 Kx int32   7 kX int32   8 "\xff\xfe" int32 (not UTF-8)
 *  9 l list<item: struct<f int32>>   10 m map<utf8, int32>   11 "my col" int32 */
static const struct qv_field A_KIDS[] = {
    {.name = "b", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "c.d", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "Mixed", .type = QV_TYPE_INT32, .nullable = true},
};
static const struct qv_field F_KID[] = {{.name = "f", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field L_ITEM[] = {
    {.name = "item", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = F_KID}};
static const struct qv_field M_KV[] = {
    {.name = "key", .type = QV_TYPE_UTF8, .nullable = false},
    {.name = "value", .type = QV_TYPE_INT32, .nullable = true},
};
static const struct qv_field M_ENTRIES[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2, .children = M_KV}};
static const struct qv_field COLS[] = {
    {.name = "a.b", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "a", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 3, .children = A_KIDS},
    {.name = "q\"uote", .type = QV_TYPE_INT32, .nullable = true},
    {.name = " lead", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "dup", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "dup", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "Kx", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "kX", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "\xff\xfe", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = L_ITEM},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = M_ENTRIES},
    {.name = "my col", .type = QV_TYPE_INT32, .nullable = true},
};
#define NCOL 12
static const struct qv_field ROOT = {.type = QV_TYPE_STRUCT, .n_children = NCOL, .children = COLS};
#define ROWS 100

/* Row i: every int32 column holds i * 10 + column (a.* fields: 100 + ...),
 * so which column a name selected shows in the values. */
static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "file_select.qvr");
    struct qv_schema *schema;
    struct qv_error err = {0};
    if (qv_schema_create(&ROOT, res, &schema, &err)) fail_msg("%s", err.message);
    struct qv_writer *w;
    if (qv_writer_open(path, schema, NULL, res, &w, &err)) fail_msg("%s", err.message);
    struct qv_builder *b = qv_writer_builder(w);
    for (int64_t i = 0; i < ROWS; i++) {
        for (int c = 0; c < NCOL; c++) {
            struct qv_appender *a = qv_builder_column(b, c);
            int rc = 0;
            if (c == 1) {
                rc = qv_append_struct_begin(a);
                for (int k = 0; !rc && k < 3; k++)
                    rc = qv_append_int32(qv_appender_child(a, k), (int32_t)(1000 + i * 10 + k));
                if (!rc) rc = qv_append_struct_end(a);
            } else if (c == 9) {
                rc = qv_append_list_begin(a);
                struct qv_appender *item = qv_appender_child(a, 0);
                if (!rc) rc = qv_append_struct_begin(item);
                if (!rc) rc = qv_append_int32(qv_appender_child(item, 0), (int32_t)i);
                if (!rc) rc = qv_append_struct_end(item);
                if (!rc) rc = qv_append_list_end(a);
            } else if (c == 10) {
                rc = qv_append_map_begin(a);
                if (!rc) rc = qv_append_string(qv_appender_map_keys(a), "k", 1);
                if (!rc) rc = qv_append_int32(qv_appender_map_values(a), (int32_t)i);
                if (!rc) rc = qv_append_map_end(a);
            } else {
                rc = qv_append_int32(a, (int32_t)(i * 10 + c));
            }
            if (rc) fail_msg("append: %s", qv_builder_error(b)->message);
        }
    }
    if (qv_writer_end_rows(w, &err) || qv_writer_finish(w, &err)) fail_msg("%s", err.message);
    qv_writer_close(w);
    qv_schema_destroy(schema);
    if (qv_file_open(path, NULL, &file, &err)) fail_msg("%s", err.message);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_file_close(file);
    unlink(path);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return 0;
}

/* Resolves one name; checks the column and the child steps. */
static void expect_path(const char *name, int32_t column, int32_t depth, const int32_t *steps) {
    struct qv_selection *sel;
    struct qv_error err = {0};
    if (qv_file_select(file, &name, 1, &sel, &err)) fail_msg("'%s': %s", name, err.message);
    int32_t n;
    const struct qv_column_path *p = qv_selection_paths(sel, &n);
    assert_int_equal(n, 1);
    if (p->column != column || p->depth != depth)
        fail_msg("'%s': column %d depth %d, expected %d / %d", name, p->column, p->depth, column, depth);
    for (int32_t i = 0; i < depth; i++) assert_int_equal(p->path[i], steps[i]);
    qv_selection_destroy(sel);
}

static void expect_error(const char *name, int code, const char *needle) {
    struct qv_selection *sel = (struct qv_selection *)1;
    struct qv_error err = {0};
    int rc = qv_file_select(file, &name, 1, &sel, &err);
    if (rc != code) fail_msg("'%s': %d (%s), expected %d", name, rc, err.message, code);
    assert_null(sel);
    if (!strstr(err.message, needle)) fail_msg("'%s': '%s' lacks '%s'", name, err.message, needle);
    assert_int_equal(err.kind, qv_error_kind_of(code));
}

static void test_dots_and_quotes(void **state) {
    (void)state;
    static const int32_t b[] = {0}, cd[] = {1}, mixed[] = {2};
    expect_path("a.b", 1, 1, b);           /* a path: field b of struct a */
    expect_path("\"a.b\"", 0, 0, NULL);     /* one name holding a dot */
    expect_path("a.\"c.d\"", 1, 1, cd);
    expect_path("\"a\".\"c.d\"", 1, 1, cd);
    expect_path(" a . b ", 1, 1, b);        /* spaces around names */
    expect_path("\"q\"\"uote\"", 2, 0, NULL); /* "" stands for a quote */
    expect_path("\" lead\"", 3, 0, NULL);   /* a leading space must be quoted */
    expect_path("my col", 11, 0, NULL);     /* inner spaces need no quotes */
    expect_path("a.mixed", 1, 1, mixed);    /* unquoted: ASCII case ignored */
    expect_path("A.B", 1, 1, b);
    expect_path("Kx", 6, 0, NULL);          /* an exact match wins */
    expect_path("kX", 7, 0, NULL);
    expect_path("\xff\xfe", 8, 0, NULL);    /* names are bytes */
    expect_path("\"\xff\xfe\"", 8, 0, NULL);
    expect_error("a.\"mixed\"", ENOENT, "struct 'a' has no field 'mixed' (closest: 'Mixed')");
    expect_error("\" lead\" x", EINVAL, "expected '.' after the quoted name");
    expect_error("q\"uote", EINVAL, "must be quoted");
    expect_error("\"open", EINVAL, "unterminated quoted name");
    expect_error("a..b", EINVAL, "empty name at position 3");
    expect_error("", EINVAL, "empty name");
    expect_error("lead", ENOENT, "no column 'lead' (closest: ' lead')");
}

/* A name that is not UTF-8 is handed to Arrow consumers in its display
 * form (\xNN for each stray byte), and that form selects it too. */
static void test_display_form_of_non_utf8_names(void **state) {
    (void)state;
    char buf[32];
    assert_int_equal(qv_field_name_display("\xff\xfe", buf, sizeof buf), 8);
    assert_string_equal(buf, "\\xff\\xfe");
    assert_int_equal(qv_field_name_display("caf\xc3\xa9", NULL, 0), 5); /* valid: unchanged */
    assert_int_equal(qv_field_name_display("a\xff", buf, 4), 5); /* whole pieces only, counted */
    assert_string_equal(buf, "a");
    struct ArrowSchema sc;
    struct qv_error err = {0};
    if (qv_file_export_schema(file, &sc, &err)) fail_msg("%s", err.message);
    assert_string_equal(sc.children[8]->name, "\\xff\\xfe");
    expect_path(sc.children[8]->name, 8, 0, NULL); /* the exported name selects it */
    for (int64_t i = 0; i < sc.n_children; i++) {
        const char *nm = sc.children[i]->name;
        assert_int_equal(qv_field_name_display(nm, NULL, 0), strlen(nm)); /* all UTF-8 */
    }
    sc.release(&sc);
    expect_path("\"\\xff\\xfe\"", 8, 0, NULL);
    expect_error("\\xff", ENOENT, "no column");
}

static void test_ambiguous_and_unknown(void **state) {
    (void)state;
    expect_error("dup", EINVAL, "ambiguous column name 'dup': fields 4 and 5 both have that name");
    expect_error("\"dup\"", EINVAL, "ambiguous column name 'dup'");
    expect_error("kx", EINVAL, "fields 6 ('Kx') and 7 ('kX') match it ignoring case");
    expect_error("nope", ENOENT, "no column 'nope'");
    expect_error("nope", ENOENT, "file '");
    expect_error("a.zz", ENOENT, "column 'a.zz': struct 'a' has no field 'zz'");
    expect_error("\xff", ENOENT, "no column '\xff'");
    expect_error("a.b.c", ENOENT, "'b' is int32, not a struct");
    /* Several names: the first bad one is reported. */
    const char *names[] = {"a.b", "zzz"};
    struct qv_selection *sel;
    struct qv_error err = {0};
    assert_int_equal(qv_file_select(file, names, 2, &sel, &err), ENOENT);
    assert_non_null(strstr(err.message, "'zzz'"));
    /* No names: every column, whole. */
    assert_int_equal(qv_file_select(file, NULL, 0, &sel, &err), 0);
    int32_t n;
    const struct qv_column_path *p = qv_selection_paths(sel, &n);
    assert_int_equal(n, NCOL);
    for (int32_t i = 0; i < n; i++) {
        assert_int_equal(p[i].column, i);
        assert_int_equal(p[i].depth, 0);
    }
    qv_selection_destroy(sel);
}

static void test_lists_and_maps(void **state) {
    (void)state;
    static const int32_t item[] = {0}, f[] = {0, 0}, key[] = {0, 0}, value[] = {0, 1};
    expect_path("l.item", 9, 1, item);
    expect_path("l.item.f", 9, 2, f);
    expect_path("m.key", 10, 2, key);
    expect_path("m.VALUE", 10, 2, value);
    expect_error("l.element", ENOENT, "list 'l' has no field 'element' (closest: 'item')");
    expect_error("m.entries", ENOENT, "map 'm' has no field 'entries'");
    /* A predicate steps through structs only. */
    struct qv_file_scan_options o = {.scan = {.filter = "l.item.f = 1"}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    assert_int_equal(qv_file_scan(file, &o, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "not a struct"));
}

/* Scans `names` with `filter`; returns the rows and the first value of the
 * first output column (through its first child for a struct). */
static int64_t scan_names(const char *const *names, int32_t n, const char *filter, int32_t *first) {
    struct qv_file_scan_options o = {.columns = names, .n_columns = n, .scan = {.filter = filter}};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    if (qv_file_scan(file, &o, &st, &err)) fail_msg("%s", err.message);
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray b;
        if (st.get_next(&st, &b)) fail_msg("%s", st.get_last_error(&st));
        if (!b.release) break;
        const struct ArrowArray *c = b.children[0];
        if (c->n_children) c = c->children[0];
        if (rows == 0 && b.length) *first = ((const int32_t *)c->buffers[1])[c->offset];
        rows += b.length;
        b.release(&b);
    }
    st.release(&st);
    return rows;
}

static void test_filter_and_projection_agree(void **state) {
    (void)state;
    int32_t v = -1;
    /* "a.b" (column 0: i * 10) and a.b (struct field: 1000 + i * 10). */
    static const char *const col0[] = {"\"a.b\""};
    assert_int_equal(scan_names(col0, 1, "\"a.b\" = 500", &v), 1);
    assert_int_equal(v, 500);
    static const char *const field[] = {"a.b"};
    assert_int_equal(scan_names(field, 1, "a.b = 1500", &v), 1);
    assert_int_equal(v, 1500);
    assert_int_equal(scan_names(field, 1, "A.B >= 1990", &v), 1);
    assert_int_equal(v, 1990);
    assert_int_equal(scan_names(col0, 1, "\"q\"\"uote\" = 52", &v), 1);
    assert_int_equal(v, 50);
    /* The projected struct keeps only b. */
    struct qv_file_scan_options o = {.columns = field, .n_columns = 1};
    struct ArrowArrayStream st;
    assert_int_equal(qv_file_scan(file, &o, &st, NULL), 0);
    struct ArrowSchema sc;
    assert_int_equal(st.get_schema(&st, &sc), 0);
    assert_int_equal(sc.n_children, 1);
    assert_string_equal(sc.children[0]->name, "a");
    assert_int_equal(sc.children[0]->n_children, 1);
    assert_string_equal(sc.children[0]->children[0]->name, "b");
    sc.release(&sc);
    st.release(&st);
    /* Unknown names in a filter stay EINVAL (a bad predicate). */
    struct qv_file_scan_options bad = {.scan = {.filter = "nope = 1"}};
    struct qv_error err = {0};
    assert_int_equal(qv_file_scan(file, &bad, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "no column 'nope'"));
}

/* Every refusal of a file's scan names the file once: the scan's own
 * (rows to take out of range or out of order, a filter naming no column,
 * a bad count) as well as the file layer's. */
static void expect_scan_refused(const struct qv_file_scan_options *o, const char *needle) {
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    assert_int_equal(qv_file_scan(file, o, &st, &err), EINVAL);
    assert_null(st.release);
    char named[600];
    snprintf(named, sizeof named, "file '%s': ", path);
    if (strncmp(err.message, named, strlen(named)) != 0 || !strstr(err.message, needle))
        fail_msg("'%s' does not start with '%s' or lacks '%s'", err.message, named, needle);
    if (strstr(err.message + strlen(named), "file '")) fail_msg("'%s' names the file twice", err.message);
}

static void test_refusals_name_the_file(void **state) {
    (void)state;
    static const int64_t beyond[] = {1, 1 << 20}, unsorted[] = {5, 3};
    struct qv_file_scan_options o = {.scan = {.take = beyond, .n_take = 2}};
    expect_scan_refused(&o, "scan: take: row 1048576 at position 1 is out of range");
    o.scan.take = unsorted;
    expect_scan_refused(&o, "scan: take: row 3 at position 1 is not above row 5 before it");
    struct qv_file_scan_options f = {.scan = {.filter = "nope = 1"}};
    expect_scan_refused(&f, "no column 'nope'");
    struct qv_file_scan_options c = {.scan = {.batch_rows = -5}};
    expect_scan_refused(&c, "counts must not be negative");
    static const char *const cols[] = {"nope"};
    struct qv_file_scan_options n = {.columns = cols, .n_columns = 1};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    assert_int_equal(qv_file_scan(file, &n, &st, &err), ENOENT);
    assert_non_null(strstr(err.message, path));
}

/* The arrow part's functions directly: parse limits and NULLs. */
static void test_parse_directly(void **state) {
    (void)state;
    char buf[64];
    const char *names[4];
    bool quoted[4];
    int32_t n;
    struct qv_error err = {0};
    assert_int_equal(qv_field_path_parse("x.\"y\"\"z\". w", buf, sizeof buf, names, quoted, 4, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "x");
    assert_string_equal(names[1], "y\"z");
    assert_string_equal(names[2], "w");
    assert_false(quoted[0]);
    assert_true(quoted[1]);
    assert_int_equal(qv_field_path_parse("a.b.c.d.e", buf, sizeof buf, names, quoted, 4, &n, &err), EINVAL);
    assert_non_null(strstr(err.message, "more than 4 names"));
    assert_int_equal(qv_field_path_parse("abc", buf, 2, names, quoted, 4, &n, &err), EINVAL);
    assert_int_equal(qv_field_path_parse(NULL, buf, sizeof buf, names, quoted, 4, &n, &err), EINVAL);
    struct qv_field_ref ref;
    const char *deep[] = {"a", "b"};
    assert_int_equal(qv_field_resolve_names(&ROOT, deep, NULL, 2, 0, NULL, &ref, &err), 0);
    assert_int_equal(ref.column, 1);
    assert_ptr_equal(ref.field, &A_KIDS[0]);
    const char *upper[] = {"A"};
    /* quoted == NULL: every name quoted, so no case folding. */
    assert_int_equal(qv_field_resolve_names(&ROOT, upper, NULL, 1, 0, NULL, &ref, &err), ENOENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dots_and_quotes),
        cmocka_unit_test(test_display_form_of_non_utf8_names),
        cmocka_unit_test(test_ambiguous_and_unknown),
        cmocka_unit_test(test_lists_and_maps),
        cmocka_unit_test(test_filter_and_projection_agree),
        cmocka_unit_test(test_parse_directly),
        cmocka_unit_test(test_refusals_name_the_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
