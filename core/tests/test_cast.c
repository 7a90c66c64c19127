/* Casts of scan output (qv_scan_options.cast, scan/cast.c): output types and
 * values of every cast, inside nested types, with nulls, on sliced arrays,
 * in every threading mode, and the overflow errors. Expected values are
 * computed here from the row number, independently of cast.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/scan.h"
#include "scan/scan_internal.h"
#include "test_util.h"

#define ROWS 2500
#define RG 1000

static struct qv_pool *pool;
static struct qv_reservation *res;
static char path[512];

/* ---- the data, by row ---- */

static int null_every(int64_t i, int k) { return i % k == 1; }
static int64_t v_ts_s(int64_t i) { return (i - 1250) * 86400 + i; }
static int64_t v_ts_ms(int64_t i) { return (i - 1250) * 1000003; }
static int64_t v_ts_ns(int64_t i) { return (i - 1250) * 777 + i % 3; }
static uint8_t v_u8(int64_t i) { return (uint8_t)(i * 7); }
static uint16_t v_u16(int64_t i) { return (uint16_t)(i * 257 + 65000); }
static uint32_t v_u32(int64_t i) { return UINT32_MAX - (uint32_t)i; }
static uint64_t v_u64(int64_t i) { return i % 2 ? UINT64_MAX - (uint64_t)i : (uint64_t)i; }
/* Zeros, subnormals, normals, infinities and NaNs of both signs first, then
 * a spread over all bit patterns. */
static const uint16_t half_special[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400,
                                        0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00,
                                        0xFE00, 0x7C01, 0x7FFF, 0x3555, 0x0200};
static uint16_t v_f16(int64_t i) {
    size_t n = sizeof half_special / sizeof half_special[0];
    return (size_t)i < n ? half_special[i] : (uint16_t)(i * 40503u);
}

/* Reference conversion of a half by its value (not by bit manipulation). */
static void check_half(uint16_t h, uint32_t got_bits, int64_t row) {
    float got;
    memcpy(&got, &got_bits, 4);
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    if (e == 31 && m) {
        if (!isnan(got) || (signbit(got) != 0) != sign || (got_bits & 0x7FFFFFu) != (uint32_t)m << 13)
            fail_msg("row %lld: half 0x%04x -> 0x%08x, expected a NaN with its payload", (long long)row,
                     h, got_bits);
        return;
    }
    double v = e == 31 ? INFINITY : e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    float want = (float)(sign ? -v : v);
    uint32_t want_bits;
    memcpy(&want_bits, &want, 4);
    if (want_bits != got_bits)
        fail_msg("row %lld: half 0x%04x -> 0x%08x, expected 0x%08x", (long long)row, h, got_bits,
                 want_bits);
}

static int64_t floor_div_ref(int64_t v, int64_t d) { return (v - ((v % d) + d) % d) / d; }

static const struct qv_field ll_item = {.name = "item", .type = QV_TYPE_UINT8, .nullable = true};
static const struct qv_field st_kids[] = {
    {.name = "a", .type = QV_TYPE_UINT16, .nullable = true},
    {.name = "b", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_MS, .nullable = true},
};
static const struct qv_field kv[] = {
    {.name = "key", .type = QV_TYPE_UTF8, .nullable = false},
    {.name = "value", .type = QV_TYPE_UINT32, .nullable = true},
};
static const struct qv_field entries = {.name = "entries", .type = QV_TYPE_STRUCT, .n_children = 2,
                                        .children = kv};
static const struct qv_field cols[] = {
    {.name = "ts_s", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_S, .timezone = "Europe/Paris",
     .nullable = true},
    {.name = "ts_ms", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_MS, .nullable = true},
    {.name = "ts_ns", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_NS, .timezone = "UTC",
     .nullable = true},
    {.name = "u8", .type = QV_TYPE_UINT8, .nullable = true},
    {.name = "u16", .type = QV_TYPE_UINT16, .nullable = true},
    {.name = "u32", .type = QV_TYPE_UINT32, .nullable = true},
    {.name = "u64", .type = QV_TYPE_UINT64, .nullable = true},
    {.name = "f16", .type = QV_TYPE_FLOAT16, .nullable = true},
    {.name = "ll", .type = QV_TYPE_LARGE_LIST, .nullable = true, .n_children = 1, .children = &ll_item},
    {.name = "st", .type = QV_TYPE_STRUCT, .nullable = true, .n_children = 2, .children = st_kids},
    {.name = "m", .type = QV_TYPE_MAP, .nullable = true, .n_children = 1, .children = &entries},
    {.name = "id", .type = QV_TYPE_INT64, .nullable = false},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = NCOLS,
                                     .children = cols};

static int append_row(struct qv_appender **a, int64_t i) {
    int rc = null_every(i, 5) ? qv_append_null(a[0]) : qv_append_timestamp(a[0], v_ts_s(i));
    if (!rc) rc = null_every(i, 6) ? qv_append_null(a[1]) : qv_append_timestamp(a[1], v_ts_ms(i));
    if (!rc) rc = null_every(i, 7) ? qv_append_null(a[2]) : qv_append_timestamp(a[2], v_ts_ns(i));
    if (!rc) rc = null_every(i, 3) ? qv_append_null(a[3]) : qv_append_uint8(a[3], v_u8(i));
    if (!rc) rc = null_every(i, 4) ? qv_append_null(a[4]) : qv_append_uint16(a[4], v_u16(i));
    if (!rc) rc = null_every(i, 8) ? qv_append_null(a[5]) : qv_append_uint32(a[5], v_u32(i));
    if (!rc) rc = null_every(i, 9) ? qv_append_null(a[6]) : qv_append_uint64(a[6], v_u64(i));
    if (!rc) rc = i % 10 == 9 ? qv_append_null(a[7]) : qv_append_float16(a[7], v_f16(i));
    if (!rc) {
        if (i % 4 == 0) {
            rc = qv_append_null(a[8]);
        } else {
            rc = qv_append_list_begin(a[8]);
            for (int64_t k = 0; !rc && k < i % 3; k++)
                rc = (i + k) % 5 == 0 ? qv_append_null(qv_appender_child(a[8], 0))
                                      : qv_append_uint8(qv_appender_child(a[8], 0), (uint8_t)(i + k));
            if (!rc) rc = qv_append_list_end(a[8]);
        }
    }
    if (!rc) {
        if (i % 6 == 0) {
            rc = qv_append_null(a[9]);
        } else {
            rc = qv_append_struct_begin(a[9]);
            if (!rc) rc = i % 5 == 2 ? qv_append_null(qv_appender_child(a[9], 0))
                                     : qv_append_uint16(qv_appender_child(a[9], 0), (uint16_t)(60000 + i));
            if (!rc) rc = qv_append_timestamp(qv_appender_child(a[9], 1), -i * 1001);
            if (!rc) rc = qv_append_struct_end(a[9]);
        }
    }
    if (!rc) {
        if (i % 11 == 3) {
            rc = qv_append_null(a[10]);
        } else {
            rc = qv_append_map_begin(a[10]);
            for (int64_t k = 0; !rc && k < i % 3; k++) {
                char key[16];
                int n = snprintf(key, sizeof key, "k%lld", (long long)k);
                rc = qv_append_string(qv_appender_map_keys(a[10]), key, (size_t)n);
                if (!rc) rc = k == 1 ? qv_append_null(qv_appender_map_values(a[10]))
                                     : qv_append_uint32(qv_appender_map_values(a[10]),
                                                        UINT32_MAX - (uint32_t)(i * 3 + k));
            }
            if (!rc) rc = qv_append_map_end(a[10]);
        }
    }
    if (!rc) rc = qv_append_int64(a[11], i);
    return rc;
}

static int write_file(const char *p, const struct qv_field *rt, int64_t rows,
                      int (*row)(struct qv_appender **, int64_t)) {
    struct qv_schema *s;
    struct qv_error err;
    int rc = qv_schema_create(rt, res, &s, &err);
    if (rc) fail_msg("schema: %s", err.message);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG};
    rc = qv_writer_open(p, s, &o, res, &w, &err);
    if (rc) fail_msg("writer: %s", err.message);
    struct qv_builder *b = qv_writer_builder(w);
    struct qv_appender *a[16];
    for (int64_t c = 0; c < rt->n_children; c++) a[c] = qv_builder_column(b, c);
    for (int64_t i = 0; i < rows && !rc; i++) {
        rc = row(a, i);
        if (!rc && i % 500 == 499) rc = qv_writer_end_rows(w, &err);
    }
    if (rc && qv_builder_error(b)->code) fail_msg("append: %s", qv_builder_error(b)->message);
    if (!rc) rc = qv_writer_end_rows(w, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fail_msg("write: %s", err.message);
    qv_writer_close(w);
    qv_schema_destroy(s);
    return rc;
}

static int setup(void **state) {
    (void)state;
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "cast.qvr");
    write_file(path, &root, ROWS, append_row);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    assert_int_equal(qv_reservation_used(res), 0);
    qv_reservation_destroy(res);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    return 0;
}

static int is_valid(const struct ArrowArray *a, int64_t i) {
    return !a->buffers[0] || qv_bit_get(a->buffers[0], a->offset + i);
}

/* ---- checks of the output ---- */

static void check_schema(const struct ArrowSchema *sc) {
    static const char *const want[NCOLS] = {"tsu:Europe/Paris", "tsu:", "tsu:UTC", "s", "i", "l",
                                            "d:20,0", "f", "+l", "+s", "+m", "l"};
    assert_int_equal(sc->n_children, NCOLS);
    for (int c = 0; c < NCOLS; c++) {
        assert_string_equal(sc->children[c]->format, want[c]);
        assert_string_equal(sc->children[c]->name, cols[c].name);
    }
    assert_string_equal(sc->children[8]->children[0]->format, "s");
    assert_string_equal(sc->children[8]->children[0]->name, "item");
    assert_string_equal(sc->children[9]->children[0]->format, "i");
    assert_string_equal(sc->children[9]->children[1]->format, "tsu:");
    const struct ArrowSchema *e = sc->children[10]->children[0];
    assert_string_equal(e->children[0]->format, "u");
    assert_string_equal(e->children[1]->format, "l");
    /* Nullability is kept. */
    assert_true(sc->children[0]->flags & ARROW_FLAG_NULLABLE);
    assert_false(sc->children[11]->flags & ARROW_FLAG_NULLABLE);
    assert_false(e->children[0]->flags & ARROW_FLAG_NULLABLE);
}

static void check_row(const struct ArrowArray *b, int64_t j, int64_t i) {
    const struct ArrowArray *const *c = (const struct ArrowArray *const *)b->children;
#define VAL(col, T, k) (((const T *)(col)->buffers[1])[(col)->offset + (k)])
    assert_int_equal(VAL(c[11], int64_t, j), i);
    assert_int_equal(is_valid(c[0], j), !null_every(i, 5));
    if (!null_every(i, 5)) assert_int_equal(VAL(c[0], int64_t, j), v_ts_s(i) * 1000000);
    assert_int_equal(is_valid(c[1], j), !null_every(i, 6));
    if (!null_every(i, 6)) assert_int_equal(VAL(c[1], int64_t, j), v_ts_ms(i) * 1000);
    assert_int_equal(is_valid(c[2], j), !null_every(i, 7));
    if (!null_every(i, 7)) assert_int_equal(VAL(c[2], int64_t, j), floor_div_ref(v_ts_ns(i), 1000));
    assert_int_equal(is_valid(c[3], j), !null_every(i, 3));
    if (!null_every(i, 3)) assert_int_equal(VAL(c[3], int16_t, j), v_u8(i));
    assert_int_equal(is_valid(c[4], j), !null_every(i, 4));
    if (!null_every(i, 4)) assert_int_equal(VAL(c[4], int32_t, j), v_u16(i));
    assert_int_equal(is_valid(c[5], j), !null_every(i, 8));
    if (!null_every(i, 8)) assert_int_equal(VAL(c[5], int64_t, j), (int64_t)v_u32(i));
    assert_int_equal(is_valid(c[6], j), !null_every(i, 9));
    if (!null_every(i, 9)) {
        const uint64_t *d = (const uint64_t *)c[6]->buffers[1] + 2 * (c[6]->offset + j);
        assert_true(d[0] == v_u64(i) && d[1] == 0);
    }
    assert_int_equal(is_valid(c[7], j), i % 10 != 9);
    if (i % 10 != 9) check_half(v_f16(i), VAL(c[7], uint32_t, j), i);
    /* ll: list<int16> */
    assert_int_equal(is_valid(c[8], j), i % 4 != 0);
    if (i % 4) {
        const int32_t *off = (const int32_t *)c[8]->buffers[1] + c[8]->offset;
        assert_int_equal(off[j + 1] - off[j], i % 3);
        const struct ArrowArray *it = c[8]->children[0];
        for (int64_t k = 0; k < i % 3; k++) {
            int64_t e = off[j] + k;
            assert_int_equal(is_valid(it, e), (i + k) % 5 != 0);
            if ((i + k) % 5) assert_int_equal(VAL(it, int16_t, e), (uint8_t)(i + k));
        }
    }
    /* st: struct<a: int32, b: timestamp[us]> */
    assert_int_equal(is_valid(c[9], j), i % 6 != 0);
    if (i % 6) {
        const struct ArrowArray *a = c[9]->children[0], *bb = c[9]->children[1];
        int64_t k = c[9]->offset + j; /* a struct's offset applies to its children */
        assert_int_equal(is_valid(a, k), i % 5 != 2);
        if (i % 5 != 2) assert_int_equal(VAL(a, int32_t, k), 60000 + i);
        assert_int_equal(VAL(bb, int64_t, k), -i * 1001 * 1000);
    }
    /* m: map<utf8, int64> */
    assert_int_equal(is_valid(c[10], j), i % 11 != 3);
    if (i % 11 != 3) {
        const int32_t *off = (const int32_t *)c[10]->buffers[1] + c[10]->offset;
        assert_int_equal(off[j + 1] - off[j], i % 3);
        const struct ArrowArray *v = c[10]->children[0]->children[1];
        for (int64_t k = 0; k < i % 3; k++) {
            int64_t e = off[j] + k;
            assert_int_equal(is_valid(v, e), k != 1);
            if (k != 1) assert_int_equal(VAL(v, int64_t, e), (int64_t)(UINT32_MAX - (uint32_t)(i * 3 + k)));
        }
    }
#undef VAL
}

static void scan_and_check(unsigned cast, int threads, int64_t batch_rows) {
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, &err), 0);
    struct qv_scan_options o = {.cast = cast, .threads = threads, .batch_rows = batch_rows,
                                .validate = QV_SCAN_VALIDATE_FULL};
    struct ArrowArrayStream st;
    int rc = qv_scan_open(rd, &o, res, &st, &err);
    if (rc) fail_msg("scan_open: %s", err.message);
    struct ArrowSchema sc;
    assert_int_equal(st.get_schema(&st, &sc), 0);
    check_schema(&sc);
    /* The output columns validate against the output schema. */
    struct qv_schema *out_schema;
    rc = qv_schema_import(&sc, res, &out_schema, &err);
    if (rc) fail_msg("import: %s", err.message);
    int64_t n = 0;
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc) fail_msg("get_next: %s", st.get_last_error(&st));
        if (!b.release) break;
        for (int c = 0; c < NCOLS; c++) {
            rc = qv_arrow_array_validate(b.children[c], &out_schema->root.children[c],
                                         QV_VALIDATE_FULL, &err);
            if (rc) fail_msg("column %d: %s", c, err.message);
        }
        for (int64_t j = 0; j < b.length; j++) check_row(&b, j, n + j);
        n += b.length;
        b.release(&b);
    }
    assert_int_equal(n, ROWS);
    qv_schema_destroy(out_schema);
    sc.release(&sc);
    st.release(&st);
    qv_reader_close(rd);
}

static void test_spark_cast_all_modes(void **state) {
    (void)state;
    scan_and_check(QV_CAST_SPARK, QV_SCAN_SYNC, 700);
    scan_and_check(QV_CAST_SPARK, 2, 333);
    scan_and_check(QV_CAST_SPARK, 4, 65536);
}

/* Each flag alone changes only its own types. */
static void test_flags_alone(void **state) {
    (void)state;
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, NULL), 0);
    struct {
        unsigned cast;
        const char *fmt[NCOLS];
    } cases[] = {
        {0, {"tss:Europe/Paris", "tsm:", "tsn:UTC", "C", "S", "I", "L", "e", "+L", "+s", "+m", "l"}},
        {QV_CAST_TIMESTAMP_US,
         {"tsu:Europe/Paris", "tsu:", "tsu:UTC", "C", "S", "I", "L", "e", "+L", "+s", "+m", "l"}},
        {QV_CAST_UNSIGNED_WIDEN,
         {"tss:Europe/Paris", "tsm:", "tsn:UTC", "s", "i", "l", "d:20,0", "e", "+L", "+s", "+m", "l"}},
        {QV_CAST_FLOAT16_TO_32,
         {"tss:Europe/Paris", "tsm:", "tsn:UTC", "C", "S", "I", "L", "f", "+L", "+s", "+m", "l"}},
        {QV_CAST_LARGE_LIST,
         {"tss:Europe/Paris", "tsm:", "tsn:UTC", "C", "S", "I", "L", "e", "+l", "+s", "+m", "l"}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qv_scan_options o = {.cast = cases[k].cast, .threads = QV_SCAN_SYNC};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
        struct ArrowSchema sc;
        assert_int_equal(st.get_schema(&st, &sc), 0);
        for (int c = 0; c < NCOLS; c++) assert_string_equal(sc.children[c]->format, cases[k].fmt[c]);
        struct qv_schema *os;
        assert_int_equal(qv_schema_import(&sc, res, &os, NULL), 0);
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), 0);
        assert_non_null(b.release);
        for (int c = 0; c < NCOLS; c++) {
            struct qv_error err;
            if (qv_arrow_array_validate(b.children[c], &os->root.children[c], QV_VALIDATE_FULL, &err))
                fail_msg("cast 0x%x column %d: %s", cases[k].cast, c, err.message);
        }
        b.release(&b);
        qv_schema_destroy(os);
        sc.release(&sc);
        st.release(&st);
    }
    /* Unknown flags are refused; casts compose with nested projection (the
     * pruned type is what gets cast, and every batch validates against the
     * exported, cast schema). */
    struct ArrowArrayStream st;
    struct qv_error err;
    struct qv_scan_options bad = {.cast = 0x10};
    assert_int_equal(qv_scan_open(rd, &bad, res, &st, &err), EINVAL);
    assert_non_null(strstr(err.message, "cast"));
    int32_t p0 = 0;
    struct qv_column_path cp = {.column = 9, .depth = 1, .path = &p0};
    struct qv_scan_options paths = {.paths = &cp, .n_paths = 1, .cast = QV_CAST_SPARK};
    assert_int_equal(qv_scan_open(rd, &paths, res, &st, &err), 0);
    struct ArrowSchema psc;
    assert_int_equal(st.get_schema(&st, &psc), 0);
    struct qv_schema *ps = NULL;
    assert_int_equal(qv_schema_import(&psc, res, &ps, &err), 0);
    assert_int_equal(ps->root.n_children, 1);
    assert_int_equal(ps->root.children[0].n_children, 1);
    int64_t prows = 0;
    for (;;) {
        struct ArrowArray pb;
        assert_int_equal(st.get_next(&st, &pb), 0);
        if (!pb.release) break;
        prows += pb.length;
        if (qv_arrow_array_validate(&pb, &ps->root, QV_VALIDATE_FULL, &err))
            fail_msg("cast with paths: %s", err.message);
        pb.release(&pb);
    }
    assert_true(prows > 0);
    qv_schema_destroy(ps);
    psc.release(&psc);
    st.release(&st);
    qv_reader_close(rd);
}

/* ---- overflow ---- */

static const struct qv_field lt_item = {.name = "item", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_S,
                                        .nullable = true};
static const struct qv_field ov_cols[] = {
    {.name = "t", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_S, .nullable = true},
    {.name = "lt", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = &lt_item},
    {.name = "tm", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_MS, .nullable = true},
};
static const struct qv_field ov_root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 3,
                                        .children = ov_cols};
#define BIG_S (INT64_MAX / 1000000 + 1) /* seconds whose microseconds overflow */

static int ov_row(struct qv_appender **a, int64_t i) {
    /* Row 1234 (row group 1, row 234) of t overflows; nulls around it. */
    int rc = i >= 1240 && i < 1250 ? qv_append_null(a[0])
                                   : qv_append_timestamp(a[0], i == 1234 ? -BIG_S : i);
    /* lt: row 2102 (row group 2, row 102) holds the bad element, the second
     * of two. */
    if (!rc) rc = qv_append_list_begin(a[1]);
    for (int64_t k = 0; !rc && k < i % 4; k++)
        rc = qv_append_timestamp(qv_appender_child(a[1], 0), i == 2102 && k == 1 ? BIG_S : k);
    if (!rc) rc = qv_append_list_end(a[1]);
    /* tm: the largest millisecond value that fits, and its negative. */
    if (!rc) rc = qv_append_timestamp(a[2], i % 2 ? INT64_MAX / 1000 : -(INT64_MAX / 1000));
    return rc;
}

static void expect_overflow(struct qv_reader *rd, int32_t column, int threads, const char *want1,
                            const char *want2) {
    struct qv_scan_options o = {.cast = QV_CAST_TIMESTAMP_US, .columns = &column, .n_columns = 1,
                                .threads = threads, .batch_rows = 300};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
    int rc;
    for (;;) {
        struct ArrowArray b;
        rc = st.get_next(&st, &b);
        if (rc || !b.release) break;
        b.release(&b);
    }
    assert_int_equal(rc, EOVERFLOW);
    const char *msg = st.get_last_error(&st);
    if (!strstr(msg, want1) || !strstr(msg, want2) || !strstr(msg, "ov.qvr"))
        fail_msg("unexpected message: %s", msg);
    st.release(&st);
}

static void test_overflow_names_row(void **state) {
    (void)state;
    char p[512];
    tu_path(p, sizeof p, "ov.qvr");
    write_file(p, &ov_root, 2200, ov_row);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(p, NULL, res, &rd, NULL), 0);
    int modes[] = {QV_SCAN_SYNC, 2};
    for (int m = 0; m < 2; m++) {
        expect_overflow(rd, 0, modes[m], "column 't', row group 1, row 234:",
                        "timestamp[s] value -9223372036855 does not fit timestamp[us]");
        expect_overflow(rd, 1, modes[m], "column 'lt' (field 'lt.item'), row group 2, row 102:",
                        "value 9223372036855 does not fit");
    }
    /* The largest values that fit convert exactly. */
    int32_t col = 2;
    struct qv_scan_options o = {.cast = QV_CAST_TIMESTAMP_US, .columns = &col, .n_columns = 1};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
    int64_t n = 0;
    for (;;) {
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), 0);
        if (!b.release) break;
        const int64_t *v = b.children[0]->buffers[1];
        for (int64_t j = 0; j < b.length; j++, n++)
            assert_true(v[j] == (n % 2 ? 1 : -1) * (INT64_MAX / 1000 * 1000));
        b.release(&b);
    }
    assert_int_equal(n, 2200);
    st.release(&st);
    qv_reader_close(rd);
    unlink(p);
}

/* ---- arrays with offsets, directly ---- */

static void test_sliced_arrays(void **state) {
    (void)state;
    static const struct qv_field li = {.name = "item", .type = QV_TYPE_UINT16, .nullable = true};
    static const struct qv_field sc[] = {
        {.name = "t", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_NS, .nullable = true},
        {.name = "h", .type = QV_TYPE_FLOAT16, .nullable = true},
        {.name = "l", .type = QV_TYPE_LARGE_LIST, .nullable = true, .n_children = 1, .children = &li},
    };
    static const struct qv_field rt = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 3,
                                       .children = sc};
    struct qv_schema *s;
    assert_int_equal(qv_schema_create(&rt, res, &s, NULL), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, res, NULL, &b, NULL), 0);
    for (int64_t i = 0; i < 20; i++) {
        struct qv_appender *t = qv_builder_column(b, 0), *h = qv_builder_column(b, 1),
                           *l = qv_builder_column(b, 2);
        assert_int_equal(i % 4 == 3 ? qv_append_null(t) : qv_append_timestamp(t, -1500 * i - 1), 0);
        assert_int_equal(qv_append_float16(h, v_f16(i)), 0);
        assert_int_equal(qv_append_list_begin(l), 0);
        for (int64_t k = 0; k < i % 3; k++)
            assert_int_equal(qv_append_uint16(qv_appender_child(l, 0), (uint16_t)(65535 - i - k)), 0);
        assert_int_equal(qv_append_list_end(l), 0);
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, NULL), 0);
    const int64_t off = 5, len = 11;
    struct qv__cast_where w = {.file = "mem", .rg = 0, .first_row = 0};
    for (int c = 0; c < 3; c++) {
        struct ArrowArray *col = batch.children[c];
        col->offset = off;
        col->length = len;
        col->null_count = col->buffers[0] ? len - qv_bits_count(col->buffers[0], off, len) : 0;
        struct qv_error err;
        int rc = qv__cast_column(col, &sc[c], QV_CAST_SPARK, res, &w, &err);
        if (rc) fail_msg("cast %d: %s", c, err.message);
    }
    /* Validate against the cast types. */
    static const struct qv_field li2 = {.name = "item", .type = QV_TYPE_INT32, .nullable = true};
    static const struct qv_field sc2[] = {
        {.name = "t", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_US, .nullable = true},
        {.name = "h", .type = QV_TYPE_FLOAT32, .nullable = true},
        {.name = "l", .type = QV_TYPE_LIST, .nullable = true, .n_children = 1, .children = &li2},
    };
    for (int c = 0; c < 3; c++) {
        struct qv_error err;
        if (qv_arrow_array_validate(batch.children[c], &sc2[c], QV_VALIDATE_FULL, &err))
            fail_msg("column %d: %s", c, err.message);
    }
    const struct ArrowArray *t = batch.children[0], *h = batch.children[1], *l = batch.children[2];
    for (int64_t j = 0; j < len; j++) {
        int64_t i = off + j;
        assert_int_equal(is_valid(t, j), i % 4 != 3);
        if (i % 4 != 3)
            assert_int_equal(((const int64_t *)t->buffers[1])[off + j], floor_div_ref(-1500 * i - 1, 1000));
        check_half(v_f16(i), ((const uint32_t *)h->buffers[1])[off + j], i);
        const int32_t *lo = (const int32_t *)l->buffers[1] + off;
        assert_int_equal(lo[j + 1] - lo[j], i % 3);
        for (int64_t k = 0; k < i % 3; k++)
            assert_int_equal(((const int32_t *)l->children[0]->buffers[1])[l->children[0]->offset + lo[j] + k],
                             65535 - i - k);
    }
    batch.release(&batch);
    qv_builder_destroy(b);
    qv_schema_destroy(s);
}

/* A large_list whose offsets pass INT32_MAX cannot become a list. */
static void test_large_list_offsets_overflow(void **state) {
    (void)state;
    static const struct qv_field it = {.name = "item", .type = QV_TYPE_INT8, .nullable = true};
    static const struct qv_field f = {.name = "big", .type = QV_TYPE_LARGE_LIST, .nullable = true,
                                      .n_children = 1, .children = &it};
    struct ArrowArray a;
    assert_int_equal(qv_owned_array_create(&a, &f, res, NULL), 0);
    int64_t *o = qv_owned_array_alloc_buffer(&a, 1, 3 * sizeof(int64_t), NULL);
    assert_non_null(o);
    o[0] = 0;
    o[1] = 5;
    o[2] = (int64_t)INT32_MAX + 10;
    a.length = 2;
    a.children[0]->length = o[2]; /* the int8 values are never read by the cast */
    int64_t rows[2] = {70, 71};
    struct qv__cast_where w = {.file = "mem.qvr", .rg = 4, .rows = rows};
    struct qv_error err;
    assert_int_equal(qv__cast_column(&a, &f, QV_CAST_LARGE_LIST, res, &w, &err), EOVERFLOW);
    assert_null(a.release); /* released on failure */
    if (!strstr(err.message, "column 'big', row group 4, row 71:") ||
        !strstr(err.message, "large_list offset 2147483657"))
        fail_msg("unexpected message: %s", err.message);
}

/* A value that would overflow under a null is not an error. */
static void test_overflow_under_null(void **state) {
    (void)state;
    static const struct qv_field f = {.name = "t", .type = QV_TYPE_TIMESTAMP, .unit = QV_TIME_S,
                                      .nullable = true};
    struct ArrowArray a;
    assert_int_equal(qv_owned_array_create(&a, &f, res, NULL), 0);
    int64_t *v = qv_owned_array_alloc_buffer(&a, 1, 4 * sizeof(int64_t), NULL);
    uint8_t *valid = qv_owned_array_alloc_buffer(&a, 0, 1, NULL);
    assert_true(v && valid);
    v[0] = 1;
    v[1] = INT64_MIN; /* under the null */
    v[2] = -2;
    v[3] = BIG_S;
    valid[0] = 0x5; /* slots 0 and 2 valid; 1 null; 3 outside the slice */
    a.length = 3;
    a.null_count = 1;
    struct qv__cast_where w = {.file = "mem"};
    assert_int_equal(qv__cast_column(&a, &f, QV_CAST_TIMESTAMP_US, res, &w, NULL), 0);
    const int64_t *out = a.buffers[1];
    assert_true(out[0] == 1000000 && out[1] == 0 && out[2] == -2000000);
    a.release(&a);
}

/* Every one of the 65,536 half bit patterns converts exactly. */
static void test_float16_exhaustive(void **state) {
    (void)state;
    static const struct qv_field f = {.name = "h", .type = QV_TYPE_FLOAT16};
    struct ArrowArray a;
    assert_int_equal(qv_owned_array_create(&a, &f, res, NULL), 0);
    uint16_t *v = qv_owned_array_alloc_buffer(&a, 1, 65536 * sizeof(uint16_t), NULL);
    assert_non_null(v);
    for (uint32_t h = 0; h < 65536; h++) v[h] = (uint16_t)h;
    a.length = 65536;
    struct qv__cast_where w = {.file = "mem"};
    assert_int_equal(qv__cast_column(&a, &f, QV_CAST_FLOAT16_TO_32, res, &w, NULL), 0);
    const uint32_t *out = a.buffers[1];
    for (uint32_t h = 0; h < 65536; h++) check_half((uint16_t)h, out[h], h);
    a.release(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spark_cast_all_modes),
        cmocka_unit_test(test_flags_alone),
        cmocka_unit_test(test_overflow_names_row),
        cmocka_unit_test(test_sliced_arrays),
        cmocka_unit_test(test_large_list_offsets_overflow),
        cmocka_unit_test(test_float16_exhaustive),
        cmocka_unit_test(test_overflow_under_null),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
