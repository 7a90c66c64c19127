/* qv_reader_export_statistics (format/stats_export.c): the structure of the
 * exported statistics (Arrow's statistics schema) and its values, for one
 * row group and the whole file, against a file written with known data:
 * nulls, NaNs, long strings whose bounds are truncated, several row groups,
 * nested structs and lists, columns without bounds. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "memory/memory_testing.h"
#include "test_util.h"

#define ROWS 2500
#define RG 1000
#define NRG 3

__extension__ typedef __int128 i128;

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_reader *rd;
static char path[512];

/* ---- the data ---- */

static int v_null(int64_t i) { return i % 7 == 3; }
static int32_t v_v(int64_t i) { return (int32_t)((i * 37) % 100) - 50; }
/* NaN only in row group 1. */
static int d_nan(int64_t i) { return i >= 1000 && i < 2000 && i % 11 == 5; }
static double v_d(int64_t i) { return (double)i / 10.0 - 20.0; }
static int s_null(int64_t i) { return i % 5 == 0; }
/* 80-byte strings: 'a'..'y' repeated, or U+00FF repeated (2 bytes each). */
static size_t v_s(int64_t i, char *buf) {
    int k = (int)(i % 26);
    if (k == 25) {
        for (int j = 0; j < 40; j++) memcpy(buf + 2 * j, "\xC3\xBF", 2);
    } else {
        memset(buf, 'a' + k, 80);
    }
    return 80;
}
static int64_t v_ts(int64_t i) { return i * 1000 - 5; }
static int64_t v_dec(int64_t i) { return i * 3 - 1000; }
static i128 v_dec38(int64_t i) { return (i128)(i - 1300) * (i128)10000000000000000000ull * 7; }
static int st_null(int64_t i) { return i % 13 == 0; }

static const struct qv_field z_field = {.name = "z", .type = QV_TYPE_UTF8, .nullable = true};
static const struct qv_field st_kids[] = {
    {.name = "a", .type = QV_TYPE_INT16, .nullable = true},
    {.name = "inner", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 1, .children = &z_field},
};
static const struct qv_field lst_item = {.name = "item", .type = QV_TYPE_INT32, .nullable = true};
static const struct qv_field cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},                                     /* 0 */
    {.name = "v", .type = QV_TYPE_INT32, .nullable = true},                    /* 1 */
    {.name = "d", .type = QV_TYPE_FLOAT64, .nullable = true},                  /* 2 */
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},                     /* 3 */
    {.name = "tag", .type = QV_TYPE_UTF8},                                     /* 4 */
    {.name = "b", .type = QV_TYPE_BOOL},                                       /* 5 */
    {.name = "u", .type = QV_TYPE_UINT64},                                     /* 6 */
    {.name = "ts", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_MS, .timezone = "UTC"}, /* 7 */
    {.name = "dec", .type = QV_TYPE_DECIMAL128, .precision = 10, .scale = 2},  /* 8 */
    {.name = "dec38", .type = QV_TYPE_DECIMAL128, .precision = 30, .scale = 5}, /* 9 */
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2,
     .children = st_kids},                                                     /* 10..13 */
    {.name = "lst", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1,
     .children = &lst_item},                                                   /* 14, 15 */
    {.name = "allnull", .type = QV_TYPE_INT32, .nullable = true},              /* 16 */
    {.name = "f16", .type = QV_TYPE_FLOAT16},                                  /* 17 */
    {.name = "sparse", .type = QV_TYPE_INT64, .nullable = true},               /* 18 */
    {.name = "bin", .type = QV_TYPE_BINARY},                                   /* 19 */
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
#define NNODES 20
static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = NCOLS,
                                     .children = cols};

static int append_row(struct qv_appender **a, int64_t i) {
    char buf[96];
    int rc = qv_append_int64(a[0], i);
    if (!rc) rc = v_null(i) ? qv_append_null(a[1]) : qv_append_int32(a[1], v_v(i));
    if (!rc) rc = i % 17 == 0 ? qv_append_null(a[2])
                              : qv_append_float64(a[2], d_nan(i) ? NAN : v_d(i));
    if (!rc) rc = s_null(i) ? qv_append_null(a[3]) : qv_append_string(a[3], buf, v_s(i, buf));
    if (!rc) {
        int n = snprintf(buf, sizeof buf, "t%03d", (int)(i % 300));
        rc = qv_append_string(a[4], buf, (size_t)n);
    }
    if (!rc) rc = qv_append_bool(a[5], i >= 1500);
    if (!rc) rc = qv_append_uint64(a[6], UINT64_MAX - (uint64_t)i);
    if (!rc) rc = qv_append_timestamp(a[7], v_ts(i));
    if (!rc) rc = qv_append_decimal64(a[8], v_dec(i));
    if (!rc) {
        i128 x = v_dec38(i);
        rc = qv_append_decimal128(a[9], (uint64_t)x, (int64_t)(x >> 64));
    }
    if (!rc) {
        if (st_null(i)) {
            rc = qv_append_null(a[10]);
        } else {
            rc = qv_append_struct_begin(a[10]);
            struct qv_appender *sa = qv_appender_child(a[10], 0), *in = qv_appender_child(a[10], 1);
            if (!rc) rc = i % 4 == 1 ? qv_append_null(sa) : qv_append_int16(sa, (int16_t)(i % 1000 - 400));
            if (!rc) rc = qv_append_struct_begin(in);
            if (!rc) {
                int n = snprintf(buf, sizeof buf, "z%04d", (int)i);
                rc = qv_append_string(qv_appender_child(in, 0), buf, (size_t)n);
            }
            if (!rc) rc = qv_append_struct_end(in);
            if (!rc) rc = qv_append_struct_end(a[10]);
        }
    }
    if (!rc) rc = qv_append_list_begin(a[11]);
    for (int64_t k = 0; !rc && k < i % 3; k++)
        rc = qv_append_int32(qv_appender_child(a[11], 0), (int32_t)(i * 10 + k));
    if (!rc) rc = qv_append_list_end(a[11]);
    if (!rc) rc = qv_append_null(a[12]);
    if (!rc) rc = qv_append_float16(a[13], 0x3C00);
    if (!rc) rc = i < 2000 ? qv_append_null(a[14]) : qv_append_int64(a[14], 5000 - i);
    if (!rc) {
        /* Binary bounds of 70 bytes: cut to 64, the max ending in 0xFF bytes. */
        memset(buf, (i % 2) ? 0xFF : 0x01, 70);
        buf[0] = (char)(i % 2 ? 0x7F : 0x01);
        rc = qv_append_binary(a[15], buf, 70);
    }
    return rc;
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "stats_export.qvr");
    struct qv_schema *s;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, res, &s, &err), 0);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG};
    int rc = qv_writer_open(path, s, &o, res, &w, &err);
    if (rc) fail_msg("writer: %s", err.message);
    struct qv_builder *b = qv_writer_builder(w);
    struct qv_appender *a[NCOLS];
    for (int c = 0; c < NCOLS; c++) a[c] = qv_builder_column(b, c);
    for (int64_t i = 0; i < ROWS && !rc; i++) {
        rc = append_row(a, i);
        if (rc) fail_msg("append: %s", qv_builder_error(b)->message);
        if (i % 250 == 249) rc = qv_writer_end_rows(w, &err);
    }
    if (!rc) rc = qv_writer_end_rows(w, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("write: %s", err.message);
    qv_writer_close(w);
    qv_schema_destroy(s);
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, NULL), 0);
    assert_int_equal(qv_reader_num_row_groups(rd), NRG);
    assert_int_equal(qv_reader_num_nodes(rd), NNODES);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_reader_close(rd);
    unlink(path);
    assert_int_equal(qv_reservation_used(res), 0);
    qv_reservation_destroy(res);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0); /* every export reservation is gone */
    qv_pool_destroy(pool);
    return 0;
}

/* ---- reading the export ---- */

struct view {
    const struct ArrowSchema *sc;
    const struct ArrowArray *root, *column, *map, *keys, *dict, *items;
};

static void check_structure(const struct ArrowSchema *sc, const struct ArrowArray *a, struct view *v) {
    struct qv_error err;
    /* The schema, field by field, as the specification lays it out. */
    assert_string_equal(sc->format, "+s");
    assert_int_equal(sc->n_children, 2);
    assert_string_equal(sc->children[0]->name, "column");
    assert_string_equal(sc->children[0]->format, "i");
    assert_true(sc->children[0]->flags & ARROW_FLAG_NULLABLE);
    const struct ArrowSchema *m = sc->children[1];
    assert_string_equal(m->name, "statistics");
    assert_string_equal(m->format, "+m");
    assert_false(m->flags & ARROW_FLAG_NULLABLE);
    assert_int_equal(m->n_children, 1);
    const struct ArrowSchema *e = m->children[0];
    assert_string_equal(e->format, "+s");
    assert_int_equal(e->n_children, 2);
    assert_string_equal(e->children[0]->name, "key");
    assert_string_equal(e->children[0]->format, "i");
    assert_false(e->children[0]->flags & ARROW_FLAG_NULLABLE);
    assert_non_null(e->children[0]->dictionary);
    assert_string_equal(e->children[0]->dictionary->format, "u");
    const struct ArrowSchema *u = e->children[1];
    assert_string_equal(u->name, "items");
    assert_false(u->flags & ARROW_FLAG_NULLABLE);
    assert_true(strncmp(u->format, "+ud:0", 5) == 0);
    assert_string_equal(u->children[0]->format, "l"); /* member 0: the counts */

    /* The arrays: shapes, then each plain part through the library's own
     * validation. */
    assert_int_equal(a->n_children, 2);
    assert_int_equal(a->n_buffers, 1);
    v->sc = sc;
    v->root = a;
    v->column = a->children[0];
    v->map = a->children[1];
    const struct ArrowArray *ent = v->map->children[0];
    v->keys = ent->children[0];
    v->dict = v->keys->dictionary;
    v->items = ent->children[1];
    assert_non_null(v->dict);
    static const struct qv_field i32n = {.name = "column", .type = QV_TYPE_INT32, .nullable = true};
    static const struct qv_field i32 = {.name = "key", .type = QV_TYPE_INT32};
    static const struct qv_field utf8 = {.name = "", .type = QV_TYPE_UTF8};
    /* The indices alone (Quiver's validation does not take dictionaries). */
    struct ArrowArray indices = *v->keys;
    indices.dictionary = NULL;
    if (qv_arrow_array_validate(v->column, &i32n, QV_VALIDATE_FULL, &err) ||
        qv_arrow_array_validate(&indices, &i32, QV_VALIDATE_FULL, &err) ||
        qv_arrow_array_validate(v->dict, &utf8, QV_VALIDATE_FULL, &err))
        fail_msg("validate: %s", err.message);
    /* The map without its (union) values: a map<int32, int64> stand-in
     * over the same offsets and keys checks offsets and lengths. */
    assert_int_equal(v->map->n_buffers, 2);
    assert_null(v->map->buffers[0]);
    assert_int_equal(v->map->length, a->length);
    const int32_t *mo = v->map->buffers[1];
    assert_int_equal(mo[0], 0);
    for (int64_t r = 0; r < a->length; r++) assert_true(mo[r + 1] >= mo[r]);
    assert_int_equal(mo[a->length], ent->length);
    assert_int_equal(v->keys->length, ent->length);
    assert_int_equal(v->items->length, ent->length);
    const int32_t *ki = (const int32_t *)v->keys->buffers[1];
    for (int64_t k = 0; k < ent->length; k++) assert_true(ki[k] >= 0 && ki[k] < v->dict->length);
    /* The dense union: no validity, type ids in range, offsets inside the
     * member, every member valid for its own type. */
    assert_int_equal(v->items->n_buffers, 2);
    assert_int_equal(v->items->n_children, u->n_children);
    const int8_t *ti = v->items->buffers[0];
    const int32_t *uo = v->items->buffers[1];
    for (int64_t k = 0; k < ent->length; k++) {
        assert_true(ti[k] >= 0 && ti[k] < v->items->n_children);
        assert_true(uo[k] >= 0 && uo[k] < v->items->children[ti[k]]->length);
    }
    for (int64_t t = 0; t < u->n_children; t++) {
        struct qv_field f = {.name = u->children[t]->name, .nullable = true};
        if (qv_arrow_format_parse(u->children[t]->format, &f, &err) ||
            qv_arrow_array_validate(v->items->children[t], &f, QV_VALIDATE_FULL, &err))
            fail_msg("union member %lld (%s): %s", (long long)t, u->children[t]->format, err.message);
        /* The type code is the member's index: "+ud:0,1,...". */
        char code[24];
        snprintf(code, sizeof code, t ? ",%lld" : ":%lld", (long long)t);
        assert_non_null(strstr(u->format, code));
    }
    /* Row 0: the table; then node i is row i + 1, column i. */
    assert_int_equal(a->length, NNODES + 1);
    assert_int_equal(v->column->null_count, 1);
    assert_false(qv_bit_get(v->column->buffers[0], 0));
    for (int32_t n = 0; n < NNODES; n++) {
        assert_true(qv_bit_get(v->column->buffers[0], n + 1));
        assert_int_equal(((const int32_t *)v->column->buffers[1])[n + 1], n);
    }
}

/* The value of `key` in the row of `node` (-1: the table row): its member
 * format and a pointer to the member array and slot; false when absent. */
static bool lookup(const struct view *v, int32_t node, const char *key, const char **fmt,
                   const struct ArrowArray **member, int64_t *slot) {
    int64_t r = node + 1;
    const int32_t *mo = v->map->buffers[1];
    const int32_t *dof = v->dict->buffers[1];
    const char *dd = v->dict->buffers[2];
    int found = 0;
    for (int32_t k = mo[r]; k < mo[r + 1]; k++) {
        int32_t ki = ((const int32_t *)v->keys->buffers[1])[k];
        size_t len = (size_t)(dof[ki + 1] - dof[ki]);
        if (len != strlen(key) || memcmp(dd + dof[ki], key, len)) continue;
        int8_t t = ((const int8_t *)v->items->buffers[0])[k];
        *fmt = v->sc->children[1]->children[0]->children[1]->children[t]->format;
        *member = v->items->children[t];
        *slot = ((const int32_t *)v->items->buffers[1])[k];
        found++;
    }
    assert_true(found <= 1); /* a key appears at most once per row */
    return found == 1;
}

static bool absent(const struct view *v, int32_t node, const char *key) {
    const char *f;
    const struct ArrowArray *m;
    int64_t s;
    return !lookup(v, node, key, &f, &m, &s);
}

static int64_t get_i64(const struct view *v, int32_t node, const char *key, const char *want_fmt) {
    const char *f;
    const struct ArrowArray *m;
    int64_t s;
    if (!lookup(v, node, key, &f, &m, &s)) fail_msg("node %d: no %s", node, key);
    assert_string_equal(f, want_fmt);
    return ((const int64_t *)m->buffers[1])[m->offset + s];
}

static double get_f64(const struct view *v, int32_t node, const char *key) {
    const char *f;
    const struct ArrowArray *m;
    int64_t s;
    if (!lookup(v, node, key, &f, &m, &s)) fail_msg("node %d: no %s", node, key);
    assert_string_equal(f, "g");
    return ((const double *)m->buffers[1])[m->offset + s];
}

static i128 get_dec(const struct view *v, int32_t node, const char *key, const char *want_fmt) {
    const char *f;
    const struct ArrowArray *m;
    int64_t s;
    if (!lookup(v, node, key, &f, &m, &s)) fail_msg("node %d: no %s", node, key);
    assert_string_equal(f, want_fmt);
    i128 x;
    memcpy(&x, (const uint8_t *)m->buffers[1] + 16 * (m->offset + s), 16);
    return x;
}

static int get_bool(const struct view *v, int32_t node, const char *key) {
    const char *f;
    const struct ArrowArray *m;
    int64_t s;
    if (!lookup(v, node, key, &f, &m, &s)) fail_msg("node %d: no %s", node, key);
    assert_string_equal(f, "b");
    return qv_bit_get(m->buffers[1], m->offset + s);
}

/* Compares a utf8 / binary value with the expected bytes. */
static void expect_bytes(const struct view *v, int32_t node, const char *key, const char *want_fmt,
                         const void *want, size_t n) {
    const char *f;
    const struct ArrowArray *m;
    int64_t s;
    if (!lookup(v, node, key, &f, &m, &s)) fail_msg("node %d: no %s", node, key);
    assert_string_equal(f, want_fmt);
    const int32_t *o = (const int32_t *)m->buffers[1] + m->offset;
    assert_int_equal(o[s + 1] - o[s], n);
    assert_memory_equal((const char *)m->buffers[2] + o[s], want, n);
}

/* ---- expected values, computed from the generator ---- */

struct expect {
    int64_t rows, v_nulls, d_nulls, s_nulls, st_nulls, a_nulls, nan;
    int32_t v_min, v_max;
    double d_min, d_max;
    int s_min_k, s_max_k; /* letters of the smallest / largest string */
    int tag_min, tag_max;
    int b_min, b_max;
    int64_t lst_items, item_min, item_max, sparse_vals, sparse_min, sparse_max;
};

static struct expect expected(int64_t lo, int64_t hi) {
    struct expect e = {.v_min = INT32_MAX, .v_max = INT32_MIN, .d_min = INFINITY, .d_max = -INFINITY,
                       .s_min_k = 99, .s_max_k = -1, .tag_min = 999, .tag_max = -1, .b_min = 1,
                       .b_max = 0, .item_min = INT64_MAX, .item_max = INT64_MIN,
                       .sparse_min = INT64_MAX, .sparse_max = INT64_MIN};
    for (int64_t i = lo; i < hi; i++) {
        e.rows++;
        if (v_null(i)) e.v_nulls++;
        else e.v_min = v_v(i) < e.v_min ? v_v(i) : e.v_min, e.v_max = v_v(i) > e.v_max ? v_v(i) : e.v_max;
        if (i % 17 == 0) e.d_nulls++;
        else if (d_nan(i)) e.nan++;
        else e.d_min = fmin(e.d_min, v_d(i)), e.d_max = fmax(e.d_max, v_d(i));
        if (s_null(i)) e.s_nulls++;
        else {
            int k = (int)(i % 26);
            if (k < e.s_min_k) e.s_min_k = k;
            if (k > e.s_max_k) e.s_max_k = k;
        }
        int t = (int)(i % 300);
        if (t < e.tag_min) e.tag_min = t;
        if (t > e.tag_max) e.tag_max = t;
        if ((i >= 1500) < e.b_min) e.b_min = i >= 1500;
        if ((i >= 1500) > e.b_max) e.b_max = i >= 1500;
        if (st_null(i)) e.st_nulls++, e.a_nulls++;
        else if (i % 4 == 1) e.a_nulls++;
        for (int64_t k = 0; k < i % 3; k++) {
            e.lst_items++;
            int64_t x = i * 10 + k;
            if (x < e.item_min) e.item_min = x;
            if (x > e.item_max) e.item_max = x;
        }
        if (i >= 2000) {
            e.sparse_vals++;
            if (5000 - i < e.sparse_min) e.sparse_min = 5000 - i;
            if (5000 - i > e.sparse_max) e.sparse_max = 5000 - i;
        }
    }
    return e;
}

static void check_values(const struct view *v, int64_t lo, int64_t hi) {
    struct expect e = expected(lo, hi);
    assert_int_equal(get_i64(v, -1, "ARROW:row_count:exact", "l"), e.rows);
    /* Every node has its exact null count. */
    for (int32_t n = 0; n < NNODES; n++) assert_false(absent(v, n, "ARROW:null_count:exact"));
    assert_int_equal(get_i64(v, 0, "ARROW:null_count:exact", "l"), 0);
    assert_int_equal(get_i64(v, 0, "ARROW:min_value:exact", "l"), lo);
    assert_int_equal(get_i64(v, 0, "ARROW:max_value:exact", "l"), hi - 1);
    /* int32 widens to int64. */
    assert_int_equal(get_i64(v, 1, "ARROW:null_count:exact", "l"), e.v_nulls);
    assert_int_equal(get_i64(v, 1, "ARROW:min_value:exact", "l"), e.v_min);
    assert_int_equal(get_i64(v, 1, "ARROW:max_value:exact", "l"), e.v_max);
    /* float64: NaN is the max where the range holds one. */
    assert_int_equal(get_i64(v, 2, "ARROW:null_count:exact", "l"), e.d_nulls);
    assert_true(get_f64(v, 2, "ARROW:min_value:exact") == e.d_min);
    double dmax = get_f64(v, 2, "ARROW:max_value:exact");
    if (e.nan) assert_true(isnan(dmax));
    else assert_true(dmax == e.d_max);
    /* Long strings: both bounds truncated, so approximate, and bounds the
     * true values. */
    assert_int_equal(get_i64(v, 3, "ARROW:null_count:exact", "l"), e.s_nulls);
    assert_true(absent(v, 3, "ARROW:min_value:exact") && absent(v, 3, "ARROW:max_value:exact"));
    char want[80];
    memset(want, 'a' + e.s_min_k, 64);
    expect_bytes(v, 3, "ARROW:min_value:approximate", "u", want, 64);
    if (e.s_max_k == 25) {
        /* 32 x U+00FF kept by the writer; the successor ends in U+0100. */
        for (int j = 0; j < 31; j++) memcpy(want + 2 * j, "\xC3\xBF", 2);
        memcpy(want + 62, "\xC4\x80", 2);
    } else {
        memset(want, 'a' + e.s_max_k, 64);
        want[63] = (char)('a' + e.s_max_k + 1);
    }
    expect_bytes(v, 3, "ARROW:max_value:approximate", "u", want, 64);
    /* Short strings: exact. */
    char t[8];
    snprintf(t, sizeof t, "t%03d", e.tag_min);
    expect_bytes(v, 4, "ARROW:min_value:exact", "u", t, 4);
    snprintf(t, sizeof t, "t%03d", e.tag_max);
    expect_bytes(v, 4, "ARROW:max_value:exact", "u", t, 4);
    assert_int_equal(get_bool(v, 5, "ARROW:min_value:exact"), e.b_min);
    assert_int_equal(get_bool(v, 5, "ARROW:max_value:exact"), e.b_max);
    /* uint64 stays unsigned. */
    assert_true((uint64_t)get_i64(v, 6, "ARROW:min_value:exact", "L") == UINT64_MAX - (uint64_t)(hi - 1));
    assert_true((uint64_t)get_i64(v, 6, "ARROW:max_value:exact", "L") == UINT64_MAX - (uint64_t)lo);
    /* Timestamps and decimals keep their logical types. */
    assert_int_equal(get_i64(v, 7, "ARROW:min_value:exact", "tsm:UTC"), v_ts(lo));
    assert_int_equal(get_i64(v, 7, "ARROW:max_value:exact", "tsm:UTC"), v_ts(hi - 1));
    assert_true(get_dec(v, 8, "ARROW:min_value:exact", "d:10,2") == v_dec(lo));
    assert_true(get_dec(v, 8, "ARROW:max_value:exact", "d:10,2") == v_dec(hi - 1));
    assert_true(get_dec(v, 9, "ARROW:min_value:exact", "d:30,5") == v_dec38(lo));
    assert_true(get_dec(v, 9, "ARROW:max_value:exact", "d:30,5") == v_dec38(hi - 1));
    /* Nested: st (10), st.a (11), st.inner (12), st.inner.z (13). */
    assert_int_equal(get_i64(v, 10, "ARROW:null_count:exact", "l"), e.st_nulls);
    assert_true(absent(v, 10, "ARROW:min_value:exact") && absent(v, 10, "ARROW:max_value:exact"));
    assert_int_equal(get_i64(v, 11, "ARROW:null_count:exact", "l"), e.a_nulls);
    assert_false(absent(v, 11, "ARROW:min_value:exact"));
    char z[8];
    int64_t zlo = lo, zhi = hi - 1;
    while (st_null(zlo)) zlo++;
    while (st_null(zhi)) zhi--;
    snprintf(z, sizeof z, "z%04d", (int)zlo);
    expect_bytes(v, 13, "ARROW:min_value:exact", "u", z, 5);
    snprintf(z, sizeof z, "z%04d", (int)zhi);
    expect_bytes(v, 13, "ARROW:max_value:exact", "u", z, 5);
    /* lst (14), lst.item (15). */
    assert_int_equal(get_i64(v, 14, "ARROW:null_count:exact", "l"), 0);
    assert_int_equal(get_i64(v, 15, "ARROW:null_count:exact", "l"), 0);
    assert_int_equal(get_i64(v, 15, "ARROW:min_value:exact", "l"), e.item_min);
    assert_int_equal(get_i64(v, 15, "ARROW:max_value:exact", "l"), e.item_max);
    /* No values, no bounds: allnull; float16 has no statistics. */
    assert_int_equal(get_i64(v, 16, "ARROW:null_count:exact", "l"), e.rows);
    assert_true(absent(v, 16, "ARROW:min_value:exact") && absent(v, 16, "ARROW:max_value:exact"));
    assert_true(absent(v, 17, "ARROW:min_value:exact") && absent(v, 17, "ARROW:min_value:approximate"));
    /* sparse: values only in the last row group; the others do not hide
     * its bounds. */
    assert_int_equal(get_i64(v, 18, "ARROW:null_count:exact", "l"), e.rows - e.sparse_vals);
    if (e.sparse_vals) {
        assert_int_equal(get_i64(v, 18, "ARROW:min_value:exact", "l"), e.sparse_min);
        assert_int_equal(get_i64(v, 18, "ARROW:max_value:exact", "l"), e.sparse_max);
    } else {
        assert_true(absent(v, 18, "ARROW:min_value:exact"));
    }
    /* bin: 70-byte values cut to 64; the max 7F FF.. has no byte to
     * increment after the first, so its bound is 80. */
    uint8_t bmin[64], bmax[1] = {0x80};
    memset(bmin, 0x01, 64);
    expect_bytes(v, 19, "ARROW:min_value:approximate", "z", bmin, 64);
    expect_bytes(v, 19, "ARROW:max_value:approximate", "z", bmax, 1);
}

static void export_and_check(int64_t rg, int64_t lo, int64_t hi) {
    struct ArrowSchema sc;
    struct ArrowArray a;
    struct qv_error err;
    int rc = qv_reader_export_statistics(rd, rg, &sc, &a, &err);
    if (rc) fail_msg("export: %s", err.message);
    struct view v;
    check_structure(&sc, &a, &v);
    check_values(&v, lo, hi);
    a.release(&a);
    assert_null(a.release);
    sc.release(&sc);
}

static void test_row_groups(void **state) {
    (void)state;
    for (int64_t g = 0; g < NRG; g++) export_and_check(g, g * RG, g == NRG - 1 ? ROWS : (g + 1) * RG);
}

static void test_whole_file(void **state) {
    (void)state;
    export_and_check(-1, 0, ROWS);
}

/* The exports own their memory: they outlive the reader, release in any
 * order, and children moved out release on their own. */
static void test_ownership(void **state) {
    (void)state;
    struct qv_reader *r2;
    assert_int_equal(qv_reader_open(path, NULL, res, &r2, NULL), 0);
    struct ArrowSchema sc;
    struct ArrowArray a;
    assert_int_equal(qv_reader_export_statistics(r2, -1, &sc, &a, NULL), 0);
    qv_reader_close(r2);
    struct ArrowArray map = *a.children[1];
    a.children[1]->release = NULL; /* moved out */
    struct ArrowSchema col = *sc.children[0];
    sc.children[0]->release = NULL;
    sc.release(&sc);
    a.release(&a);
    assert_string_equal(col.format, "i");
    assert_int_equal(map.length, NNODES + 1);
    map.release(&map);
    col.release(&col);
    assert_null(map.release);
}

static void test_bad_arguments(void **state) {
    (void)state;
    struct ArrowSchema sc;
    struct ArrowArray a;
    struct qv_error err;
    memset(&sc, 0xAB, sizeof sc);
    memset(&a, 0xAB, sizeof a);
    assert_int_equal(qv_reader_export_statistics(rd, NRG, &sc, &a, &err), EINVAL);
    assert_null(sc.release);
    assert_null(a.release);
    assert_non_null(strstr(err.message, "row group 3 out of range"));
    assert_int_equal(qv_reader_export_statistics(rd, -2, &sc, &a, &err), EINVAL);
    assert_int_equal(qv_reader_export_statistics(NULL, 0, &sc, &a, &err), EINVAL);
}

/* Every allocation failure is ENOMEM with nothing held. */
static void test_allocation_failures(void **state) {
    (void)state;
    int ok = 0;
    for (uint64_t nth = 1; nth < 400 && !ok; nth++) {
        struct ArrowSchema sc;
        struct ArrowArray a;
        struct qv_error err;
        uint64_t used = qv_pool_used(pool);
        qv_pool_inject_alloc_failure(pool, nth);
        int rc = qv_reader_export_statistics(rd, -1, &sc, &a, &err);
        qv_pool_inject_alloc_failure(pool, 0);
        if (rc == 0) {
            ok = 1;
            sc.release(&sc);
            a.release(&a);
        } else {
            assert_int_equal(rc, ENOMEM);
            assert_null(sc.release);
            assert_null(a.release);
        }
        assert_int_equal(qv_pool_used(pool), used);
    }
    assert_true(ok);
}

/* A file without rows: the table row and one null count per field. */
static void test_empty_file(void **state) {
    (void)state;
    char p[512];
    tu_path(p, sizeof p, "stats_export_empty.qvr");
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&root, res, &s, NULL), 0);
    struct qv_writer *w;
    assert_int_equal(qv_writer_open(p, s, NULL, res, &w, NULL), 0);
    assert_int_equal(qv_writer_finish(w, NULL), 0);
    qv_writer_close(w);
    qv_schema_destroy(s);
    struct qv_reader *r2;
    assert_int_equal(qv_reader_open(p, NULL, res, &r2, NULL), 0);
    struct ArrowSchema sc;
    struct ArrowArray a;
    assert_int_equal(qv_reader_export_statistics(r2, -1, &sc, &a, NULL), 0);
    assert_int_equal(a.length, NNODES + 1);
    /* Only the counts: one int64 member, one entry per row. */
    assert_string_equal(sc.children[1]->children[0]->children[1]->format, "+ud:0");
    assert_int_equal(a.children[1]->children[0]->length, NNODES + 1);
    const int64_t *counts = a.children[1]->children[0]->children[1]->children[0]->buffers[1];
    for (int k = 0; k <= NNODES; k++) assert_int_equal(counts[k], 0);
    a.release(&a);
    sc.release(&sc);
    assert_int_equal(qv_reader_export_statistics(r2, 0, &sc, &a, NULL), EINVAL);
    qv_reader_close(r2);
    unlink(p);
}

/* A null-type field (top level and inside a struct): every slot is null,
 * so its null count is its length, in each row group and the file, though
 * the file records no validity for it (the export once said 0). */
static void test_null_type(void **state) {
    (void)state;
    char p[512];
    tu_path(p, sizeof p, "stats_export_null.qvr");
    static const struct qv_field kids[] = {{.name = "n", .type = QV_TYPE_NULL, .nullable = true},
                                           {.name = "x", .type = QV_TYPE_INT32, .nullable = true}};
    static const struct qv_field top[] = {
        {.name = "n", .type = QV_TYPE_NULL, .nullable = true},
        {.name = "s", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = kids}};
    static const struct qv_field nroot = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                          .children = top};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&nroot, res, &s, NULL), 0);
    struct qv_writer_options wo = {.row_group_rows = 4};
    struct qv_writer *w;
    struct qv_builder *b;
    assert_int_equal(qv_writer_open(p, s, &wo, res, &w, NULL), 0);
    assert_int_equal(qv_builder_create(s, res, NULL, &b, NULL), 0);
    struct qv_appender *an = qv_builder_column(b, 0), *as = qv_builder_column(b, 1);
    for (int i = 0; i < 10; i++) { /* s is null in rows 0, 3, 6, 9 */
        assert_int_equal(qv_append_null(an), 0);
        if (i % 3 == 0) {
            assert_int_equal(qv_append_null(as), 0);
            continue;
        }
        assert_int_equal(qv_append_struct_begin(as), 0);
        assert_int_equal(qv_append_null(qv_appender_child(as, 0)), 0);
        assert_int_equal(qv_append_int32(qv_appender_child(as, 1), i), 0);
        assert_int_equal(qv_append_struct_end(as), 0);
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
    assert_int_equal(qv_writer_write(w, &batch, NULL), 0);
    batch.release(&batch);
    assert_int_equal(qv_writer_finish(w, NULL), 0);
    qv_writer_close(w);
    qv_builder_destroy(b);
    qv_schema_destroy(s);
    struct qv_reader *r2;
    assert_int_equal(qv_reader_open(p, NULL, res, &r2, NULL), 0);
    static const int64_t rows[] = {4, 4, 2}, s_nulls[] = {2, 1, 1};
    for (int64_t rg = -1; rg < 3; rg++) {
        struct ArrowSchema sc;
        struct ArrowArray a;
        assert_int_equal(qv_reader_export_statistics(r2, rg, &sc, &a, NULL), 0);
        /* Rows: the table, n, s, s.n, s.x; each has the null count first,
         * and the null fields and s have nothing else. */
        assert_int_equal(a.length, 5);
        const struct ArrowArray *ent = a.children[1]->children[0];
        const int32_t *mo = a.children[1]->buffers[1];
        const struct ArrowArray *items = ent->children[1];
        const int64_t *counts = items->children[0]->buffers[1];
        const int32_t *uo = items->buffers[1];
        int64_t n = rg < 0 ? 10 : rows[rg];
        int64_t sn = rg < 0 ? 4 : s_nulls[rg];
        assert_int_equal(mo[2] - mo[1], 1);
        assert_int_equal(counts[uo[mo[1]]], n);  /* n: every slot */
        assert_int_equal(counts[uo[mo[2]]], sn); /* s */
        assert_int_equal(mo[4] - mo[3], 1);
        assert_int_equal(counts[uo[mo[3]]], n);  /* s.n: every slot, under null s too */
        assert_int_equal(counts[uo[mo[4]]], sn); /* s.x: the builder nulls it under null s */
        a.release(&a);
        sc.release(&sc);
    }
    qv_reader_close(r2);
    unlink(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_groups),
        cmocka_unit_test(test_whole_file),
        cmocka_unit_test(test_ownership),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_null_type),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
