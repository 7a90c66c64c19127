/* Hostile inputs to the conjunct-by-conjunct filter (core/src/scan/filter.c)
 * and the encoded-domain kernels under it: literals at every boundary of
 * every kind (int64 min/max, uint64 max, literals outside the column's
 * type, decimals at +-(10^18 - 1), dates before 1970, timestamps of each
 * unit, -0.0 and NaN in both NaN orders, strings with embedded NULs, empty
 * and overlong prefixes, non-UTF-8 bytes), IN lists with NULL and
 * duplicates, NOT / OR over several columns, row groups that are all null,
 * one-row files, takes and max_rows with filters, each file written with
 * every encoding forced in turn.
 *
 * The reference is the scan without a filter, every column decoded, and
 * qv_expr_eval over the whole batch: the plan's own kernels on Arrow
 * arrays, which the encoded-domain path must agree with row for row. Some
 * cases also carry the number of rows a hand count says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "pool_env.h"
#include "format/format_testing.h"
#include "quiver/quiver.h"
#include "test_util.h"

/* Column 0 of every schema here is the row number ("id", int64, or utf8
 * "r%07d" in string schemas, or float64 in float schemas, so that a forced
 * encoding can hold it). */
typedef int (*gen_fn)(struct qv_appender *a, const struct qv_field *f, int64_t col, int64_t row,
                      int64_t rows);

static int append_id(struct qv_appender *a, const struct qv_field *f, int64_t i) {
    if (f->type == QV_TYPE_INT64) return qv_append_int64(a, i);
    if (f->type == QV_TYPE_FLOAT64) return qv_append_float64(a, (double)i);
    char id[24];
    snprintf(id, sizeof id, "r%07lld", (long long)i);
    return qv_append_string(a, id, strlen(id));
}

static int64_t id_of(const struct ArrowArray *col, const struct qv_field *f, int64_t i) {
    int64_t p = col->offset + i;
    if (f->type == QV_TYPE_INT64) return ((const int64_t *)col->buffers[1])[p];
    if (f->type == QV_TYPE_FLOAT64) return (int64_t)((const double *)col->buffers[1])[p];
    const int32_t *o = col->buffers[1];
    const char *d = col->buffers[2];
    char buf[32] = "";
    int32_t len = o[p + 1] - o[p];
    if (len > 0 && len < (int32_t)sizeof buf) memcpy(buf, d + o[p], (size_t)len);
    return buf[0] == 'r' ? strtoll(buf + 1, NULL, 10) : -1;
}

struct tfile {
    struct qv_schema *schema;
    struct qv_reader *rd;
    int64_t rows;
    char path[512];
};

/* Writes `rows` rows (gen for every column but the id) with `force` on
 * every values segment; false when the forced encoding cannot hold them. */
static bool tfile_open(struct pool_env *E, struct tfile *T, const struct qv_field *cols,
                       int64_t ncols,
                       int64_t rows, int64_t rg_rows, int force, gen_fn gen, const char *name,
                       const struct qv_reader_options *ro) {
    memset(T, 0, sizeof *T);
    struct qv_field root = {.type = QV_TYPE_STRUCT, .children = cols, .n_children = ncols};
    assert_int_equal(qv_schema_create(&root, E->r, &T->schema, NULL), 0);
    struct qv_builder *b;
    struct qv_error err;
    assert_int_equal(qv_builder_create(T->schema, E->r, NULL, &b, &err), 0);
    for (int64_t c = 0; c < ncols; c++) {
        struct qv_appender *a = qv_builder_column(b, c);
        for (int64_t i = 0; i < rows; i++) {
            int rc = c == 0 ? append_id(a, &cols[0], i) : gen(a, &cols[c], c, i, rows);
            if (rc) fail_msg("append column %lld row %lld: %d", (long long)c, (long long)i, rc);
        }
    }
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    tu_path(T->path, sizeof T->path, name);
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = rg_rows};
    assert_int_equal(qv_writer_open(T->path, T->schema, &o, E->r, &w, &err), 0);
    qv_writer_force_encoding(w, force);
    int rc = qv_writer_write(w, &batch, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    qv_writer_close(w);
    batch.release(&batch);
    if (rc) {
        unlink(T->path);
        qv_schema_destroy(T->schema);
        return false;
    }
    T->rows = rows;
    rc = qv_reader_open(T->path, ro, E->r, &T->rd, &err);
    if (rc) fail_msg("reader_open: %s", err.message);
    return true;
}

static void tfile_close(struct tfile *T) {
    qv_reader_close(T->rd);
    unlink(T->path);
    qv_schema_destroy(T->schema);
}

/* The rows (ids) the reference says pass: every column decoded, the filter
 * evaluated by qv_expr_eval. -1: the filter does not parse or bind (then
 * the scan must refuse it too). */
static int64_t reference(struct pool_env *E, struct tfile *T, const char *text, int nan_order,
                         int64_t *out) {
    struct qv_expr *e;
    struct qv_error err;
    if (qv_expr_parse(text, E->r, &e, &err)) return -1;
    if (qv_expr_bind_ex(e, T->schema, nan_order, &err)) {
        qv_expr_destroy(e);
        return -1;
    }
    struct qv_scan_options o = {.threads = QV_SCAN_SYNC, .batch_rows = 1000};
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(T->rd, &o, E->r, &st, &err), 0);
    int64_t k = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st.get_next(&st, &b);
        if (rc) fail_msg("reference get_next: %s", st.get_last_error(&st));
        if (!b.release) break;
        uint8_t *sel = calloc(1, (size_t)(b.length + 8) / 8 + 8);
        rc = qv_expr_eval(e, &b, NULL, sel, NULL, E->r, &err);
        if (rc) fail_msg("reference eval of %s: %s", text, err.message);
        for (int64_t i = 0; i < b.length; i++)
            if (sel[i >> 3] >> (i & 7) & 1) out[k++] = id_of(b.children[0], &T->schema->root.children[0], i);
        free(sel);
        b.release(&b);
    }
    st.release(&st);
    qv_expr_destroy(e);
    return k;
}

struct variant {
    int threads, prefetch;
    int64_t batch_rows;
    int take;         /* every take-th row (0: no take) */
    int64_t max_rows; /* 0: none */
    bool project_all;
};

static const struct variant variants[] = {
    {QV_SCAN_SYNC, 0, 1000, 0, 0, false},
    {QV_SCAN_SYNC, 0, 65536, 0, 0, true},
    {2, 2, 700, 0, 0, false},
    {QV_SCAN_SYNC, 0, 1024, 3, 0, false},
    {3, 1, 333, 2, 0, true},
    {QV_SCAN_SYNC, 0, 500, 0, 7, false},
    {2, 4, 999, 5, 3, false},
};

/* Runs `text` through the scan in every variant and compares with the
 * reference; `want` >= 0 is a hand count of the rows on the whole file.
 * Returns the rows the reference selected. */
static int64_t check(struct pool_env *E, struct tfile *T, const char *text, int nan_order,
                     int64_t want) {
    int64_t *ref = malloc((size_t)(T->rows + 1) * sizeof *ref);
    int64_t *expect = malloc((size_t)(T->rows + 1) * sizeof *expect);
    int64_t *take = malloc((size_t)(T->rows + 1) * sizeof *take);
    int64_t nref = reference(E, T, text, nan_order, ref);
    if (want >= 0 && nref != want)
        fail_msg("the reference says %lld rows, the hand count %lld\n  filter: %s", (long long)nref,
                 (long long)want, text);
    /* Variant 0 always, and one of the others in turn (all of them for
     * every filter would take too long under the sanitizers). */
    static size_t turn;
    const size_t nv = sizeof variants / sizeof *variants;
    size_t pick[2] = {0, 1 + turn++ % (nv - 1)};
    for (size_t pv = 0; pv < 2; pv++) {
        size_t v = pick[pv];
        const struct variant *V = &variants[v];
        int64_t n_take = 0, n_expect = 0;
        if (V->take)
            for (int64_t i = 0; i < T->rows; i += V->take) take[n_take++] = i;
        for (int64_t j = 0; j < nref; j++)
            if (!V->take || ref[j] % V->take == 0) expect[n_expect++] = ref[j];
        if (V->max_rows && n_expect > V->max_rows) n_expect = V->max_rows;
        int32_t proj = 0;
        struct qv_scan_options o = {.columns = V->project_all ? NULL : &proj,
                                    .n_columns = V->project_all ? 0 : 1,
                                    .filter = text, .threads = V->threads,
                                    .prefetch = V->prefetch, .batch_rows = V->batch_rows,
                                    .take = V->take ? take : NULL, .n_take = n_take,
                                    .max_rows = V->max_rows, .nan_order = nan_order};
        size_t used0 = qv_reservation_used(E->r);
        struct ArrowArrayStream st;
        struct qv_error err;
        int rc = qv_scan_open(T->rd, &o, E->r, &st, &err);
        if (nref < 0) {
            if (rc == 0) fail_msg("the scan took %s, which does not bind", text);
            continue;
        }
        if (rc) fail_msg("scan_open (variant %zu) of %s: %s", v, text, err.message);
        int64_t k = 0;
        for (;;) {
            struct ArrowArray b;
            rc = st.get_next(&st, &b);
            if (rc) fail_msg("get_next (variant %zu) of %s: %s", v, text, st.get_last_error(&st));
            if (!b.release) break;
            for (int64_t i = 0; i < b.length; i++) {
                int64_t id = id_of(b.children[0], &T->schema->root.children[0], i);
                if (k >= n_expect || expect[k] != id)
                    fail_msg("variant %zu: output row %lld is id %lld, the reference says %lld "
                             "(of %lld)\n  filter: %s",
                             v, (long long)k, (long long)id,
                             k < n_expect ? (long long)expect[k] : -1LL, (long long)n_expect, text);
                k++;
            }
            b.release(&b);
        }
        st.release(&st);
        if (k != n_expect)
            fail_msg("variant %zu: %lld rows, the reference says %lld\n  filter: %s", v,
                     (long long)k, (long long)n_expect, text);
        if (qv_reservation_used(E->r) != used0)
            fail_msg("variant %zu left %lld bytes behind\n  filter: %s", v,
                     (long long)(qv_reservation_used(E->r) - used0), text);
    }
    free(take);
    free(expect);
    free(ref);
    return nref;
}

static const int int_encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN,  QV_ENC_BITPACK, QV_ENC_FOR,
                               QV_ENC_DELTA, QV_ENC_ZIGZAG, QV_ENC_DICT,   QV_ENC_RLE,
                               QV_ENC_SPARSE, QV_ENC_CONSTANT, QV_ENC_ZSTD, QV_ENC_LZ4,
                               /* issue 15: patched; relative stores every integer
                                * column against an earlier one of its kind;
                                * bucket (format 7.0) */
                               QV_ENC_PATCHED, QV_ENC_RELATIVE, QV_ENC_BUCKET};
#define N_INT_ENCS ((int)(sizeof int_encs / sizeof *int_encs))

/* ---- integers at the limits of their kinds ---- */

static const struct qv_field lim_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "i8", .type = QV_TYPE_INT8, .nullable = true},
    {.name = "i16", .type = QV_TYPE_INT16, .nullable = true},
    {.name = "i32", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "i64", .type = QV_TYPE_INT64, .nullable = true},
    {.name = "u8", .type = QV_TYPE_UINT8, .nullable = true},
    {.name = "u16", .type = QV_TYPE_UINT16, .nullable = true},
    {.name = "u32", .type = QV_TYPE_UINT32, .nullable = true},
    {.name = "u64", .type = QV_TYPE_UINT64, .nullable = true},
};

/* Values drawn from the kind's extremes and their neighbours, in runs,
 * with nulls; rows [1500, 3000) of columns i16 and u16 all null (a whole
 * row group). `mode` 1: only the kind's max and min (two values: a
 * dictionary of two, runs); 2: one value (constant). */
static int lim_mode;
static int gen_lim(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                   int64_t rows) {
    (void)rows;
    uint64_t h = (uint64_t)(i / 3) * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if ((f->type == QV_TYPE_INT16 || f->type == QV_TYPE_UINT16) && i >= 1500 && i < 3000)
        return qv_append_null(a);
    if (lim_mode == 0 && h % 11 == 0) return qv_append_null(a);
    int pick = lim_mode == 2 ? 1 : lim_mode == 1 ? (int)(h % 2) : (int)(h % 7);
    switch (f->type) {
    case QV_TYPE_INT8: {
        static const int8_t v[] = {INT8_MIN, INT8_MAX, INT8_MIN + 1, INT8_MAX - 1, 0, -1, 1};
        return qv_append_int8(a, v[pick]);
    }
    case QV_TYPE_INT16: {
        static const int16_t v[] = {INT16_MIN, INT16_MAX, INT16_MIN + 1, INT16_MAX - 1, 0, -1, 1};
        return qv_append_int16(a, v[pick]);
    }
    case QV_TYPE_INT32: {
        static const int32_t v[] = {INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1, 0, -1, 1};
        return qv_append_int32(a, v[pick]);
    }
    case QV_TYPE_INT64: {
        static const int64_t v[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, 0, -1, 1};
        return qv_append_int64(a, v[pick]);
    }
    case QV_TYPE_UINT8: {
        static const uint8_t v[] = {0, UINT8_MAX, 1, UINT8_MAX - 1, 127, 128, 2};
        return qv_append_uint8(a, v[pick]);
    }
    case QV_TYPE_UINT16: {
        static const uint16_t v[] = {0, UINT16_MAX, 1, UINT16_MAX - 1, 32767, 32768, 2};
        return qv_append_uint16(a, v[pick]);
    }
    case QV_TYPE_UINT32: {
        static const uint32_t v[] = {0, UINT32_MAX, 1, UINT32_MAX - 1, INT32_MAX, 1u << 31, 2};
        return qv_append_uint32(a, v[pick]);
    }
    default: {
        static const uint64_t v[] = {0, UINT64_MAX, 1, UINT64_MAX - 1, INT64_MAX,
                                     (uint64_t)INT64_MAX + 1, 2};
        return qv_append_uint64(a, v[pick]);
    }
    }
}

static const char *const lim_lits[][8] = {
    /* column, min, max, min-1, max+1, far below, far above */
    {"i8", "-128", "127", "-129", "128", "-9223372036854775808", "18446744073709551615"},
    {"i16", "-32768", "32767", "-32769", "32768", "-99999999999999999999", "99999999999999999999"},
    {"i32", "-2147483648", "2147483647", "-2147483649", "2147483648", "-9223372036854775809",
     "9223372036854775808"},
    {"i64", "-9223372036854775808", "9223372036854775807", "-9223372036854775809",
     "9223372036854775808", "-18446744073709551616", "18446744073709551616"},
    {"u8", "0", "255", "-1", "256", "-9223372036854775808", "18446744073709551616"},
    {"u16", "0", "65535", "-1", "65536", "-9223372036854775809", "18446744073709551615"},
    {"u32", "0", "4294967295", "-1", "4294967296", "-9223372036854775808", "9223372036854775807"},
    {"u64", "0", "18446744073709551615", "-1", "18446744073709551616", "-9223372036854775808",
     "99999999999999999999"},
};

static void lim_filters(struct pool_env *E, struct tfile *T) {
    static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">="};
    char text[512];
    for (size_t c = 0; c < sizeof lim_lits / sizeof *lim_lits; c++) {
        const char *const *L = lim_lits[c];
        for (int l = 1; l < 7; l++) {
            for (int op = 0; op < 6; op++) {
                snprintf(text, sizeof text, "%s %s %s", L[0], ops[op], L[l]);
                check(E, T, text, 0, -1);
                /* the literal on the left */
                snprintf(text, sizeof text, "%s %s %s", L[l], ops[op], L[0]);
                check(E, T, text, 0, -1);
            }
            for (int m = 1; m < 5; m++) {
                snprintf(text, sizeof text, "%s BETWEEN %s AND %s", L[0], L[l], L[m]);
                check(E, T, text, 0, -1);
                snprintf(text, sizeof text, "%s >= %s AND %s < %s", L[0], L[l], L[0], L[m]);
                check(E, T, text, 0, -1);
                snprintf(text, sizeof text, "%s > %s AND %s <= %s AND id >= 0", L[0], L[l], L[0], L[m]);
                check(E, T, text, 0, -1);
            }
            snprintf(text, sizeof text, "%s IN (%s, %s, NULL, %s)", L[0], L[l], L[l], L[1]);
            check(E, T, text, 0, -1);
            snprintf(text, sizeof text, "%s NOT IN (%s, %s)", L[0], L[l], L[2]);
            check(E, T, text, 0, -1);
            snprintf(text, sizeof text, "%s NOT IN (%s, NULL)", L[0], L[l]);
            check(E, T, text, 0, 0);
            snprintf(text, sizeof text, "NOT (%s = %s) AND %s != %s", L[0], L[l], L[0], L[2]);
            check(E, T, text, 0, -1);
            snprintf(text, sizeof text, "%s = %s OR i8 = -128 OR u64 = 0", L[0], L[l]);
            check(E, T, text, 0, -1);
        }
        snprintf(text, sizeof text, "%s > 1.5 AND %s < 126.5", L[0], L[0]);
        check(E, T, text, 0, -1);
        snprintf(text, sizeof text, "%s >= -0.5 AND %s <= -0.5", L[0], L[0]);
        check(E, T, text, 0, 0);
        snprintf(text, sizeof text, "%s IS NULL AND %s = 1", L[0], L[0]);
        check(E, T, text, 0, 0);
        snprintf(text, sizeof text, "%s IS NOT NULL AND %s != 1", L[0], L[0]);
        check(E, T, text, 0, -1);
    }
}

static void test_int_limits(void **state) {
    struct pool_env *E = *state;
    for (lim_mode = 0; lim_mode < 3; lim_mode++)
        for (int e = 0; e < N_INT_ENCS; e++) {
            int enc = int_encs[e];
            if (lim_mode == 1 && enc != QV_ENC_DICT && enc != QV_ENC_RLE && enc != QV_ENC_AUTO) continue;
            if (lim_mode == 2 && enc != QV_ENC_CONSTANT && enc != QV_ENC_AUTO) continue;
            struct tfile T;
            if (!tfile_open(E, &T, lim_cols, sizeof lim_cols / sizeof *lim_cols, 4000, 1500,
                            int_encs[e], gen_lim, "lim.qvr", NULL))
                continue;
            lim_filters(E, &T);
            tfile_close(&T);
        }
}

/* ---- decimals at +-(10^18 - 1), dates before 1970, timestamps of each unit ---- */

static const struct qv_field num_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "d18", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 18, .scale = 0},
    {.name = "d4", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 18, .scale = 4},
    {.name = "day", .type = QV_TYPE_DATE32, .nullable = true},
    {.name = "ts_s", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_S},
    {.name = "ts_ms", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_MS},
    {.name = "ts_us", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_US},
    {.name = "ts_ns", .type = QV_TYPE_TIMESTAMP, .nullable = true, .unit = QV_TIME_NS},
};

#define E18M1 INT64_C(999999999999999999)

static int gen_num(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                   int64_t rows) {
    (void)rows;
    uint64_t h = (uint64_t)(i / 2) * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    if (h % 13 == 0) return qv_append_null(a);
    int pick = (int)(h % 8);
    switch (f->type) {
    case QV_TYPE_DECIMAL128: {
        static const int64_t v[] = {E18M1, -E18M1, E18M1 - 1, -E18M1 + 1, 0, -1, 1, 10000};
        return qv_append_decimal64(a, v[pick]);
    }
    case QV_TYPE_DATE32: {
        static const int32_t v[] = {-1, 0, 1, -719162, -25567, 2932896, -2, 19000};
        return qv_append_date32(a, v[pick]);
    }
    default: {
        /* around the epoch, a second and a day before it, and far ones */
        static const int64_t v[] = {-1, 0, 1, -999, -1000, -1001, -86400000, 1700000000000};
        int64_t x = v[pick];
        if (f->unit == QV_TIME_S) x /= 1000;
        if (f->unit == QV_TIME_NS) x *= 1000000;
        if (f->unit == QV_TIME_US) x *= 1000;
        return qv_append_timestamp(a, x);
    }
    }
}

static void test_numeric_limits(void **state) {
    struct pool_env *E = *state;
    static const char *const filters[] = {
        "d18 = 999999999999999999", "d18 >= 999999999999999999", "d18 > 999999999999999998",
        "d18 < -999999999999999998", "d18 <= -999999999999999999", "d18 = -999999999999999999",
        "d18 > 999999999999999999", "d18 < -999999999999999999", "d18 != 999999999999999999",
        "d18 > 1000000000000000000", "d18 < -1000000000000000000", "d18 >= -1000000000000000000",
        "d18 BETWEEN -999999999999999999 AND 999999999999999999",
        "d18 BETWEEN 999999999999999999 AND -999999999999999999",
        "d18 > 0.5", "d18 < -0.5", "d18 >= -0.5 AND d18 <= 0.5", "d18 = 0.5", "d18 != 0.5",
        "d18 IN (999999999999999999, -999999999999999999, NULL, 0.5)",
        "d18 NOT IN (999999999999999999, 1)",
        "d4 = 99999999999999.9999", "d4 > 99999999999999.9998", "d4 < -99999999999999.9998",
        "d4 >= 99999999999999.99985", "d4 <= -99999999999999.99985", "d4 = 0.00001",
        "d4 > 0.00001", "d4 < -0.00001", "d4 >= 1", "d4 BETWEEN -0.0001 AND 0.0001",
        "d4 > 100000000000000", "d4 < -100000000000000", "d4 = 1 OR d18 = 1",
        "d4 > 9223372036854775807", "d4 < -9223372036854775808", "d4 > 1e300",
        "day < DATE '1970-01-01'", "day <= DATE '1969-12-31'", "day = DATE '1969-12-31'",
        "day > DATE '1969-12-30'", "day BETWEEN DATE '0001-01-01' AND DATE '1900-01-01'",
        "day = DATE '0001-01-01'", "day >= DATE '9999-12-31'", "day < DATE '0001-01-01'",
        "day > DATE '+10000-01-01'", "day < DATE '-10000-01-01'",
        "day < TIMESTAMP '1969-12-31 12:00:00'", "day > TIMESTAMP '1969-12-31 12:00:00'",
        "day = TIMESTAMP '1969-12-31 00:00:00'", "day >= TIMESTAMP '1969-12-31 00:00:00.000000001'",
        "ts_s < TIMESTAMP '1970-01-01 00:00:00'", "ts_s = TIMESTAMP '1969-12-31 23:59:59'",
        "ts_s > TIMESTAMP '1969-12-31 23:59:58.5'", "ts_s < TIMESTAMP '1969-12-31 23:59:59.5'",
        "ts_s >= TIMESTAMP '1969-12-31 23:59:59.5'", "ts_s <= TIMESTAMP '1969-12-31 23:59:59.5'",
        "ts_s BETWEEN TIMESTAMP '1969-12-31 23:59:58.5' AND TIMESTAMP '1970-01-01 00:00:00.5'",
        "ts_ms = TIMESTAMP '1969-12-31 23:59:59.999'", "ts_ms < TIMESTAMP '1969-12-31 23:59:59.0005'",
        "ts_ms > TIMESTAMP '1969-12-31 23:59:59.9985'", "ts_ms = TIMESTAMP '1969-12-31 23:59:59.9995'",
        "ts_ms BETWEEN TIMESTAMP '1969-12-31 23:59:59' AND TIMESTAMP '1970-01-01'",
        "ts_us >= TIMESTAMP '1969-12-31 23:59:59.999'", "ts_us < TIMESTAMP '1969-12-31 00:00:00Z'",
        "ts_us = TIMESTAMP '1969-12-31 23:59:59.999999'", "ts_us > TIMESTAMP '2023-11-14 22:13:20+01:00'",
        "ts_ns < TIMESTAMP '1677-09-21 00:12:43.145224191'", "ts_ns > TIMESTAMP '2262-04-11 23:47:16.854775808'",
        "ts_ns = TIMESTAMP '1969-12-31 23:59:59.999'", "ts_ns >= TIMESTAMP '1969-12-31 23:59:59.999000001'",
        "ts_ns BETWEEN TIMESTAMP '1000-01-01' AND TIMESTAMP '1969-12-31 23:59:59.999999999'",
        "ts_s < DATE '1970-01-01'", "ts_ms >= DATE '1969-12-31'",
        "ts_ms IN (TIMESTAMP '1969-12-31 23:59:59.999', TIMESTAMP '1970-01-01', NULL)",
        "NOT (ts_ms < TIMESTAMP '1970-01-01') AND day IS NOT NULL",
        "(d18 > 0 OR day < DATE '1970-01-01') AND NOT (ts_ns = 0 OR d4 IS NULL)",
    };
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_FOR, QV_ENC_DELTA, QV_ENC_ZIGZAG,
                               QV_ENC_DICT, QV_ENC_RLE, QV_ENC_BITPACK, QV_ENC_ZSTD,
                               QV_ENC_PATCHED, QV_ENC_RELATIVE, QV_ENC_BUCKET};
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
        struct tfile T;
        if (!tfile_open(E, &T, num_cols, sizeof num_cols / sizeof *num_cols, 3000, 1100, encs[e],
                        gen_num, "num.qvr", NULL))
            continue;
        for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) check(E, &T, filters[k], 0, -1);
        tfile_close(&T);
    }
}

/* ---- floats: -0.0, NaN, infinities, in both NaN orders ---- */

static const struct qv_field flt_cols[] = {
    {.name = "id", .type = QV_TYPE_FLOAT64},
    {.name = "f32", .type = QV_TYPE_FLOAT32, .nullable = true},
    {.name = "f64", .type = QV_TYPE_FLOAT64, .nullable = true},
};

static int gen_flt(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                   int64_t rows) {
    (void)rows;
    uint64_t h = (uint64_t)(i / 4) * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    if (h % 13 == 0) return qv_append_null(a);
    double v[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 1.5, -1.5, DBL_MIN, -DBL_MAX, 1e300};
    double x = v[h % (sizeof v / sizeof *v)];
    return f->type == QV_TYPE_FLOAT32 ? qv_append_float32(a, (float)x) : qv_append_float64(a, x);
}

static void test_float_limits(void **state) {
    struct pool_env *E = *state;
    static const char *const cols[] = {"f32", "f64"};
    static const char *const lits[] = {"0", "-0.0", "0.0", "NaN", "-NaN", "inf", "-inf", "1.5",
                                       "-1.5", "1e300", "-1e400", "1e400", "3.4028235e38",
                                       "2.2250738585072014e-308", "0.1"};
    static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">="};
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_ALP, QV_ENC_DICT, QV_ENC_RLE,
                               QV_ENC_ZSTD, QV_ENC_CONSTANT, QV_ENC_SPARSE};
    char text[256];
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
        struct tfile T;
        if (!tfile_open(E, &T, flt_cols, sizeof flt_cols / sizeof *flt_cols, 2500, 1100, encs[e],
                        gen_flt, "flt.qvr", NULL))
            continue;
        for (int no = 0; no < 2; no++)
            for (int c = 0; c < 2; c++)
                for (size_t l = 0; l < sizeof lits / sizeof *lits; l++) {
                    for (int op = 0; op < 6; op++) {
                        snprintf(text, sizeof text, "%s %s %s", cols[c], ops[op], lits[l]);
                        check(E, &T, text, no, -1);
                    }
                    snprintf(text, sizeof text, "%s BETWEEN %s AND 1e300", cols[c], lits[l]);
                    check(E, &T, text, no, -1);
                    snprintf(text, sizeof text, "%s IN (%s, NaN, NULL, -0.0, %s)", cols[c], lits[l], lits[l]);
                    check(E, &T, text, no, -1);
                    snprintf(text, sizeof text, "%s NOT IN (%s, 1.5)", cols[c], lits[l]);
                    check(E, &T, text, no, -1);
                    snprintf(text, sizeof text, "NOT (%s < %s) OR f32 = f64", cols[c], lits[l]);
                    check(E, &T, text, no, -1);
                }
        tfile_close(&T);
    }
}

/* ---- strings: embedded NULs, empty and overlong prefixes, non-UTF-8 ---- */

static const struct qv_field str_cols[] = {
    {.name = "id", .type = QV_TYPE_UTF8},
    {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "ls", .type = QV_TYPE_LARGE_UTF8, .nullable = true},
    {.name = "b", .type = QV_TYPE_BINARY, .nullable = true},
    {.name = "lb", .type = QV_TYPE_LARGE_BINARY, .nullable = true},
    {.name = "one", .type = QV_TYPE_UTF8, .nullable = true}, /* a single distinct value */
};

static const struct {
    const char *p;
    size_t n;
} words[] = {{"", 0},          {"a", 1},         {"a\0b", 3},    {"a\0", 2},       {"\0", 1},
             {"ab", 2},        {"abc", 3},       {"\xff\xfe", 2}, {"\xff", 1},     {"\xc3\xa9", 2},
             {"apple pie", 9}, {"applesauce", 10}, {"zz\x80", 3}, {"a'b", 3}};
#define N_WORDS (sizeof words / sizeof *words)

static int gen_str(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                   int64_t rows) {
    (void)rows;
    uint64_t h = (uint64_t)(i / 3) * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    if (strcmp(f->name, "one") == 0) return i % 17 == 0 ? qv_append_null(a) : qv_append_binary(a, "same", 4);
    if (h % 13 == 0) return qv_append_null(a);
    size_t w = h % N_WORDS;
    /* utf8 columns keep valid UTF-8 (NUL is valid) */
    if ((f->type == QV_TYPE_UTF8 || f->type == QV_TYPE_LARGE_UTF8) &&
        (w == 7 || w == 8 || w == 12))
        w = 10;
    return qv_append_binary(a, words[w].p, words[w].n);
}

static void test_string_limits(void **state) {
    struct pool_env *E = *state;
    static const char *const cols[] = {"s", "ls", "b", "lb"};
    static const char *const lits[] = {"''", "'a'", "X'610062'", "X'6100'", "X'00'", "'ab'",
                                       "X'fffe'", "X'ff'", "'\xc3\xa9'", "'apple'",
                                       "'applesauce and more than any value holds'", "'a''b'",
                                       "X'7a7a80'", "'zz'", "X'c3'"};
    static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">="};
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_DICT, QV_ENC_FSST, QV_ENC_ZSTD,
                               QV_ENC_LZ4, QV_ENC_CONSTANT, QV_ENC_ZSTD_DICT};
    char text[256];
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
        struct tfile T;
        if (!tfile_open(E, &T, str_cols, sizeof str_cols / sizeof *str_cols, 2500, 1100, encs[e],
                        gen_str, "str.qvr", NULL))
            continue;
        for (int c = 0; c < 4; c++)
            for (size_t l = 0; l < sizeof lits / sizeof *lits; l++) {
                for (int op = 0; op < 6; op++) {
                    snprintf(text, sizeof text, "%s %s %s", cols[c], ops[op], lits[l]);
                    check(E, &T, text, 0, -1);
                }
                snprintf(text, sizeof text, "%s STARTS WITH %s", cols[c], lits[l]);
                check(E, &T, text, 0, -1);
                snprintf(text, sizeof text, "NOT (%s STARTS WITH %s) AND id STARTS WITH 'r'", cols[c], lits[l]);
                check(E, &T, text, 0, -1);
                snprintf(text, sizeof text, "%s IN (%s, %s, NULL, 'a')", cols[c], lits[l], lits[l]);
                check(E, &T, text, 0, -1);
                snprintf(text, sizeof text, "%s BETWEEN %s AND 'b'", cols[c], lits[l]);
                check(E, &T, text, 0, -1);
                snprintf(text, sizeof text, "%s = %s OR one = %s", cols[c], lits[l], lits[l]);
                check(E, &T, text, 0, -1);
            }
        check(E, &T, "one = 'same'", 0, -1);
        check(E, &T, "one != 'same'", 0, 0);
        check(E, &T, "one STARTS WITH 'sam' AND s STARTS WITH ''", 0, -1);
        check(E, &T, "one STARTS WITH 'samex'", 0, 0);
        check(E, &T, "one < 'samf' AND one > 'sam'", 0, -1);
        check(E, &T, "one IN ('same', NULL) AND one NOT IN ('x')", 0, -1);
        tfile_close(&T);
    }
}

/* ---- dictionaries of fixed-length strings, and decimals, through the file ---- */

/* String columns whose dictionaries hold entries of one length (1, 3 and 8
 * bytes: decoded as fixed-size entries; 5 bytes with an empty entry mixed
 * in: the length table), of 20, 40, 70 and 100 distinct values per row
 * group (the filter's 32-bit answers, the two-shift bitset and the
 * gathered one), and a decimal(18, 2) with nulls, negatives and
 * +-(10^18 - 1): every filter through the scan (sync, 2 and 3 threads,
 * takes) against the reference, dictionary-forced and automatic. */
static const struct qv_field fx_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "s1", .type = QV_TYPE_BINARY, .nullable = true},
    {.name = "s3", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "s8", .type = QV_TYPE_LARGE_UTF8, .nullable = true},
    {.name = "s5", .type = QV_TYPE_UTF8, .nullable = true},
    {.name = "d", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 18, .scale = 2},
};

static int gen_fx(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                  int64_t rows) {
    (void)rows;
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if (h % 11 == 0) return qv_append_null(a);
    char b[16];
    h >>= 8;
    switch (c) {
    case 1: b[0] = (char)('A' + h % 20); return qv_append_binary(a, b, 1);
    case 2: {
        unsigned k = (unsigned)(h % 40);
        b[0] = (char)('a' + k / 26), b[1] = (char)('a' + k % 26), b[2] = 'x';
        return qv_append_binary(a, b, 3);
    }
    case 3: snprintf(b, sizeof b, "cd%06u", (unsigned)(h % 70)); return qv_append_binary(a, b, 8);
    case 4: {
        unsigned k = (unsigned)(h % 100);
        if (k == 0) return qv_append_binary(a, "", 0);
        snprintf(b, sizeof b, "v%04u", k);
        return qv_append_binary(a, b, 5);
    }
    default: {
        static const int64_t v[] = {E18M1, -E18M1, -1, 0, 1, -12345, 250, 99};
        return qv_append_decimal64(a, h % 3 ? v[h % 8] : (int64_t)(h % 2000000) - 1000000);
    }
    }
}

static void test_fixed_string_dicts(void **state) {
    struct pool_env *E = *state;
    static const char *const cols[] = {"s1", "s3", "s8", "s5"};
    static const char *const lits[4][6] = {
        {"X'41'", "X'53'", "X'4a'", "X'5a'", "''", "X'4142'"},
        {"'aax'", "'bnx'", "'atx'", "'zzx'", "''", "'aa'"},
        {"'cd000000'", "'cd000069'", "'cd000033'", "'cd000070'", "''", "'cd00003'"},
        {"''", "'v0001'", "'v0099'", "'v0050'", "'v'", "'v00'"},
    };
    static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">="};
    static const char *const dfilters[] = {
        "d < 0", "d >= -0.01", "d = 9999999999999999.99", "d = -9999999999999999.99",
        "d BETWEEN -10000 AND 2.5", "d != 0.99", "d IS NULL", "d > 9999999999999999.98",
    };
    static const int encs[] = {QV_ENC_DICT, QV_ENC_AUTO};
    char text[256];
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
        struct tfile T;
        if (!tfile_open(E, &T, fx_cols, sizeof fx_cols / sizeof *fx_cols, 3000, 1100, encs[e],
                        gen_fx, "fx.qvr", NULL))
            continue;
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 6; l++) {
                for (int op = 0; op < 6; op++) {
                    snprintf(text, sizeof text, "%s %s %s", cols[c], ops[op], lits[c][l]);
                    check(E, &T, text, 0, -1);
                }
                snprintf(text, sizeof text, "%s STARTS WITH %s", cols[c], lits[c][l]);
                check(E, &T, text, 0, -1);
                snprintf(text, sizeof text, "%s IN (%s, %s, NULL)", cols[c], lits[c][l],
                         lits[c][(l + 1) % 6]);
                check(E, &T, text, 0, -1);
                snprintf(text, sizeof text, "%s BETWEEN %s AND %s AND d > 0", cols[c], lits[c][l],
                         lits[c][(l + 2) % 6]);
                check(E, &T, text, 0, -1);
            }
        for (size_t k = 0; k < sizeof dfilters / sizeof *dfilters; k++) check(E, &T, dfilters[k], 0, -1);
        tfile_close(&T);
    }
}

/* The same file with bits flipped (checksums skipped on odd trials, so the
 * decoders see the damaged dictionaries, codes and decimals): every column
 * scanned with a filter, sync or on 2 threads, with or without a take,
 * ends in the rows or EIO/ENOMEM, never a signal (ASan/UBSan); with
 * checksums on, a scan that succeeds gives the intact file's row count. */
static int64_t drain_count(struct pool_env *E, struct qv_reader *rd, const struct qv_scan_options *o,
                           int *rc_out, const char **msg) {
    struct ArrowArrayStream st;
    struct qv_error err;
    int64_t rows = 0;
    *msg = "";
    int rc = qv_scan_open(rd, o, E->r, &st, &err);
    if (rc) {
        *rc_out = rc;
        return -1;
    }
    for (;;) {
        struct ArrowArray a;
        if ((rc = st.get_next(&st, &a))) {
            *msg = st.get_last_error(&st);
            break;
        }
        if (!a.release) break;
        rows += a.length;
        a.release(&a);
    }
    st.release(&st);
    *rc_out = rc;
    return rows;
}


/* orig with `flips` random bits flipped (in its first three quarters:
 * data, not the footer) written to path. */
static void write_mutated(const char *path, const unsigned char *orig, size_t size, int flips,
                          uint64_t *seed) {
    unsigned char *b = malloc(size);
    assert_non_null(b);
    memcpy(b, orig, size);
    for (int f = 0; f < flips; f++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t at = (size_t)(*seed >> 33) % (size * 3 / 4);
        b[at] ^= (unsigned char)(1u << ((*seed >> 20) & 7));
    }
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, size, fp), size);
    fclose(fp);
    free(b);
}
static void test_fixed_string_dicts_corrupt(void **state) {
    struct pool_env *E = *state;
    static const char *const filters[] = {"s3 >= 'bnx'", "s8 = 'cd000033' OR s1 = X'41'",
                                          "s5 < 'v0050' AND d > 0", "d BETWEEN -10000 AND 2.5",
                                          "s1 IN (X'42', X'43') OR s8 > 'cd000060'"};
    enum { NF = sizeof filters / sizeof *filters };
    struct tfile T;
    if (!tfile_open(E, &T, fx_cols, sizeof fx_cols / sizeof *fx_cols, 3000, 1100, QV_ENC_DICT,
                    gen_fx, "fxc.qvr", NULL))
        fail_msg("the fixed-string file was not written");
    static int64_t take[1000];
    for (int64_t i = 0; i < 1000; i++) take[i] = i * 3;
    int64_t clean[NF][2];
    for (int k = 0; k < NF; k++)
        for (int tk = 0; tk < 2; tk++) {
            struct qv_scan_options o = {.filter = filters[k], .threads = QV_SCAN_SYNC,
                                        .take = tk ? take : NULL, .n_take = tk ? 1000 : 0};
            int rc;
            const char *msg;
            clean[k][tk] = drain_count(E, T.rd, &o, &rc, &msg);
            if (rc) fail_msg("intact file, %s: %d %s", filters[k], rc, msg);
        }
    size_t size = 0;
    unsigned char *orig = tu_read_file(T.path, &size);
    assert_non_null(orig);
    tfile_close(&T);
    char path[512];
    tu_path(path, sizeof path, "fxc_mut.qvr");
    uint64_t seed = 777;
    int64_t ok = 0, refused = 0;
    for (int trial = 0; trial < 160; trial++) {
        write_mutated(path, orig, size, 2, &seed);
        struct qv_reader_options ro = {.skip_checksums = trial & 1};
        struct qv_reader *rd;
        struct qv_error err;
        if (qv_reader_open(path, &ro, E->r, &rd, &err)) continue;
        for (int k = 0; k < NF; k++) {
            const int tk = (trial + k) % 2;
            struct qv_scan_options o = {.filter = filters[k],
                                        .threads = (trial + k) % 3 == 0 ? 2 : QV_SCAN_SYNC,
                                        .prefetch = 2, .batch_rows = 700,
                                        .take = tk ? take : NULL, .n_take = tk ? 1000 : 0};
            int rc;
            const char *msg;
            size_t used0 = qv_reservation_used(E->r);
            int64_t rows = drain_count(E, rd, &o, &rc, &msg);
            if (rc && rc != EIO && rc != ENOMEM)
                fail_msg("trial %d, %s: error %d (%s)", trial, filters[k], rc, msg);
            if (!(trial & 1) && !rc && rows != clean[k][tk])
                fail_msg("trial %d (checksums on), %s: %lld rows, the intact file %lld", trial,
                         filters[k], (long long)rows, (long long)clean[k][tk]);
            if (qv_reservation_used(E->r) != used0)
                fail_msg("trial %d, %s: %lld bytes left behind", trial, filters[k],
                         (long long)(qv_reservation_used(E->r) - used0));
            if (rc) refused++;
            else ok++;
        }
        qv_reader_close(rd);
    }
    unlink(path);
    free(orig);
    print_message("fixed-string corrupt: %lld scans answered, %lld refused\n", (long long)ok,
                  (long long)refused);
    assert_true(ok + refused > 0);
}

/* ---- filters far larger than any hand writes ---- */

/* 60,000 range comparisons on one column (30,000 BETWEENs after pairing),
 * mixed with conjuncts on other columns: planning must stay linear (it
 * paired bounds and listed columns in quadratic time: 16,000 conjuncts took
 * 40 s to open), and the rows are the reference's. */
static int gen_big(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                   int64_t rows) {
    (void)f, (void)rows;
    return c == 1 ? qv_append_int64(a, i % 1000) : qv_append_int32(a, (int32_t)(i % 7));
}

static void test_huge_filter(void **state) {
    struct pool_env *E = *state;
    static const struct qv_field cols[] = {
        {.name = "id", .type = QV_TYPE_INT64},
        {.name = "a", .type = QV_TYPE_INT64},
        {.name = "b", .type = QV_TYPE_INT32, .nullable = true},
    };
    struct tfile T;
    assert_true(tfile_open(E, &T, cols, 3, 5000, 2000, QV_ENC_AUTO, gen_big, "huge.qvr", NULL));
    const int n = 30000;
    size_t cap = (size_t)n * 64 + 64, k = 0;
    char *t = malloc(cap);
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(t + k, cap - k, "%sa >= %d AND a < %d AND b != %d", i ? " AND " : "",
                              i % 10, 990 + i % 10, 7 + i);
    assert_int_equal(check(E, &T, t, 0, -1), 5 * 981);
    /* ranges that exclude each other: nothing passes */
    k = 0;
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(t + k, cap - k, "%sa > %d AND a < %d", i ? " AND " : "", i, i + 2);
    assert_int_equal(check(E, &T, t, 0, -1), 0);
    /* many non-simple conjuncts over two columns */
    k = 0;
    for (int i = 0; i < 3000; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s(a != %d OR b = 3)", i ? " AND " : "", i * 3);
    check(E, &T, t, 0, -1);
    free(t);
    tfile_close(&T);
}

/* ---- row groups of nulls, one-row files ---- */

static int gen_nulls(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                     int64_t rows) {
    (void)rows;
    if (i < 1200 || (c == 2 && i % 2)) return qv_append_null(a); /* the first row group all null */
    switch (f->type) {
    case QV_TYPE_INT32: return qv_append_int32(a, (int32_t)(i % 5));
    case QV_TYPE_FLOAT64: return qv_append_float64(a, i % 3 ? 1.0 : NAN);
    default: return qv_append_string(a, i % 2 ? "x" : "", i % 2 ? 1 : 0);
    }
}

static void test_nulls_and_tiny(void **state) {
    struct pool_env *E = *state;
    static const struct qv_field cols[] = {
        {.name = "id", .type = QV_TYPE_INT64},
        {.name = "n", .type = QV_TYPE_INT32, .nullable = true},
        {.name = "f", .type = QV_TYPE_FLOAT64, .nullable = true},
        {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    };
    static const char *const filters[] = {
        "n = 1", "n != 1", "n IS NULL", "n IS NOT NULL AND n < 3", "n IN (NULL)", "n NOT IN (NULL)",
        "n IN (1, NULL, 1)", "NOT (n = 1)", "f = NaN", "f != 1", "f = 1 OR n = 2",
        "s = ''", "s STARTS WITH ''", "s STARTS WITH 'xx'", "s != 'x'", "s IS NULL OR n = 4",
        "n BETWEEN 1 AND 3 AND s = 'x' AND f = 1",
    };
    static const int64_t sizes[][2] = {{3000, 1200}, {1, 1}, {1201, 1200}, {2, 1}};
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_DICT, QV_ENC_RLE, QV_ENC_PLAIN, QV_ENC_CONSTANT};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
        for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
            struct tfile T;
            if (!tfile_open(E, &T, cols, 4, sizes[z][0], sizes[z][1], encs[e], gen_nulls, "nulls.qvr",
                            NULL))
                continue;
            for (size_t k = 0; k < sizeof filters / sizeof *filters; k++)
                for (int no = 0; no < 2; no++) check(E, &T, filters[k], no, -1);
            tfile_close(&T);
        }
}

/* ---- corrupt bytes reached through the filter, checksums off and on ---- */

#define CORRUPT_RG_ROWS 1200
#define CORRUPT_RGS 3 /* 2,500 rows */
static void test_corrupt_filter_path(void **state) {
    struct pool_env *E = *state;
    static const struct qv_field cols[] = {
        {.name = "id", .type = QV_TYPE_INT64},
        {.name = "i64", .type = QV_TYPE_INT64, .nullable = true},
        {.name = "u8", .type = QV_TYPE_UINT8, .nullable = true},
    };
    static const char *const filters[] = {"i64 = 1", "i64 > -5 AND u8 < 200", "u8 IN (0, 2)",
                                          "i64 BETWEEN -100 AND 100"};
    static const int encs[] = {QV_ENC_DICT, QV_ENC_RLE, QV_ENC_BITPACK, QV_ENC_FOR, QV_ENC_SPARSE,
                               QV_ENC_DELTA};
    int64_t runs = 0, both_fail = 0, only_ref_fails = 0;
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
        lim_mode = 1;
        struct tfile T;
        if (!tfile_open(E, &T, cols, 3, 2500, CORRUPT_RG_ROWS, encs[e], gen_lim, "corrupt.qvr", NULL))
            continue;
        size_t size = 0;
        unsigned char *orig = tu_read_file(T.path, &size);
        assert_non_null(orig);
        /* the rows of each filter on the intact file */
        int64_t *clean_ids = malloc((size_t)T.rows * sizeof *clean_ids);
        int64_t clean[4];
        for (size_t k = 0; k < sizeof filters / sizeof *filters; k++)
            clean[k] = reference(E, &T, filters[k], 0, clean_ids);
        free(clean_ids);
        tfile_close(&T);
        char path[512];
        tu_path(path, sizeof path, "corrupt_mut.qvr");
        uint64_t seed = 12345 + e;
        for (int trial = 0; trial < 150; trial++) {
            write_mutated(path, orig, size, 3, &seed);
            /* checksums off on odd trials: the decoders' own checks; on on
             * even ones: whatever the checksums' granularity, bytes a
             * filter compares must have been verified */
            struct qv_reader_options ro = {.skip_checksums = trial & 1};
            struct qv_reader *rd;
            struct qv_error err;
            if (qv_reader_open(path, &ro, E->r, &rd, &err)) continue;
            for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) {
                /* reference: every column decoded, the plan's kernels */
                struct qv_expr *x;
                assert_int_equal(qv_expr_parse(filters[k], E->r, &x, &err), 0);
                assert_int_equal(qv_expr_bind(x, qv_reader_schema(rd), &err), 0);
                /* the id and the filter's columns only, as the filtered scan reads */
                int32_t rcols[4] = {0}, nrc = 1;
                for (int32_t c = 1; c < 3; c++)
                    if (strstr(filters[k], cols[c].name)) rcols[nrc++] = c;
                int32_t map[3] = {0, -1, -1};
                for (int32_t c = 1; c < nrc; c++) map[rcols[c]] = c;
                struct qv_scan_options o = {.columns = rcols, .n_columns = nrc,
                                            .threads = QV_SCAN_SYNC, .batch_rows = 1000};
                struct ArrowArrayStream st;
                int64_t ref_rows = 0, got_rows = 0;
                int ref_rc = qv_scan_open(rd, &o, E->r, &st, &err);
                if (!ref_rc) {
                    for (;;) {
                        struct ArrowArray a;
                        if ((ref_rc = st.get_next(&st, &a))) {
                            snprintf(err.message, sizeof err.message, "%s", st.get_last_error(&st));
                            break;
                        }
                        if (!a.release) break;
                        uint8_t sel[200];
                        int64_t ns = 0;
                        ref_rc = qv_expr_eval(x, &a, map, sel, &ns, E->r, &err);
                        ref_rows += ns;
                        a.release(&a);
                        if (ref_rc) break;
                    }
                    st.release(&st);
                }
                qv_expr_destroy(x);
                char ref_msg[QV_ERROR_MESSAGE_MAX];
                snprintf(ref_msg, sizeof ref_msg, "%s", ref_rc ? err.message : "");
                int32_t proj = 0;
                struct qv_scan_options fo = {.columns = &proj, .n_columns = 1, .filter = filters[k],
                                             .threads = QV_SCAN_SYNC, .batch_rows = 1000};
                int rc = qv_scan_open(rd, &fo, E->r, &st, &err);
                const char *msg = "";
                /* the row groups the filter returned rows from */
                int got_rg[CORRUPT_RGS] = {0};
                if (!rc) {
                    for (;;) {
                        struct ArrowArray a;
                        if ((rc = st.get_next(&st, &a))) {
                            msg = st.get_last_error(&st);
                            if (rc == EIO && (!strstr(msg, "corrupt_mut.qvr") || !strstr(msg, "row group")))
                                fail_msg("EIO without file or row group: %s", msg);
                            break;
                        }
                        if (!a.release) break;
                        got_rows += a.length;
                        const struct ArrowArray *ids = a.children[0];
                        for (int64_t i = 0; i < ids->length; i++) {
                            int64_t id = ((const int64_t *)ids->buffers[1])[ids->offset + i];
                            if (id >= 0 && id / CORRUPT_RG_ROWS < CORRUPT_RGS) got_rg[id / CORRUPT_RG_ROWS] = 1;
                        }
                        a.release(&a);
                    }
                    st.release(&st);
                }
                runs++;
                if (rc && rc != EIO && rc != ENOMEM)
                    fail_msg("filter %s on corrupt bytes: error %d (%s)", filters[k], rc, msg);
                if (!ref_rc && !rc && got_rows != ref_rows)
                    fail_msg("corrupt file (encoding %s, trial %d), filter %s: %lld rows, the decoded "
                             "reference %lld",
                             qv_encoding_name(encs[e]), trial, filters[k], (long long)got_rows,
                             (long long)ref_rows);
                if (ref_rc && rc) both_fail++;
                /* The decode of a filter column refused the bytes: the
                 * filter must too (the id column, projected, is decoded
                 * only for surviving rows, so its corruption may go unread). */
                /* Checksums on: the filter either refuses the file or
                 * gives the intact file's rows (bytes it skipped, as a
                 * literal outside every packed value skips them, may go
                 * unverified; bytes it compared may not). */
                if (!(trial & 1) && !rc && got_rows != clean[k])
                    fail_msg("corrupt file, checksums on (encoding %s, trial %d), filter %s: %lld "
                             "rows, the intact file %lld",
                             qv_encoding_name(encs[e]), trial, filters[k], (long long)got_rows,
                             (long long)clean[k]);
                /* ... unless the filter never needed those bytes: its other
                 * conjuncts left no row of that row group (corrupt data
                 * bytes of u8, unverifiable with checksums off, can do
                 * that), so the column's segment there went unread. Every
                 * filter here is a conjunction, so a row returned from
                 * that row group had the column evaluated. */
                const char *at_rg = strstr(ref_msg, "row group ");
                const int ref_rg = at_rg ? atoi(at_rg + strlen("row group ")) : -1;
                if ((trial & 1) && ref_rc && !rc && !strstr(ref_msg, "column 'id'") &&
                    (ref_rg < 0 || ref_rg >= CORRUPT_RGS || got_rg[ref_rg]))
                    fail_msg("corrupt file (encoding %s, trial %d), filter %s: %lld rows where the "
                             "decode says: %s",
                             qv_encoding_name(encs[e]), trial, filters[k], (long long)got_rows,
                             ref_msg);
                if (ref_rc && !rc) {
                    only_ref_fails++;
                    if (getenv("QV_ATTACK_VERBOSE"))
                        print_message("only the decode refuses (%s, %s, %lld rows): %d %s\n",
                                      qv_encoding_name(encs[e]), filters[k], (long long)got_rows,
                                      ref_rc, ref_msg);
                }
            }
            qv_reader_close(rd);
        }
        unlink(path);
        free(orig);
    }
    print_message("corrupt: %lld scans, %lld refused by both paths, %lld refused only by the full "
                  "decode\n",
                  (long long)runs, (long long)both_fail, (long long)only_ref_fails);
}

/* ---- a memory budget too small for a batch ---- */

static void test_small_budget(void **state) {
    (void)state;
    struct pool_env E2;
    struct qv_pool *big;
    struct qv_reservation *br;
    assert_int_equal(qv_pool_create(NULL, &big, NULL), 0);
    assert_int_equal(qv_reservation_create(big, NULL, &br, NULL), 0);
    E2.pool = big;
    E2.r = br;
    struct tfile T;
    lim_mode = 0;
    assert_true(tfile_open(&E2, &T, lim_cols, sizeof lim_cols / sizeof *lim_cols, 20000, 10000,
                           QV_ENC_AUTO, gen_lim, "budget.qvr", NULL));
    int64_t enomem = 0, ok = 0;
    for (uint64_t limit = 4096; limit <= (1u << 22); limit *= 2)
        for (int th = 0; th < 2; th++) {
            struct qv_pool *p;
            struct qv_pool_options po = {.limit = limit};
            assert_int_equal(qv_pool_create(&po, &p, NULL), 0);
            struct qv_reservation *r;
            assert_int_equal(qv_reservation_create(p, NULL, &r, NULL), 0);
            struct qv_scan_options o = {.filter = "i64 > 0 AND u8 IN (1, 255) AND i8 != 5",
                                        .threads = th ? 2 : QV_SCAN_SYNC, .batch_rows = 8192};
            struct ArrowArrayStream st;
            struct qv_error err;
            int rc = qv_scan_open(T.rd, &o, r, &st, &err);
            char msg[QV_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", rc ? err.message : "");
            if (!rc) {
                for (;;) {
                    struct ArrowArray a;
                    rc = st.get_next(&st, &a);
                    if (rc) {
                        snprintf(msg, sizeof msg, "%s", st.get_last_error(&st));
                        break;
                    }
                    if (!a.release) break;
                    a.release(&a);
                }
                st.release(&st);
            }
            if (rc && rc != ENOMEM) fail_msg("limit %llu: error %d: %s", (unsigned long long)limit, rc, msg);
            if (rc == ENOMEM && !*msg) fail_msg("limit %llu: ENOMEM without a message", (unsigned long long)limit);
            rc ? enomem++ : ok++;
            assert_int_equal(qv_reservation_used(r), 0);
            qv_reservation_destroy(r);
            qv_pool_destroy(p);
        }
    assert_true(enomem > 0 && ok > 0);
    tfile_close(&T);
    assert_int_equal(qv_reservation_used(br), 0);
    qv_reservation_destroy(br);
    qv_pool_destroy(big);
}

/* ---- filters on nested fields, on columns also projected ---- */

static const struct qv_field pt_fields[] = {
    {.name = "x", .type = QV_TYPE_INT32, .nullable = true},
    {.name = "t", .type = QV_TYPE_UTF8, .nullable = true},
};
static const struct qv_field nest_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "pt", .type = QV_TYPE_STRUCT, .nullable = true, .children = pt_fields, .n_children = 2},
    {.name = "x", .type = QV_TYPE_INT32, .nullable = true},
};

static int gen_nest(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                    int64_t rows) {
    (void)rows, (void)c;
    if (f->type == QV_TYPE_INT32) return i % 9 == 0 ? qv_append_null(a) : qv_append_int32(a, (int32_t)(i % 5));
    if (i % 7 == 0) return qv_append_null(a); /* the struct null: its fields too */
    int rc = qv_append_struct_begin(a);
    struct qv_appender *x = qv_appender_child(a, 0), *t = qv_appender_child(a, 1);
    if (!rc) rc = i % 11 == 0 ? qv_append_null(x) : qv_append_int32(x, (int32_t)(i % 4));
    if (!rc) rc = i % 13 == 0 ? qv_append_null(t) : qv_append_string(t, i % 2 ? "odd" : "even", i % 2 ? 3 : 4);
    return rc ? rc : qv_append_struct_end(a);
}

static void test_nested_fields(void **state) {
    struct pool_env *E = *state;
    static const char *const filters[] = {
        "pt.x = 1", "pt.x != 1", "pt.x IS NULL", "pt IS NULL", "pt IS NOT NULL AND pt.x IS NULL",
        "pt.x = x", "pt.x < x OR pt.t = 'odd'", "pt.t STARTS WITH 'ev' AND x BETWEEN 1 AND 3",
        "NOT (pt.x IN (1, 2, NULL))", "pt.x BETWEEN 0 AND 2 AND pt.x > 0 AND x = 2",
        "x = 1 AND pt.x = 1 AND pt.t = 'odd'",
    };
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_DICT, QV_ENC_RLE, QV_ENC_PLAIN};
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++) {
        struct tfile T;
        if (!tfile_open(E, &T, nest_cols, 3, 3000, 1100, encs[e], gen_nest, "nest.qvr", NULL)) continue;
        for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) check(E, &T, filters[k], 0, -1);
        tfile_close(&T);
    }
}

/* ---- kinds only the decode path evaluates: bool, float16, fixed binary,
 * wide decimals, mixed with encoded conjuncts so survivors are sparse ---- */

static const struct qv_field other_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "flag", .type = QV_TYPE_BOOL, .nullable = true},
    {.name = "h", .type = QV_TYPE_FLOAT16, .nullable = true},
    {.name = "fx", .type = QV_TYPE_FIXED_BINARY, .nullable = true, .byte_width = 3},
    {.name = "wd", .type = QV_TYPE_DECIMAL128, .nullable = true, .precision = 38, .scale = 3},
    {.name = "k", .type = QV_TYPE_INT32, .nullable = true},
};

static int gen_other(struct qv_appender *a, const struct qv_field *f, int64_t c, int64_t i,
                     int64_t rows) {
    (void)rows;
    uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)c * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if (h % 9 == 0) return qv_append_null(a);
    switch (f->type) {
    case QV_TYPE_BOOL: return qv_append_bool(a, (h >> 8) & 1);
    case QV_TYPE_FLOAT16: {
        static const uint16_t v[] = {0x0000, 0x8000, 0x7e00, 0xfe00, 0x7c00, 0xfc00, 0x3c00, 0xbc00};
        return qv_append_float16(a, v[(h >> 8) % 8]);
    }
    case QV_TYPE_FIXED_BINARY: {
        static const char v[][3] = {{0, 0, 0}, {'a', 0, 'b'}, {'\xff', '\xff', '\xff'}, {'a', 'b', 'c'}};
        return qv_append_fixed_binary(a, v[(h >> 8) % 4], 3);
    }
    case QV_TYPE_DECIMAL128: {
        int64_t hi = (h >> 8) % 3 == 0 ? -1 : (h >> 8) % 3 == 1 ? 0 : INT64_C(0x7fffffffffffffff) / 2;
        return qv_append_decimal128(a, h, hi);
    }
    default: return qv_append_int32(a, (int32_t)((h >> 12) % 100));
    }
}

static void test_decode_only_kinds(void **state) {
    struct pool_env *E = *state;
    static const char *const filters[] = {
        "flag", "NOT flag", "flag = false AND k < 10", "flag IS NULL OR k = 3", "k < 5 AND flag",
        "h = 0", "h < 0 AND k < 50", "h = NaN", "h != 1 AND k > 90", "h IN (1, -1, NaN)",
        "fx = X'610062' AND k < 60", "fx STARTS WITH 'a'", "fx > X'610000'", "fx IN (X'000000', X'ffffff')",
        "wd > 0 AND k < 30", "wd < -0.001", "wd = 0.001", "wd BETWEEN -1 AND 1e30 AND k = 7",
        "k = 1 AND (flag OR h > 0) AND fx != X'616263'",
    };
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_PLAIN, QV_ENC_DICT, QV_ENC_ZSTD};
    for (size_t e = 0; e < sizeof encs / sizeof *encs; e++)
        for (int no = 0; no < 2; no++) {
            struct tfile T;
            if (!tfile_open(E, &T, other_cols, 6, 5000, 2100, encs[e], gen_other, "other.qvr", NULL))
                continue;
            for (size_t k = 0; k < sizeof filters / sizeof *filters; k++) check(E, &T, filters[k], no, -1);
            tfile_close(&T);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_int_limits, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_numeric_limits, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_float_limits, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_string_limits, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_fixed_string_dicts, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_fixed_string_dicts_corrupt, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_huge_filter, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_nested_fields, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_decode_only_kinds, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_nulls_and_tiny, pool_env_setup, pool_env_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_filter_path, pool_env_setup,
                                        pool_env_teardown),
        cmocka_unit_test(test_small_budget),
    };
    if (getenv("QV_ATTACK_ONLY")) cmocka_set_test_filter(getenv("QV_ATTACK_ONLY"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
