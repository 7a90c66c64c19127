/*
 * qv__column_reader_filter on a written file: integer and string columns
 * with nulls (null rows never pass), random predicates, windows and
 * selections against the values the fixture computes from the row number;
 * ENOTSUP with the column named for what it cannot compare (floats without
 * EVAL, lists); EINVAL for a window outside the row group.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "format/reader_internal.h"
#include "pred_oracle.h"
#include "quiver/format.h"
#include "scan_fixture.h"
#include "test_util.h"

#define RG 4000
#define ROWS 10500

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static int str_pred(const struct qv_enc_pred *p, const char *v) {
    size_t l = strlen(v);
    int eq = l == p->len && !memcmp(v, p->bytes, l);
    if (p->op == QV_ENC_OP_EQ) return eq;
    if (p->op == QV_ENC_OP_NE) return !eq;
    return l >= p->len && !memcmp(v, p->bytes, p->len);
}

static void test_columns(void **state) {
    (void)state;
    struct qv_error err = {0};
    struct qv_pool_options po = {.name = "column-filter"};
    struct qv_pool *pool;
    struct qv_reservation *r;
    assert_int_equal(qv_pool_create(&po, &pool, &err), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &r, &err), 0);
    char path[512];
    tu_path(path, sizeof path, "column_filter.qvr");
    assert_int_equal(fx_write(path, ROWS, RG, r), 0);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, &err), 0);
    uint64_t s = 42;
    int64_t checked = 0;
    for (int64_t rg = 0; rg < qv_reader_num_row_groups(rd); rg++) {
        const int64_t rows = qv_reader_row_group_rows(rd, rg),
                      first = qv_reader_row_group_first_row(rd, rg);
        struct qv_column_reader *cid, *cv, *cs, *cd, *ct;
        assert_int_equal(qv_column_reader_open(rd, rg, 0, r, &cid, &err), 0);
        assert_int_equal(qv_column_reader_open(rd, rg, 1, r, &cv, &err), 0);
        assert_int_equal(qv_column_reader_open(rd, rg, 2, r, &cs, &err), 0);
        assert_int_equal(qv_column_reader_open(rd, rg, 3, r, &cd, &err), 0);
        assert_int_equal(qv_column_reader_open(rd, rg, 4, r, &ct, &err), 0);
        for (int t = 0; t < 400; t++) {
            int64_t start = (int64_t)(rng(&s) % (uint64_t)(rows + 1));
            int64_t n = (int64_t)(rng(&s) % (uint64_t)(rows - start + 1));
            uint64_t *sel = NULL, *out = calloc((size_t)(n / 64 + 2), 8);
            if (t % 2) {
                sel = calloc((size_t)(n / 64 + 2), 8);
                for (int64_t i = 0; i < n; i++)
                    if (rng(&s) % 3) sel[i >> 6] |= UINT64_C(1) << (i & 63);
            }
            struct qv_enc_pred p = {0};
            char lit[16];
            int col = t % 3;
            struct qv_column_reader *cr = col == 0 ? cid : col == 1 ? cv : cs;
            if (col < 2) {
                p.op = (int)(rng(&s) % (QV_ENC_OP_BETWEEN + 1));
                p.lo = col == 0 ? first + (int64_t)(rng(&s) % (uint64_t)(rows + 2)) - 1
                                : (int64_t)(rng(&s) % 102) - 1;
                p.hi = p.lo + (int64_t)(rng(&s) % 50);
            } else {
                static const int ops[] = {QV_ENC_OP_EQ, QV_ENC_OP_NE, QV_ENC_OP_PREFIX};
                p.op = ops[rng(&s) % 3];
                int len = snprintf(lit, sizeof lit, "s%d", (int)(rng(&s) % 100));
                p.len = (size_t)(rng(&s) % 4 == 0 ? 1 + rng(&s) % (uint64_t)len : (uint64_t)len);
                p.bytes = (const uint8_t *)lit;
            }
            int rc = qv__column_reader_filter(cr, start, n, &p, sel, out, &err);
            if (rc) fail_msg("column %d rg %lld: rc %d: %s", col, (long long)rg, rc, err.message);
            for (int64_t i = 0; i < n; i++) {
                int64_t row = first + start + i;
                int want;
                if (sel && !((sel[i >> 6] >> (i & 63)) & 1)) want = 0;
                else if (col == 0) want = pred_oracle_i64(&p, row);
                else if (fx_v_null(row)) want = 0;
                else if (col == 1) want = pred_oracle_i64(&p, fx_v(row));
                else {
                    char v[16];
                    snprintf(v, sizeof v, "s%d", fx_v(row));
                    want = str_pred(&p, v);
                }
                int got = (int)((out[i >> 6] >> (i & 63)) & 1);
                if (got != want)
                    fail_msg("column %d rg %lld row %lld op %d: expected %d, got %d", col,
                             (long long)rg, (long long)row, p.op, want, got);
                checked++;
            }
            free(sel);
            free(out);
        }
        /* What it cannot compare: named, ENOTSUP. */
        uint64_t out[2];
        struct qv_enc_pred lt = {.op = QV_ENC_OP_LT, .lo = 3};
        assert_int_equal(qv__column_reader_filter(cd, 0, 10, &lt, NULL, out, &err), ENOTSUP);
        assert_non_null(strstr(err.message, "column 'd'"));
        assert_int_equal(qv__column_reader_filter(ct, 0, 10, &lt, NULL, out, &err), ENOTSUP);
        assert_non_null(strstr(err.message, "tags"));
        assert_int_equal(qv__column_reader_filter(cv, rows - 5, 10, &lt, NULL, out, &err), EINVAL);
        qv_column_reader_close(cid);
        qv_column_reader_close(cv);
        qv_column_reader_close(cs);
        qv_column_reader_close(cd);
        qv_column_reader_close(ct);
    }
    assert_true(checked > 100000);
    qv_reader_close(rd);
    unlink(path);
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_columns)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
