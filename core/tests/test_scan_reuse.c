/*
 * A projected column that the filter decoded is gathered from the filter's
 * values (scan.c reuse_decoded, gather.c) instead of being decoded again by
 * a take. The output must be the same, buffer for buffer (validity, the
 * values under null slots, offsets, bytes), as the path without the reuse
 * (qv__scan_testing_reuse(0)) and as the filter's rows taken by a separate
 * scan: for files with nulls, each encoding forced on the filter column,
 * vectors whose rows are all rejected, projections in another order, paths
 * naming a column twice, filter columns not projected, nested projections,
 * casts, max_rows, row-group boundaries, and synchronous and threaded scans.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/format_testing.h"
#include "memory/memory_testing.h"
#include "quiver/encoding.h"
#include "quiver/scan.h"
#include "scan/scan_testing.h"
#include "test_util.h"

#define ROWS 9000
#define RG_ROWS 4000

static struct qv_pool *pool;

/* ---- the files ---- */

static struct qv_field pt_kids[] = {{.name = "x", .type = QV_TYPE_INT32, .nullable = true}};
static struct qv_field all_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "i", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "d", .type = QV_TYPE_DECIMAL128, .precision = 12, .scale = 2, .nullable = true},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "b", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
    {.name = "fb", .type = QV_TYPE_FIXED_BINARY, .byte_width = 3, .nullable = true},
    {.name = "ls", .type = QV_TYPE_LARGE_UTF8, .nullable = true},
    {.name = "pt", .type = QV_TYPE_STRUCT, .nullable = true, .children = pt_kids, .n_children = 1},
};
enum { C_ID, C_I, C_D, C_S, C_B, C_F, C_FB, C_LS, C_PT, N_ALL };

static uint64_t mix(int64_t r) {
    uint64_t x = (uint64_t)r * 0x9E3779B97F4A7C15u;
    return x ^ (x >> 29);
}
/* Nulls in scattered rows and in a run longer than a vector. */
static int is_null(int64_t r, int col) {
    return (mix(r + col) % 7 == 3) || (r >= 5000 && r < 6100 && col % 2);
}

static void append_row(struct qv_builder *b, int col, int64_t r, const struct qv_field *f) {
    struct qv_appender *a = qv_builder_column(b, col);
    if (f->nullable && is_null(r, col)) {
        assert_int_equal(qv_append_null(a), 0);
        return;
    }
    uint64_t x = mix(r);
    char buf[32];
    switch (f->type) {
    case QV_TYPE_INT64: assert_int_equal(qv_append_int64(a, r), 0); break;
    case QV_TYPE_INT32: assert_int_equal(qv_append_int32(a, (int32_t)(x % 10000)), 0); break;
    case QV_TYPE_DECIMAL128:
        assert_int_equal(qv_append_decimal64(a, (int64_t)(x % 5000) - 1000), 0);
        break;
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: {
        int n = snprintf(buf, sizeof buf, "%c%llu", "abcde"[x % 5], (unsigned long long)(x % 997));
        if (x % 13 == 0) n = 0; /* empty strings too */
        assert_int_equal(qv_append_string(a, buf, (size_t)n), 0);
        break;
    }
    case QV_TYPE_BOOL: assert_int_equal(qv_append_bool(a, x % 3 == 0), 0); break;
    case QV_TYPE_FLOAT64: assert_int_equal(qv_append_float64(a, (double)(x % 1000) / 1000.0), 0); break;
    case QV_TYPE_FIXED_BINARY: {
        uint8_t v[3] = {(uint8_t)x, (uint8_t)(x >> 8), (uint8_t)(x % 4)};
        assert_int_equal(qv_append_fixed_binary(a, v, 3), 0);
        break;
    }
    default: fail_msg("type %d", f->type);
    }
}

static void write_all(const char *path, struct qv_reservation *r) {
    struct qv_field root = {.type = QV_TYPE_STRUCT, .children = all_cols, .n_children = N_ALL};
    struct qv_schema *schema;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, r, &schema, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(schema, r, NULL, &b, &err), 0);
    for (int64_t i = 0; i < ROWS; i++) {
        for (int c = 0; c < C_PT; c++) append_row(b, c, i, &all_cols[c]);
        struct qv_appender *pa = qv_builder_column(b, C_PT);
        if (is_null(i, C_PT)) {
            assert_int_equal(qv_append_null(pa), 0);
        } else {
            assert_int_equal(qv_append_struct_begin(pa), 0);
            struct qv_appender *xa = qv_appender_child(pa, 0);
            if (mix(i) % 11 == 0) assert_int_equal(qv_append_null(xa), 0);
            else assert_int_equal(qv_append_int32(xa, (int32_t)(mix(i + 5) % 100)), 0);
            assert_int_equal(qv_append_struct_end(pa), 0);
        }
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG_ROWS};
    assert_int_equal(qv_writer_open(path, schema, &o, r, &w, &err), 0);
    int rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("write: %s", err.message);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(schema);
}

/* One column `v` of type f, every values segment in `enc`; 0, or the
 * writer's error when the encoding cannot hold the values. Integers come
 * in runs (RLE), mostly one value (SPARSE) or spread, by `shape`. */
static int write_one(const char *path, const struct qv_field *f, int enc, int shape,
                     struct qv_reservation *r) {
    struct qv_field col = *f;
    col.name = "v";
    struct qv_field root = {.type = QV_TYPE_STRUCT, .children = &col, .n_children = 1};
    struct qv_schema *schema;
    struct qv_error err;
    assert_int_equal(qv_schema_create(&root, r, &schema, &err), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(schema, r, NULL, &b, &err), 0);
    for (int64_t i = 0; i < ROWS; i++) {
        struct qv_appender *a = qv_builder_column(b, 0);
        if (is_null(i, 1)) {
            assert_int_equal(qv_append_null(a), 0);
            continue;
        }
        if (f->type == QV_TYPE_INT32 && shape) {
            int32_t v = shape == 1 ? (int32_t)(i / 300 % 40) : (mix(i) % 50 ? 7 : (int32_t)(mix(i) % 1000));
            assert_int_equal(qv_append_int32(a, v), 0);
        } else {
            append_row(b, 0, i, f);
        }
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG_ROWS};
    assert_int_equal(qv_writer_open(path, schema, &o, r, &w, &err), 0);
    qv_writer_force_encoding(w, enc);
    int rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(schema);
    return rc;
}

/* ---- draining and comparing ---- */

struct out {
    struct ArrowSchema sc;
    struct ArrowArray b[64];
    int n;
    int64_t rows, reused;
};

static int drain(struct qv_reader *rd, const struct qv_scan_options *o, struct qv_reservation *r,
                 struct out *out) {
    memset(out, 0, sizeof *out);
    struct ArrowArrayStream st;
    struct qv_error err;
    int rc = qv_scan_open(rd, o, r, &st, &err);
    if (rc) fail_msg("scan open: %s", err.message);
    assert_int_equal(st.get_schema(&st, &out->sc), 0);
    for (;;) {
        struct ArrowArray a;
        rc = st.get_next(&st, &a);
        if (rc) fail_msg("get_next: %s", st.get_last_error(&st));
        if (!a.release) break;
        assert_true(out->n < 64); /* batches of 1500 rows at least: 9000 rows fit */
        out->rows += a.length;
        out->b[out->n++] = a;
    }
    out->reused = qv__scan_testing_reused_rows(&st);
    st.release(&st);
    return 0;
}

static void out_free(struct out *o) {
    for (int i = 0; i < o->n; i++) o->b[i].release(&o->b[i]);
    o->n = 0;
    if (o->sc.release) o->sc.release(&o->sc);
}

static int bit(const void *p, int64_t i) { return (((const uint8_t *)p)[i >> 3] >> (i & 7)) & 1; }

/* Row i of a against row j of b, type f (from their schema): validity, and
 * the value bytes also under null slots. Also checks a and b have a
 * validity buffer alike. */
static void same_row(const struct ArrowSchema *f, const struct ArrowArray *a, int64_t i,
                     const struct ArrowArray *b, int64_t j, const char *what) {
    i += a->offset;
    j += b->offset;
    if ((a->buffers[0] != NULL) != (b->buffers[0] != NULL))
        fail_msg("%s: validity buffer in one output only", what);
    if (a->buffers[0] && bit(a->buffers[0], i) != bit(b->buffers[0], j))
        fail_msg("%s: validity differs at row %lld", what, (long long)i);
    const char *fmt = f->format;
    if (fmt[0] == '+' && fmt[1] == 's') {
        for (int64_t c = 0; c < a->n_children; c++)
            same_row(f->children[c], a->children[c], i, b->children[c], j, what);
        return;
    }
    if (!strcmp(fmt, "b")) {
        if (bit(a->buffers[1], i) != bit(b->buffers[1], j))
            fail_msg("%s: bool differs at row %lld", what, (long long)i);
        return;
    }
    if (!strcmp(fmt, "u") || !strcmp(fmt, "z") || !strcmp(fmt, "U") || !strcmp(fmt, "Z")) {
        int big = fmt[0] == 'U' || fmt[0] == 'Z';
        int64_t a0 = big ? ((const int64_t *)a->buffers[1])[i] : ((const int32_t *)a->buffers[1])[i];
        int64_t a1 = big ? ((const int64_t *)a->buffers[1])[i + 1] : ((const int32_t *)a->buffers[1])[i + 1];
        int64_t b0 = big ? ((const int64_t *)b->buffers[1])[j] : ((const int32_t *)b->buffers[1])[j];
        int64_t b1 = big ? ((const int64_t *)b->buffers[1])[j + 1] : ((const int32_t *)b->buffers[1])[j + 1];
        if (a1 - a0 != b1 - b0 ||
            memcmp((const uint8_t *)a->buffers[2] + a0, (const uint8_t *)b->buffers[2] + b0, (size_t)(a1 - a0)))
            fail_msg("%s: bytes differ at row %lld", what, (long long)i);
        return;
    }
    int w = 0;
    switch (fmt[0]) {
    case 'c': case 'C': w = 1; break;
    case 's': case 'S': case 'e': w = 2; break;
    case 'i': case 'I': case 'f': w = 4; break;
    case 'l': case 'L': case 'g': w = 8; break;
    case 'd': w = 16; break;
    case 'w': w = atoi(fmt + 2); break;
    case 't': w = fmt[1] == 'd' ? 4 : 8; break;
    default: fail_msg("%s: format %s not compared", what, fmt);
    }
    if (memcmp((const uint8_t *)a->buffers[1] + (size_t)i * w, (const uint8_t *)b->buffers[1] + (size_t)j * w, (size_t)w))
        fail_msg("%s: value differs at row %lld", what, (long long)i);
}

/* Both outputs hold the same rows, column for column, whatever their
 * batches. */
static void same_output(struct out *x, struct out *y, const char *what) {
    assert_int_equal(x->rows, y->rows);
    assert_int_equal(x->sc.n_children, y->sc.n_children);
    for (int64_t c = 0; c < x->sc.n_children; c++)
        assert_string_equal(x->sc.children[c]->format, y->sc.children[c]->format);
    int bx = 0, by = 0;
    int64_t ix = 0, iy = 0;
    for (int64_t r = 0; r < x->rows; r++, ix++, iy++) {
        while (ix >= x->b[bx].length) bx++, ix = 0;
        while (iy >= y->b[by].length) by++, iy = 0;
        for (int64_t c = 0; c < x->sc.n_children; c++)
            same_row(x->sc.children[c], x->b[bx].children[c], ix, y->b[by].children[c], iy, what);
    }
}

/* ---- the cases ---- */

struct scase {
    const char *filter;
    int32_t cols[6];
    int n_cols;
    int expect_reuse; /* a projected column is decoded by the filter (OR, IS NULL) */
};

/* Scans with the reuse and without it (and synchronous, 1 and 2 workers,
 * batches of 1500 rows and of 65536, max_rows, casts): the same output.
 * Returns the rows gathered from the filter's values over all runs. */
static int64_t compare_runs(struct qv_reader *rd, struct qv_scan_options o, struct qv_reservation *r,
                            const char *what) {
    static const int threads[] = {QV_SCAN_SYNC, 1, 2};
    int64_t reused = 0;
    for (int t = 0; t < 3; t++)
        for (int v = 0; v < 4; v++) {
            struct qv_scan_options x = o;
            x.threads = threads[t];
            x.prefetch = 2;
            x.batch_rows = v & 1 ? 1500 : 0;
            if (v & 2) x.max_rows = 1234;
            if (v == 3) x.cast = QV_CAST_SPARK;
            struct out a, b;
            qv__scan_testing_reuse(1);
            drain(rd, &x, r, &a);
            qv__scan_testing_reuse(0);
            drain(rd, &x, r, &b);
            qv__scan_testing_reuse(1);
            assert_int_equal(b.reused, 0);
            char msg[300];
            snprintf(msg, sizeof msg, "%s (threads %d, variant %d)", what, threads[t], v);
            same_output(&a, &b, msg);
            reused += a.reused;
            out_free(&a);
            out_free(&b);
        }
    return reused;
}

static void test_all_types(void **state) {
    (void)state;
    char path[512];
    tu_path(path, sizeof path, "scan-reuse-all.qvr");
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    write_all(path, r);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, NULL), 0);
    static const struct scase cases[] = {
        /* ORs and IS NULL decode their columns */
        {"i < 500 OR i > 9000", {C_I, C_S, C_ID}, 3, 1},
        {"s STARTS WITH 'a' OR s IS NULL", {C_S, C_I}, 2, 1},
        {"b OR d > 30.00", {C_D, C_B, C_F}, 3, 1},
        {"fb IS NOT NULL AND i < 5000", {C_FB, C_I}, 2, 1},
        {"ls STARTS WITH 'b' OR ls = ''", {C_LS, C_ID}, 2, 1},
        {"f < 0.2 OR f IS NULL", {C_F, C_D}, 2, 1},
        /* the filter column in another place of the projection */
        {"(i < 3000 OR i > 8000) AND (s IS NULL OR s > 'c')", {C_ID, C_S, C_D, C_I}, 4, 1},
        /* vectors without a surviving row: ids 1100..7000 rejected whole */
        {"(id < 1100 OR id > 7000) AND (i < 3000 OR i IS NULL)", {C_I, C_ID, C_S}, 3, 1},
        /* a conjunct that rejects every row of many vectors comes first or
         * later; the second column is decoded only where rows are left */
        {"(id < 100 OR id >= 8990) AND (d < 0.00 OR d IS NULL)", {C_D, C_ID}, 2, 1},
        /* filter columns not projected */
        {"(i < 3000 OR i > 8000) AND s IS NOT NULL", {C_D, C_F}, 2, 0},
        /* nothing survives */
        {"i < 0 OR i > 10000", {C_I, C_S}, 2, 0},
        /* the encoded path where the encodings allow: no values to reuse */
        {"i < 3000 AND d > 5.00", {C_I, C_D}, 2, 0},
        /* a struct column (not gathered: its own decode), and its field */
        {"pt IS NULL OR pt.x > 50", {C_PT, C_I}, 2, 0},
        {"i IS NULL OR pt.x < 10", {C_PT, C_I, C_LS}, 3, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct scase *c = &cases[k];
        struct qv_scan_options o = {.columns = c->cols, .n_columns = c->n_cols, .filter = c->filter};
        int64_t reused = compare_runs(rd, o, r, c->filter);
        if (c->expect_reuse) assert_true(reused > 0);
    }
    /* Nested paths: pt.x alone (a pruned struct: decoded by its own reader)
     * beside i twice (two paths into one column merge into one output). */
    int32_t px[1] = {0};
    struct qv_column_path paths[3] = {{C_PT, 1, px}, {C_I, 0, NULL}, {C_I, 0, NULL}};
    struct qv_scan_options o = {.paths = paths, .n_paths = 3, .filter = "pt.x > 40 OR i < 100"};
    assert_true(compare_runs(rd, o, r, "paths") > 0);
    /* A filter over a list of rows (take) and over a row range that starts
     * and ends inside vectors. */
    static int64_t take[ROWS];
    int64_t nt = 0;
    for (int64_t i = 3; i < ROWS; i += 3 + i % 5) take[nt++] = i;
    int32_t tc[3] = {C_S, C_I, C_ID};
    struct qv_scan_options to = {.columns = tc, .n_columns = 3, .take = take, .n_take = nt,
                                 .filter = "i < 4000 OR s IS NULL"};
    assert_true(compare_runs(rd, to, r, "take") > 0);
    struct qv_scan_options ro = {.columns = tc, .n_columns = 3, .row_begin = 1234, .row_end = 8765,
                                 .filter = "i < 4000 OR s IS NULL"};
    assert_true(compare_runs(rd, ro, r, "range") > 0);
    qv_reader_close(rd);
    qv_reservation_destroy(r);
    unlink(path);
}

/* The filter's rows, taken by a separate scan without a filter: the same
 * output as the filtered scan that gathers from the filter's values. */
static void test_matches_separate_take(void **state) {
    (void)state;
    char path[512];
    tu_path(path, sizeof path, "scan-reuse-take.qvr");
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    write_all(path, r);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, NULL), 0);
    const char *filters[] = {"i < 2500 OR s IS NULL", "(id < 1100 OR id > 7000) AND (d < 0.00 OR b)"};
    for (int k = 0; k < 2; k++) {
        int32_t cols[5] = {C_ID, C_S, C_I, C_D, C_B};
        struct qv_scan_options o = {.columns = cols, .n_columns = 5, .filter = filters[k],
                                    .batch_rows = 1500, .threads = 2, .prefetch = 2};
        struct out a, b;
        drain(rd, &o, r, &a);
        assert_true(a.reused > 0);
        assert_true(a.rows > 0);
        int64_t *ids = malloc((size_t)a.rows * 8), n = 0;
        for (int i = 0; i < a.n; i++)
            for (int64_t j = 0; j < a.b[i].length; j++)
                ids[n++] = ((const int64_t *)a.b[i].children[0]->buffers[1])[a.b[i].children[0]->offset + j];
        struct qv_scan_options t = {.columns = cols, .n_columns = 5, .take = ids, .n_take = n,
                                    .threads = QV_SCAN_SYNC};
        drain(rd, &t, r, &b);
        assert_int_equal(b.reused, 0);
        same_output(&a, &b, filters[k]);
        free(ids);
        out_free(&a);
        out_free(&b);
    }
    qv_reader_close(rd);
    qv_reservation_destroy(r);
    unlink(path);
}

/* Each encoding forced on the filter column (the only column, projected),
 * filtered by an OR (which decodes) and by a simple comparison (which may
 * compare encoded values, then nothing is reused). */
static void test_each_encoding(void **state) {
    (void)state;
    static const struct qv_field types[] = {
        {.name = "v", .type = QV_TYPE_INT32, .nullable = true},
        {.name = "v", .type = QV_TYPE_DECIMAL128, .precision = 12, .scale = 2, .nullable = true},
        {.name = "v", .type = QV_TYPE_UTF8, .nullable = true},
        {.name = "v", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "v", .type = QV_TYPE_BOOL, .nullable = true},
    };
    static const char *const ors[] = {"v < 20 OR v > 9990", "v < -9.00 OR v > 39.00",
                                      "v STARTS WITH 'c' OR v = ''", "v < 0.1 OR v > 0.95",
                                      "v OR v IS NULL"};
    static const char *const simple[] = {"v BETWEEN 10 AND 30", "v < 0.00", "v >= 'c5'",
                                         "v > 0.5", "v"};
    char path[512];
    tu_path(path, sizeof path, "scan-reuse-enc.qvr");
    int written = 0, reused_files = 0;
    for (int enc = QV_ENC_AUTO; enc < QV_ENC_COUNT; enc++) {
        if (enc == QV_ENC_RELATIVE) continue; /* integers relative to another column: one here */
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            for (int shape = 0; shape < (types[t].type == QV_TYPE_INT32 ? 3 : 1); shape++) {
                struct qv_reservation *r;
                assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
                if (write_one(path, &types[t], enc, shape, r)) {
                    qv_reservation_destroy(r); /* the encoding cannot hold these values */
                    continue;
                }
                written++;
                struct qv_reader *rd;
                assert_int_equal(qv_reader_open(path, NULL, r, &rd, NULL), 0);
                int32_t col = 0;
                char what[200];
                snprintf(what, sizeof what, "%s, encoding %s, shape %d", ors[t],
                         qv_encoding_name(enc), shape);
                struct qv_scan_options o = {.columns = &col, .n_columns = 1, .filter = ors[t]};
                if (compare_runs(rd, o, r, what) > 0) reused_files++;
                else print_message("no reuse: %s\n", what);
                snprintf(what, sizeof what, "%s, encoding %s, shape %d", simple[t],
                         qv_encoding_name(enc), shape);
                o.filter = simple[t];
                compare_runs(rd, o, r, what);
                qv_reader_close(rd);
                qv_reservation_destroy(r);
            }
    }
    unlink(path);
    /* Every type under AUTO and PLAIN at least, and more. */
    assert_true(written >= 20);
    assert_int_equal(reused_files, written);
}

/* An allocation failure at every allocation of a scan that reuses the
 * filter's values (the gather's index, its reservation, the kept arrays
 * and their row lists): ENOMEM or the right rows, never a double free (the
 * sanitizer build), and every byte back once the scan is released. */
static void test_allocation_failures(void **state) {
    (void)state;
    char path[512];
    tu_path(path, sizeof path, "scan-reuse-alloc.qvr");
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    write_all(path, r);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, NULL), 0);
    int32_t cols[3] = {C_I, C_S, C_ID};
    static int64_t take[ROWS];
    int64_t nt = 0;
    for (int64_t i = 3; i < ROWS; i += 3 + i % 5) take[nt++] = i;
    for (int v = 0; v < 3; v++) {
        struct qv_scan_options o = {.columns = cols, .n_columns = 3, .batch_rows = 1500,
                                    .filter = "i < 3000 OR s IS NULL",
                                    .threads = v == 2 ? 2 : QV_SCAN_SYNC};
        if (v == 1) {
            o.take = take;
            o.n_take = nt;
        }
        struct out want;
        drain(rd, &o, r, &want);
        assert_true(want.reused > 0);
        const uint64_t base = qv_reservation_used(r);
        const uint64_t before = qv_pool_alloc_count(pool);
        struct out again;
        drain(rd, &o, r, &again);
        out_free(&again);
        const uint64_t allocs = qv_pool_alloc_count(pool) - before;
        int failed = 0;
        for (uint64_t nth = 1; nth <= allocs; nth += v == 2 ? 7 : 1) {
            qv_pool_inject_alloc_failure(pool, nth);
            struct ArrowArrayStream st;
            struct qv_error err;
            int rc = qv_scan_open(rd, &o, r, &st, &err);
            if (rc) {
                qv_pool_inject_alloc_failure(pool, 0);
                if (rc != ENOMEM) fail_msg("open, allocation %llu: %d %s",
                                           (unsigned long long)nth, rc, err.message);
                failed++;
                continue;
            }
            int64_t rows = 0;
            for (;;) {
                struct ArrowArray a;
                rc = st.get_next(&st, &a);
                if (rc || !a.release) break;
                rows += a.length;
                a.release(&a);
            }
            qv_pool_inject_alloc_failure(pool, 0);
            if (rc && rc != ENOMEM)
                fail_msg("variant %d, allocation %llu: %d %s", v, (unsigned long long)nth, rc,
                         st.get_last_error(&st));
            if (!rc) assert_int_equal(rows, want.rows);
            failed += rc != 0;
            st.release(&st);
            assert_int_equal(qv_reservation_used(r), base);
        }
        assert_true(failed > 0);
        out_free(&want);
    }
    qv_reader_close(rd);
    qv_reservation_destroy(r);
    unlink(path);
}

static int setup(void **state) {
    (void)state;
    alarm(600);
    return qv_pool_create(NULL, &pool, NULL);
}

static int teardown(void **state) {
    (void)state;
    qv_pool_destroy(pool);
    alarm(0);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_types),
        cmocka_unit_test(test_matches_separate_take),
        cmocka_unit_test(test_each_encoding),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
