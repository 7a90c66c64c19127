/* Nested projection in the scan (qv_scan_options.paths): struct fields at
 * any depth, fields below list elements and map entries, with nulls at
 * every level. Every result is compared with the full scan's values seen
 * through a view that keeps only the chosen fields; a counting source
 * proves that only the chosen fields' chunks are read; filters on fields
 * not projected, takes and row ranges combine with paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/quiver.h"
#include "random_batch.h"
#include "test_util.h"

#define ROWS 5000
#define RG 1500

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_reader *rd;
static char path[512];

/* id int64 not null, then nested columns nullable at every level. */
static const struct qv_field C_FIELDS[] = {
    {.name = "x", .type = QV_TYPE_INT64, .nullable = true},
    {.name = "y", .type = QV_TYPE_FLOAT64, .nullable = true},
};
static const struct qv_field S_FIELDS[] = {
    {.name = "a", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "b", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "c", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = C_FIELDS},
};
static const struct qv_field L_ITEM[] = {{.name = "item", .type = QV_TYPE_INT32, .nullable = true}};
static const struct qv_field SL_FIELDS[] = {
    {.name = "p", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = L_ITEM},
};
static const struct qv_field T_FIELDS[] = {
    {.name = "u", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "w", .type = QV_TYPE_INT32, .nullable = true},
};
static const struct qv_field LS_ELEM_FIELDS[] = {
    {.name = "q", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "r", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "t", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = T_FIELDS},
};
static const struct qv_field LS_ITEM[] = {
    {.name = "item", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 3, .children = LS_ELEM_FIELDS},
};
static const struct qv_field MV_FIELDS[] = {
    {.name = "k1", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "k2", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field M_KV[] = {
    {.name = "key", .type = QV_TYPE_UTF8, .nullable = false},
    {.name = "value", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = MV_FIELDS},
};
static const struct qv_field M_ENTRIES[] = {
    {.name = "entries", .type = QV_TYPE_STRUCT, .nullable = false, .n_children = 2, .children = M_KV},
};
static const struct qv_field COLS[] = {
    {.name = "id", .type = QV_TYPE_INT64, .nullable = false},
    {.name = "s", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 3, .children = S_FIELDS},
    {.name = "sl", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = SL_FIELDS},
    {.name = "ls", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = LS_ITEM},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = M_ENTRIES},
};
static const struct qv_field ROOT = {.type = QV_TYPE_STRUCT, .n_children = 5, .children = COLS};

/* A source that counts the bytes read through it. */
struct counting {
    struct qv_source inner;
    uint64_t bytes; /* atomic */
    uint64_t reads;
};
static int counting_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct counting *c = ctx;
    __atomic_add_fetch(&c->bytes, len, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
    return c->inner.read_at(c->inner.ctx, off, buf, len, err);
}
static void counting_close(void *ctx) { qv_source_close(&((struct counting *)ctx)->inner); }
static struct counting counter;

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "scan_nested.qvr");
    struct qv_schema *schema;
    struct qv_error err = {0};
    assert_int_equal(qv_schema_create(&ROOT, res, &schema, &err), 0);
    struct qv_writer *w;
    struct qv_writer_options wo = {.row_group_rows = RG};
    if (qv_writer_open(path, schema, &wo, res, &w, &err)) fail_msg("%s", err.message);
    struct rb_options ro = {.null_prob = 0.2, .max_list = 4, .max_string = 6};
    for (int64_t done = 0; done < ROWS;) {
        int64_t n = ROWS - done < 1000 ? ROWS - done : 1000;
        struct ArrowArray b;
        assert_int_equal(rb_batch(schema, n, 7 + (uint64_t)done, &ro, res, &b), 0);
        /* id = the row number, so rows of different scans can be matched. */
        int64_t *id = (int64_t *)b.children[0]->buffers[1];
        for (int64_t i = 0; i < n; i++) id[b.children[0]->offset + i] = done + i;
        if (qv_writer_write(w, &b, &err)) fail_msg("%s", err.message);
        b.release(&b);
        done += n;
    }
    if (qv_writer_finish(w, &err)) fail_msg("%s", err.message);
    qv_writer_close(w);
    qv_schema_destroy(schema);
    assert_int_equal(qv_source_open_file(path, &counter.inner, &err), 0);
    struct qv_source src = {.ctx = &counter, .name = counter.inner.name, .size = counter.inner.size,
                            .read_at = counting_read, .close = counting_close};
    if (qv_reader_open_source(&src, NULL, res, &rd, &err)) fail_msg("%s", err.message);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_reader_close(rd);
    unlink(path);
    qv_reservation_destroy(res);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    return 0;
}

/* ---- views: the full scan's arrays with only some fields ---- */

#define MAX_VIEW 64
struct view {
    struct ArrowArray nodes[MAX_VIEW];
    struct ArrowArray *kids[MAX_VIEW * 4];
    int n_nodes, n_kids;
};
static void view_release(struct ArrowArray *a) { a->release = NULL; }

/* A view of `full` (of type `ff`) shaped like `want` (a field of the
 * projected schema): struct children matched by name. */
static struct ArrowArray *make_view(struct view *v, const struct ArrowArray *full,
                                    const struct qv_field *ff, const struct qv_field *want) {
    assert_true(v->n_nodes < MAX_VIEW);
    struct ArrowArray *a = &v->nodes[v->n_nodes++];
    *a = *full;
    a->release = view_release;
    a->private_data = NULL;
    a->n_children = want->n_children;
    a->children = &v->kids[v->n_kids];
    v->n_kids += (int)want->n_children;
    assert_true(v->n_kids <= MAX_VIEW * 4);
    for (int64_t i = 0; i < want->n_children; i++) {
        int64_t k = ff->type == QV_TYPE_STRUCT ? qv_field_child_index(ff, want->children[i].name) : i;
        assert_true(k >= 0);
        a->children[i] = make_view(v, full->children[k], &ff->children[k], &want->children[i]);
    }
    return a;
}

/* The schema a stream hands out, imported. */
static struct qv_schema *stream_schema(struct ArrowArrayStream *st) {
    struct ArrowSchema sc;
    if (st->get_schema(st, &sc)) fail_msg("get_schema: %s", st->get_last_error(st));
    struct qv_schema *s;
    struct qv_error err = {0};
    if (qv_schema_import(&sc, res, &s, &err)) fail_msg("import: %s", err.message);
    sc.release(&sc);
    return s;
}

/* Opens scans with and without the paths (same other options), checks the
 * projected type against `types` (one string per output column) and every
 * value against the full scan's. Returns the rows seen. */
static int64_t check_paths(const struct qv_column_path *paths, int32_t n, const char *const *types,
                           int32_t n_types, struct qv_scan_options base) {
    struct qv_error err = {0};
    struct qv_scan_options full = base, part = base;
    part.paths = paths;
    part.n_paths = n;
    struct ArrowArrayStream fs, ps;
    if (qv_scan_open(rd, &full, res, &fs, &err)) fail_msg("full: %s", err.message);
    if (qv_scan_open(rd, &part, res, &ps, &err)) fail_msg("paths: %s", err.message);
    struct qv_schema *psch = stream_schema(&ps);
    const struct qv_field *all = &qv_reader_schema(rd)->root;
    assert_int_equal(psch->root.n_children, n_types);
    for (int32_t i = 0; i < n_types; i++) {
        char buf[512];
        qv_field_to_string(&psch->root.children[i], buf, sizeof buf);
        if (strcmp(buf, types[i]) != 0) fail_msg("column %d: '%s', expected '%s'", i, buf, types[i]);
    }
    int64_t rows = 0;
    for (;;) {
        struct ArrowArray fb, pb;
        if (fs.get_next(&fs, &fb)) fail_msg("full: %s", fs.get_last_error(&fs));
        if (ps.get_next(&ps, &pb)) fail_msg("paths: %s", ps.get_last_error(&ps));
        assert_int_equal(!fb.release, !pb.release);
        if (!fb.release) break;
        assert_int_equal(fb.length, pb.length);
        for (int32_t i = 0; i < n_types; i++) {
            const struct qv_field *want = &psch->root.children[i];
            int64_t c = qv_field_child_index(all, want->name);
            struct view v = {0};
            struct ArrowArray *exp = make_view(&v, fb.children[c], &all->children[c], want);
            char why[512];
            if (qv_arrow_array_validate(pb.children[i], want, QV_VALIDATE_FULL, &err))
                fail_msg("column %s invalid: %s", want->name, err.message);
            if (!qv_arrow_array_equal(want, exp, pb.children[i], why, sizeof why))
                fail_msg("column %s differs: %s", want->name, why);
        }
        rows += fb.length;
        fb.release(&fb);
        pb.release(&pb);
    }
    qv_schema_destroy(psch);
    fs.release(&fs);
    ps.release(&ps);
    return rows;
}

static const int32_t P_A[] = {0}, P_C[] = {2}, P_CY[] = {2, 1}, P_CX[] = {2, 0}, P_B[] = {1};
static const int32_t P_SLL[] = {1}, P_LSR[] = {0, 1}, P_LSTW[] = {0, 2, 1}, P_LSQ[] = {0, 0};
static const int32_t P_MV2[] = {0, 1, 1}, P_MK[] = {0, 0};

static void test_struct_fields(void **state) {
    (void)state;
    int modes[] = {QV_SCAN_SYNC, 2};
    for (int m = 0; m < 2; m++) {
        struct qv_scan_options o = {.threads = modes[m], .batch_rows = 700};
        struct qv_column_path p1[] = {{1, 1, P_A}};
        const char *t1[] = {"s: struct<a: int32>"};
        assert_int_equal(check_paths(p1, 1, t1, 1, o), ROWS);
        /* struct<struct>: one field two levels down. */
        struct qv_column_path p2[] = {{1, 2, P_CY}};
        const char *t2[] = {"s: struct<c: struct<y: float64>>"};
        assert_int_equal(check_paths(p2, 1, t2, 1, o), ROWS);
        /* Schema order whatever the order asked; paths into one column merge. */
        struct qv_column_path p3[] = {{1, 2, P_CY}, {1, 1, P_A}};
        const char *t3[] = {"s: struct<a: int32, c: struct<y: float64>>"};
        assert_int_equal(check_paths(p3, 2, t3, 1, o), ROWS);
        /* A path below a selected ancestor adds nothing. */
        struct qv_column_path p4[] = {{1, 2, P_CX}, {1, 1, P_C}};
        const char *t4[] = {"s: struct<c: struct<x: int64, y: float64>>"};
        assert_int_equal(check_paths(p4, 2, t4, 1, o), ROWS);
        /* Output columns in order of first appearance; whole columns too. */
        struct qv_column_path p5[] = {{1, 1, P_B}, {0, 0, NULL}, {3, 2, P_LSQ}};
        const char *t5[] = {"s: struct<b: utf8>", "id: int64 not null",
                            "ls: list<item: struct<q: int32>>"};
        assert_int_equal(check_paths(p5, 3, t5, 3, o), ROWS);
    }
}

static void test_lists_and_maps(void **state) {
    (void)state;
    struct qv_scan_options o = {.threads = QV_SCAN_SYNC, .batch_rows = 1024};
    struct qv_column_path p1[] = {{2, 1, P_SLL}};
    const char *t1[] = {"sl: struct<l: list<item: int32>>"};
    assert_int_equal(check_paths(p1, 1, t1, 1, o), ROWS);
    struct qv_column_path p2[] = {{3, 2, P_LSR}};
    const char *t2[] = {"ls: list<item: struct<r: utf8>>"};
    assert_int_equal(check_paths(p2, 1, t2, 1, o), ROWS);
    struct qv_column_path p3[] = {{3, 3, P_LSTW}};
    const char *t3[] = {"ls: list<item: struct<t: struct<w: int32>>>"};
    assert_int_equal(check_paths(p3, 1, t3, 1, o), ROWS);
    /* A map keeps key and value; inside the value only what was asked. */
    struct qv_column_path p4[] = {{4, 3, P_MV2}};
    const char *t4[] = {"m: map<key: utf8 not null, value: struct<k2: utf8>>"};
    assert_int_equal(check_paths(p4, 1, t4, 1, o), ROWS);
    struct qv_column_path p5[] = {{4, 2, P_MK}};
    const char *t5[] = {"m: map<key: utf8 not null, value: struct<k1: int32, k2: utf8>>"};
    assert_int_equal(check_paths(p5, 1, t5, 1, o), ROWS);
}

static void test_with_filter_take_and_range(void **state) {
    (void)state;
    struct qv_column_path p[] = {{1, 1, P_A}, {3, 2, P_LSR}};
    const char *t[] = {"s: struct<a: int32>", "ls: list<item: struct<r: utf8>>"};
    /* A filter on a field that is not projected, and on the projected
     * column's other field: neither appears in the output. */
    struct qv_scan_options o1 = {.threads = QV_SCAN_SYNC, .filter = "s.c.x > 0 AND id < 4000"};
    int64_t n1 = check_paths(p, 2, t, 2, o1);
    assert_true(n1 > 100 && n1 < 4000);
    struct qv_scan_options o2 = {.threads = 2, .filter = "s.a IS NOT NULL"};
    int64_t n2 = check_paths(p, 2, t, 2, o2);
    assert_true(n2 > 100 && n2 < ROWS);
    static const int64_t take[] = {0, 3, 1499, 1500, 1501, 2999, 4000, 4999};
    struct qv_scan_options o3 = {.threads = QV_SCAN_SYNC, .take = take, .n_take = 8};
    assert_int_equal(check_paths(p, 2, t, 2, o3), 8);
    struct qv_scan_options o4 = {.threads = 2, .row_begin = 1234, .row_end = 3456, .batch_rows = 500};
    assert_int_equal(check_paths(p, 2, t, 2, o4), 3456 - 1234);
}

/* Bytes of the segments of `nodes` (relative to column c) in every row group. */
static uint64_t node_bytes(int32_t c, const int32_t *nodes, int n) {
    uint64_t total = 0;
    int32_t first = qv_reader_column_node(rd, c);
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++)
        for (int i = 0; i < n; i++) {
            struct qv_chunk_info ci;
            assert_int_equal(qv_reader_chunk_info(rd, g, first + nodes[i], &ci, NULL), 0);
            for (int k = 0; k < ci.n_segments; k++) {
                struct qv_segment_info si;
                assert_int_equal(qv_reader_segment_info(rd, g, first + nodes[i], k, &si, NULL), 0);
                total += si.length;
            }
        }
    return total;
}

static uint64_t bytes_of_scan(const struct qv_column_path *p, int32_t n) {
    struct qv_scan_options o = {.threads = QV_SCAN_SYNC, .paths = p, .n_paths = n};
    struct ArrowArrayStream st;
    struct qv_error err = {0};
    uint64_t before = __atomic_load_n(&counter.bytes, __ATOMIC_RELAXED);
    if (qv_scan_open(rd, &o, res, &st, &err)) fail_msg("%s", err.message);
    for (;;) {
        struct ArrowArray b;
        if (st.get_next(&st, &b)) fail_msg("%s", st.get_last_error(&st));
        if (!b.release) break;
        b.release(&b);
    }
    st.release(&st);
    return __atomic_load_n(&counter.bytes, __ATOMIC_RELAXED) - before;
}

static void test_reads_only_chosen_fields(void **state) {
    (void)state;
    /* s: nodes s=0 a=1 b=2 c=3 x=4 y=5. s.c.y reads s, c and y only. */
    struct qv_column_path p1[] = {{1, 2, P_CY}};
    static const int32_t n1[] = {0, 3, 5};
    assert_int_equal(bytes_of_scan(p1, 1), node_bytes(1, n1, 3));
    static const int32_t all_s[] = {0, 1, 2, 3, 4, 5};
    assert_true(node_bytes(1, n1, 3) < node_bytes(1, all_s, 6));
    /* ls: ls=0 item=1 q=2 r=3 t=4 u=5 w=6. */
    struct qv_column_path p2[] = {{3, 3, P_LSTW}};
    static const int32_t n2[] = {0, 1, 4, 6};
    assert_int_equal(bytes_of_scan(p2, 1), node_bytes(3, n2, 4));
    /* The whole column, asked as a path, reads the whole column. */
    struct qv_column_path p3[] = {{1, 0, NULL}};
    assert_int_equal(bytes_of_scan(p3, 1), node_bytes(1, all_s, 6));
}

/* Decoding in place (a mapped file): the kept segments are used where
 * they lie. */
static void test_mapped(void **state) {
    (void)state;
    struct qv_reader *plain = rd, *mapped;
    struct qv_reader_options ro = {.mmap = 1};
    struct qv_error err = {0};
    if (qv_reader_open(path, &ro, res, &mapped, &err)) fail_msg("%s", err.message);
    rd = mapped;
    struct qv_column_path p[] = {{1, 2, P_CY}, {3, 3, P_LSTW}, {4, 3, P_MV2}};
    const char *t[] = {"s: struct<c: struct<y: float64>>", "ls: list<item: struct<t: struct<w: int32>>>",
                       "m: map<key: utf8 not null, value: struct<k2: utf8>>"};
    struct qv_scan_options o = {.threads = 2, .batch_rows = 999};
    assert_int_equal(check_paths(p, 3, t, 3, o), ROWS);
    rd = plain;
    qv_reader_close(mapped);
}

static void test_bad_paths(void **state) {
    (void)state;
    struct qv_error err = {0};
    struct ArrowArrayStream st;
    static const int32_t bad_child[] = {7}, list_one[] = {1};
    struct qv_column_path cases[][1] = {
        {{9, 0, NULL}}, {{1, 1, bad_child}}, {{3, 1, list_one}}, {{0, 1, P_A}}, {{1, -1, NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct qv_scan_options o = {.paths = cases[i], .n_paths = 1};
        assert_int_equal(qv_scan_open(rd, &o, res, &st, &err), EINVAL);
        assert_null(st.release);
        assert_non_null(strstr(err.message, "scan: path 0"));
    }
    static const int32_t cols[] = {0};
    struct qv_column_path ok[] = {{1, 1, P_A}};
    struct qv_scan_options both = {.paths = ok, .n_paths = 1, .columns = cols, .n_columns = 1};
    assert_int_equal(qv_scan_open(rd, &both, res, &st, &err), EINVAL);
    /* A column reader refuses a mask with holes. */
    struct qv_column_reader *cr;
    uint8_t keep[6] = {1, 0, 0, 0, 1, 0}; /* x without c */
    assert_int_equal(qv_column_reader_open_nodes(rd, 0, 1, keep, res, &cr, &err), EINVAL);
    assert_non_null(strstr(err.message, "parent is not kept"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_struct_fields),
        cmocka_unit_test(test_lists_and_maps),
        cmocka_unit_test(test_with_filter_take_and_range),
        cmocka_unit_test(test_reads_only_chosen_fields),
        cmocka_unit_test(test_mapped),
        cmocka_unit_test(test_bad_paths),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
