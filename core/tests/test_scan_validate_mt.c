/* qv_scan_options.validate: the scan's workers check each output column
 * before the batch is queued, so a file whose checksums are right but whose
 * contents are not valid Arrow (here: invalid UTF-8, which the writer's
 * cheap tier lets through) fails the scan with EIO naming the file, the
 * column and the row group, in every threading mode. Named _mt: the checks
 * run on the workers, so the ThreadSanitizer build runs it too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/scan.h"
#include "test_util.h"

#define ROWS 10000
#define RG 4096
#define BAD_ROW 5000 /* in row group 1 */

static struct qv_pool *pool;
static struct qv_reservation *res;
static struct qv_reader *rd;
static char path[512];

/* id int64 (0..n-1), s utf8 ("r<id>", but row BAD_ROW holds "ok\xff\xfe"). */
static int write_file(void) {
    static const struct qv_field cols[] = {
        {.name = "id", .type = QV_TYPE_INT64, .nullable = false},
        {.name = "s", .type = QV_TYPE_UTF8, .nullable = true},
    };
    static const struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = 2,
                                         .children = cols};
    struct qv_schema *s;
    struct qv_error err;
    int rc = qv_schema_create(&root, res, &s, &err);
    if (rc) return rc;
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG};
    rc = qv_writer_open(path, s, &o, res, &w, &err);
    if (rc) {
        qv_schema_destroy(s);
        return rc;
    }
    struct qv_builder *b = qv_writer_builder(w);
    for (int64_t i = 0; i < ROWS && !rc; i++) {
        rc = qv_append_int64(qv_builder_column(b, 0), i);
        char buf[32];
        int len = i == BAD_ROW ? 4 : snprintf(buf, sizeof buf, "r%lld", (long long)i);
        if (i == BAD_ROW) memcpy(buf, "ok\xff\xfe", 4);
        if (!rc) rc = qv_append_string(qv_builder_column(b, 1), buf, (size_t)len);
        if (!rc && i % 1000 == 999) rc = qv_writer_end_rows(w, &err);
    }
    if (!rc) rc = qv_writer_end_rows(w, &err);
    if (!rc) rc = qv_writer_finish(w, &err);
    if (rc) fprintf(stderr, "write_file: %s\n", err.message);
    qv_writer_close(w);
    qv_schema_destroy(s);
    return rc;
}

static int setup(void **state) {
    (void)state;
    alarm(300); /* a hung scan fails the test instead of the CI job */
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    tu_path(path, sizeof path, "scan_validate.qvr");
    assert_int_equal(write_file(), 0);
    assert_int_equal(qv_reader_open(path, NULL, res, &rd, NULL), 0);
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
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    return 0;
}

/* Drains a scan: the rows returned, and the error (0 at a clean end). */
static int drain(struct ArrowArrayStream *st, int64_t *rows, char *msg, size_t cap) {
    *rows = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) {
            const char *m = st->get_last_error(st);
            snprintf(msg, cap, "%s", m ? m : "");
            /* Sticky: the next call says the same. */
            assert_int_equal(st->get_next(st, &b), rc);
            assert_null(b.release);
            return rc;
        }
        if (!b.release) return 0;
        *rows += b.length;
        b.release(&b);
    }
}

static const int modes[] = {QV_SCAN_SYNC, 1, 2, 4};

static void test_full_tier_fails_with_eio(void **state) {
    (void)state;
    for (size_t m = 0; m < 4; m++) {
        struct qv_scan_options o = {.threads = modes[m], .batch_rows = 1000,
                                    .validate = QV_SCAN_VALIDATE_FULL};
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
        int64_t rows;
        char msg[QV_ERROR_MESSAGE_MAX];
        assert_int_equal(drain(&st, &rows, msg, sizeof msg), EIO);
        /* Batches before the bad one were handed out; the bad one never. */
        assert_true(rows <= BAD_ROW);
        assert_non_null(strstr(msg, "scan_validate.qvr"));
        assert_non_null(strstr(msg, "column 's'"));
        assert_non_null(strstr(msg, "row group 1"));
        assert_non_null(strstr(msg, "corrupt"));
        assert_non_null(strstr(msg, "UTF-8"));
        st.release(&st);
    }
}

static void test_none_and_cheap_pass_the_bytes(void **state) {
    (void)state;
    int tiers[] = {QV_SCAN_VALIDATE_NONE, QV_SCAN_VALIDATE_CHEAP};
    for (size_t t = 0; t < 2; t++)
        for (size_t m = 0; m < 4; m++) {
            struct qv_scan_options o = {.threads = modes[m], .validate = tiers[t]};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
            int64_t rows;
            char msg[QV_ERROR_MESSAGE_MAX];
            assert_int_equal(drain(&st, &rows, msg, sizeof msg), 0);
            assert_int_equal(rows, ROWS);
            st.release(&st);
        }
}

/* Only what is handed out is checked: a projection without the column, a
 * filter or a take that leaves out the bad row, read cleanly. */
static void test_only_output_is_checked(void **state) {
    (void)state;
    int32_t id_only[] = {0};
    int64_t take[] = {0, BAD_ROW - 1, BAD_ROW + 1, ROWS - 1};
    for (size_t m = 0; m < 4; m++) {
        struct qv_scan_options o = {.threads = modes[m], .validate = QV_SCAN_VALIDATE_FULL,
                                    .columns = id_only, .n_columns = 1};
        struct ArrowArrayStream st;
        int64_t rows;
        char msg[QV_ERROR_MESSAGE_MAX];
        assert_int_equal(qv_scan_open(rd, &o, res, &st, NULL), 0);
        assert_int_equal(drain(&st, &rows, msg, sizeof msg), 0);
        assert_int_equal(rows, ROWS);
        st.release(&st);

        struct qv_scan_options f = {.threads = modes[m], .validate = QV_SCAN_VALIDATE_FULL,
                                    .filter = "id != 5000"};
        assert_int_equal(qv_scan_open(rd, &f, res, &st, NULL), 0);
        assert_int_equal(drain(&st, &rows, msg, sizeof msg), 0);
        assert_int_equal(rows, ROWS - 1);
        st.release(&st);

        struct qv_scan_options t = {.threads = modes[m], .validate = QV_SCAN_VALIDATE_FULL,
                                    .take = take, .n_take = 4};
        assert_int_equal(qv_scan_open(rd, &t, res, &st, NULL), 0);
        assert_int_equal(drain(&st, &rows, msg, sizeof msg), 0);
        assert_int_equal(rows, 4);
        st.release(&st);

        int64_t bad[] = {1, BAD_ROW};
        t.take = bad;
        t.n_take = 2;
        assert_int_equal(qv_scan_open(rd, &t, res, &st, NULL), 0);
        assert_int_equal(drain(&st, &rows, msg, sizeof msg), EIO);
        assert_true(rows <= 1); /* row 1's batch, unless the error overtook it */
        st.release(&st);
    }
}

static void test_bad_tier_is_einval(void **state) {
    (void)state;
    int bad[] = {-1, 3, 1000};
    for (size_t i = 0; i < 3; i++) {
        struct qv_scan_options o = {.validate = bad[i]};
        struct ArrowArrayStream st;
        struct qv_error err;
        assert_int_equal(qv_scan_open(rd, &o, res, &st, &err), EINVAL);
        assert_null(st.release);
        assert_non_null(strstr(err.message, "validate"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_tier_fails_with_eio),
        cmocka_unit_test(test_none_and_cheap_pass_the_bytes),
        cmocka_unit_test(test_only_output_is_checked),
        cmocka_unit_test(test_bad_tier_is_einval),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
