/* The lineitem generator: TPC-H invariants on every row, determinism, and
 * independence of chunking and ranges. (The file `qv gen` writes from it is
 * checked in cli/tests/test_gen_file.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* cmocka after the standard headers it needs */
#include <cmocka.h>

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

static int64_t i64(const struct ArrowArray *a, int64_t i) {
    return ((const int64_t *)a->buffers[1])[a->offset + i];
}
static int32_t i32(const struct ArrowArray *a, int64_t i) {
    return ((const int32_t *)a->buffers[1])[a->offset + i];
}
static int64_t dec(const struct ArrowArray *a, int64_t i) {
    int64_t v[2];
    memcpy(v, (const uint8_t *)a->buffers[1] + (a->offset + i) * 16, 16);
    assert_true(v[1] == (v[0] >> 63)); /* fits 64 bits, sign-extended */
    return v[0];
}
static const char *str(const struct ArrowArray *a, int64_t i, int32_t *len) {
    const int32_t *off = a->buffers[1];
    *len = off[a->offset + i + 1] - off[a->offset + i];
    return (const char *)a->buffers[2] + off[a->offset + i];
}
static int str_is(const struct ArrowArray *a, int64_t i, const char *want) {
    int32_t n;
    const char *s = str(a, i, &n);
    return (size_t)n == strlen(want) && memcmp(s, want, (size_t)n) == 0;
}

static void test_schema(void **state) {
    (void)state;
    const struct qv_field *root = qvgen_lineitem_schema_template();
    assert_int_equal(root->type, QV_TYPE_STRUCT);
    assert_int_equal(root->n_children, QVGEN_LINEITEM_NUM_COLUMNS);
    assert_string_equal(root->children[QVGEN_L_ORDERKEY].name, "l_orderkey");
    assert_int_equal(root->children[QVGEN_L_LINENUMBER].type, QV_TYPE_INT32);
    assert_int_equal(root->children[QVGEN_L_EXTENDEDPRICE].type, QV_TYPE_DECIMAL128);
    assert_int_equal(root->children[QVGEN_L_EXTENDEDPRICE].precision, 15);
    assert_int_equal(root->children[QVGEN_L_EXTENDEDPRICE].scale, 2);
    assert_int_equal(root->children[QVGEN_L_SHIPDATE].type, QV_TYPE_DATE32);
    assert_int_equal(root->children[QVGEN_L_COMMENT].type, QV_TYPE_UTF8);
    assert_int_equal(qvgen_lineitem_num_orders(1.0), 1500000);
    assert_int_equal(qvgen_lineitem_num_orders(0.001), 1500);
    assert_int_equal(qvgen_lineitem_num_orders(0.0), 0);
    assert_int_equal(qvgen_lineitem_num_orders(-1.0), 0);
}

/* Every TPC-H rule the generator promises, checked on every row at SF 0.01. */
static void test_invariants(void **state) {
    (void)state;
    const double sf = 0.01;
    const int64_t P = 2000, S = 100, orders = qvgen_lineitem_num_orders(sf);
    struct qv_builder *b = new_builder();
    int64_t rows = 0;
    assert_int_equal(qvgen_lineitem_batch(sf, 0, orders, b, &rows, NULL), 0);
    assert_int_equal(rows, qvgen_lineitem_count_rows(0, orders));
    /* ~4 lines per order on average */
    assert_true(rows > orders * 3 && rows < orders * 5);
    struct ArrowArray batch;
    finish(b, &batch);
    assert_int_equal(batch.length, rows);
    struct ArrowArray **c = batch.children;
    const int64_t start = qv_date32_from_civil(1992, 1, 1);
    const int64_t end = qv_date32_from_civil(1998, 12, 31);
    const int64_t current = qv_date32_from_civil(1995, 6, 17);
    static const char *const instructs[] = {"DELIVER IN PERSON", "COLLECT COD", "NONE",
                                            "TAKE BACK RETURN"};
    static const char *const modes[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
    int64_t order = -1, prev_key = 0, seen_r = 0, seen_a = 0, seen_n = 0, disc_hist[11] = {0};
    for (int64_t i = 0; i < rows; i++) {
        int64_t key = i64(c[QVGEN_L_ORDERKEY], i);
        int32_t line = i32(c[QVGEN_L_LINENUMBER], i);
        if (line == 1) {
            order++;
            assert_int_equal(key, (order / 8) * 32 + order % 8 + 1);
            assert_true(key > prev_key);
            prev_key = key;
        } else {
            assert_int_equal(key, prev_key);
            assert_int_equal(line, i32(c[QVGEN_L_LINENUMBER], i - 1) + 1);
        }
        assert_true(line >= 1 && line <= 7);
        int64_t pk = i64(c[QVGEN_L_PARTKEY], i), sk = i64(c[QVGEN_L_SUPPKEY], i);
        assert_true(pk >= 1 && pk <= P);
        int ok = 0;
        for (int64_t j = 0; j < 4; j++) ok |= sk == (pk + j * (S / 4 + (pk - 1) / S)) % S + 1;
        assert_true(ok);
        int64_t qty = dec(c[QVGEN_L_QUANTITY], i);
        assert_true(qty >= 100 && qty <= 5000 && qty % 100 == 0);
        int64_t retail = 90000 + ((pk / 10) % 20001) + 100 * (pk % 1000);
        assert_int_equal(dec(c[QVGEN_L_EXTENDEDPRICE], i), qty / 100 * retail);
        int64_t d = dec(c[QVGEN_L_DISCOUNT], i), t = dec(c[QVGEN_L_TAX], i);
        assert_true(d >= 0 && d <= 10);
        assert_true(t >= 0 && t <= 8);
        disc_hist[d]++;
        int64_t ship = i32(c[QVGEN_L_SHIPDATE], i), commit = i32(c[QVGEN_L_COMMITDATE], i);
        int64_t receipt = i32(c[QVGEN_L_RECEIPTDATE], i);
        /* orderdate is not a column: ship and commit bound it together. */
        int64_t od_hi = ship - 1 < commit - 30 ? ship - 1 : commit - 30;
        int64_t od_lo = ship - 121 > commit - 90 ? ship - 121 : commit - 90;
        assert_true(od_lo <= od_hi);
        assert_true(od_hi >= start && od_lo <= end - 151);
        assert_true(receipt >= ship + 1 && receipt <= ship + 30);
        if (receipt <= current) {
            assert_true(str_is(c[QVGEN_L_RETURNFLAG], i, "R") || str_is(c[QVGEN_L_RETURNFLAG], i, "A"));
            if (str_is(c[QVGEN_L_RETURNFLAG], i, "R")) seen_r++;
            else seen_a++;
        } else {
            assert_true(str_is(c[QVGEN_L_RETURNFLAG], i, "N"));
            seen_n++;
        }
        assert_true(str_is(c[QVGEN_L_LINESTATUS], i, ship > current ? "O" : "F"));
        ok = 0;
        for (int k = 0; k < 4; k++) ok |= str_is(c[QVGEN_L_SHIPINSTRUCT], i, instructs[k]);
        assert_true(ok);
        ok = 0;
        for (int k = 0; k < 7; k++) ok |= str_is(c[QVGEN_L_SHIPMODE], i, modes[k]);
        assert_true(ok);
        int32_t n;
        const char *s = str(c[QVGEN_L_COMMENT], i, &n);
        assert_true(n >= 10 && n <= 43);
        assert_true(s[0] != ' ' && s[n - 1] != ' ');
        for (int32_t k = 0; k < n; k++)
            assert_true((s[k] >= 'a' && s[k] <= 'z') || strchr(" ,.;:?!-", s[k]));
    }
    assert_int_equal(order + 1, orders);
    /* The random choices are spread: every discount value and both flags. */
    for (int k = 0; k <= 10; k++) assert_true(disc_hist[k] > rows / 20);
    assert_true(seen_r > rows / 5 && seen_a > rows / 5 && seen_n > rows / 5);
    batch.release(&batch);
    qv_builder_destroy(b);
}

/* Chunks of any size and separately generated order ranges give the same
 * rows as one pass. */
static void test_chunking_and_ranges(void **state) {
    (void)state;
    const double sf = 0.001;
    const int64_t orders = qvgen_lineitem_num_orders(sf);
    struct qv_builder *b = new_builder();
    struct ArrowArray whole, chunked, ranged;
    assert_int_equal(qvgen_lineitem_batch(sf, 0, orders, b, NULL, NULL), 0);
    finish(b, &whole);

    struct qvgen_lineitem_cursor cur;
    assert_int_equal(qvgen_lineitem_cursor_init(&cur, sf, 0, orders, NULL), 0);
    int64_t total = 0, step = 1;
    while (!qvgen_lineitem_cursor_done(&cur)) {
        int64_t n;
        assert_int_equal(qvgen_lineitem_append(&cur, b, step, &n, NULL), 0);
        total += n;
        step = step % 11 + 1; /* 1..11 rows: splits orders everywhere */
    }
    assert_int_equal(total, whole.length);
    finish(b, &chunked);

    assert_int_equal(qvgen_lineitem_batch(sf, 0, 700, b, NULL, NULL), 0);
    assert_int_equal(qvgen_lineitem_batch(sf, 700, orders - 700, b, NULL, NULL), 0);
    finish(b, &ranged);

    char why[256];
    const struct qv_field *root = qvgen_lineitem_schema_template();
    assert_true(qv_arrow_array_equal(root, &whole, &chunked, why, sizeof why));
    assert_true(qv_arrow_array_equal(root, &whole, &ranged, why, sizeof why));
    whole.release(&whole);
    chunked.release(&chunked);
    ranged.release(&ranged);
    qv_builder_destroy(b);
}

static void test_errors(void **state) {
    (void)state;
    struct qvgen_lineitem_cursor cur;
    struct qv_error err;
    assert_int_equal(qvgen_lineitem_cursor_init(&cur, 0.0, 0, 1, &err), EINVAL);
    assert_int_equal(qvgen_lineitem_cursor_init(&cur, 0.001, -1, 1, &err), EINVAL);
    assert_int_equal(qvgen_lineitem_cursor_init(&cur, 0.001, 2000, 1, &err), EINVAL);
    /* A builder of another schema is refused before anything is appended. */
    const struct qv_field cols[] = {{.name = "x", .type = QV_TYPE_INT64}};
    const struct qv_field root = {.type = QV_TYPE_STRUCT, .n_children = 1, .children = cols};
    struct qv_schema *s;
    struct qv_builder *b;
    assert_int_equal(qv_schema_create(&root, res, &s, NULL), 0);
    assert_int_equal(qv_builder_create(s, res, NULL, &b, NULL), 0);
    assert_int_equal(qvgen_lineitem_batch(0.001, 0, 10, b, NULL, &err), EINVAL);
    assert_non_null(strstr(err.message, "columns"));
    assert_int_equal(qv_builder_num_rows(b), 0);
    qv_builder_destroy(b);
    qv_schema_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_chunking_and_ranges),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
