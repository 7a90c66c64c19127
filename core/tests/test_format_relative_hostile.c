/* Hostile files for columns stored relative to another column (encoding
 * 17): the dependent's reference parameter rewritten, in one row group, to
 * itself, to a column that is itself relative (a chain, and a cycle when
 * the other one points back), to columns of another kind or width, to a
 * string column and to a node that does not exist. Checksums are skipped
 * so that the rewritten bytes reach the decoder. Every read of the damaged
 * row group (range read, take of the dependent alone through the file's
 * gathered take, filtered scan of the dependent alone) must fail with a
 * corruption error naming the dependent; rows of the intact row groups
 * still read right. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/file.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "format/format_testing.h"
#include "format/null_fill.h"
#include "batch_io.h"
#include "pool_env.h"
#include "random_batch.h"
#include "test_util.h"

enum { C_SHIP, C_COMMIT, C_RECEIPT, C_KEY, C_NOTE, C_NOISE, N_COLS };
#define ROWS 9000
#define RG_ROWS 4096

struct env {
    struct schema_env s;
    char path[512], bad[512];
};

static int setup(void **state) {
    alarm(300); /* a hang fails the test */
    struct env *e = calloc(1, sizeof *e);
    static const struct qv_field cols[N_COLS] = {
        {.name = "ship", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "commit", .type = QV_TYPE_DATE32},
        {.name = "receipt", .type = QV_TYPE_DATE32, .nullable = true},
        {.name = "key", .type = QV_TYPE_INT64},
        {.name = "note", .type = QV_TYPE_UTF8},
        {.name = "noise", .type = QV_TYPE_INT32},
    };
    schema_env_open(&e->s, cols, N_COLS);
    struct qv_error err;
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(e->s.schema, e->s.r, NULL, &b, &err), 0);
    uint64_t s = 77;
    for (int64_t i = 0; i < ROWS; i++) {
        int32_t ship = 8000 + (int32_t)(rb_next(&s) % 2500);
        char note[24];
        int len = snprintf(note, sizeof note, "n%llu", (unsigned long long)(rb_next(&s) % 1000));
        int rc = 0;
        rc |= rb_next(&s) % 20 == 0 ? qv_append_null(qv_builder_column(b, C_SHIP))
                                    : qv_append_date32(qv_builder_column(b, C_SHIP), ship);
        rc |= qv_append_date32(qv_builder_column(b, C_COMMIT),
                               ship + (int32_t)(rb_next(&s) % 181) - 90);
        rc |= rb_next(&s) % 20 == 0
                  ? qv_append_null(qv_builder_column(b, C_RECEIPT))
                  : qv_append_date32(qv_builder_column(b, C_RECEIPT),
                                     ship + 1 + (int32_t)(rb_next(&s) % 30));
        rc |= qv_append_int64(qv_builder_column(b, C_KEY), (int64_t)(rb_next(&s) >> 20));
        rc |= qv_append_string(qv_builder_column(b, C_NOTE), note, (size_t)len);
        rc |= qv_append_int32(qv_builder_column(b, C_NOISE), (int32_t)rb_next(&s));
        assert_int_equal(rc, 0);
    }
    assert_int_equal(qv_builder_finish(b, &e->s.batch, &err), 0);
    qv_builder_destroy(b);
    tu_path(e->path, sizeof e->path, "relative_hostile.qvr");
    tu_path(e->bad, sizeof e->bad, "relative_hostile_bad.qvr");
    /* Forced: commit and receipt are each stored relative to ship. */
    struct qv_writer *w;
    struct qv_writer_options o = {.row_group_rows = RG_ROWS};
    assert_int_equal(qv_writer_open(e->path, e->s.schema, &o, e->s.r, &w, &err), 0);
    qv_writer_force_encoding(w, QV_ENC_RELATIVE);
    if (bio_write_pieces(w, &e->s.batch, NULL, 0, &err)) fail_msg("write: %s", err.message);
    if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
    *state = e;
    return 0;
}

static int teardown(void **state) {
    struct env *e = *state;
    unlink(e->path);
    unlink(e->bad);
    schema_env_close(&e->s);
    free(e);
    alarm(0);
    return 0;
}

/* The file offset of the zig-zag byte of the `ref` parameter of column c's
 * relative values segment in row group rg. */
static uint64_t ref_param_offset(struct env *e, int64_t rg, int32_t c) {
    struct qv_reader *rd;
    struct qv_error err;
    assert_int_equal(qv_reader_open(e->path, NULL, e->s.r, &rd, &err), 0);
    struct qv_segment_info si;
    bio_values_segment(rd, rg, c, NULL, &si);
    uint64_t off = si.offset;
    qv_reader_close(rd);
    assert_true(off != 0);
    size_t size = 0;
    unsigned char *buf = tu_read_file(e->path, &size);
    assert_non_null(buf);
    /* Header: encoding, type (integers have no width), count varint,
     * nparams, then the parameter. */
    assert_int_equal(buf[off], QV_ENC_RELATIVE);
    uint64_t p = off + 2;
    while (buf[p] & 0x80) p++;
    p++;
    assert_int_equal(buf[p], 1); /* one parameter */
    p++;
    assert_true(buf[p] < 0x80); /* a one-byte svarint: small node numbers */
    free(buf);
    return p;
}

/* Writes the file with the bytes at offs[i] set to vals[i] to e->bad. */
static void patch_copy(struct env *e, const uint64_t *offs, const uint8_t *vals, int n) {
    size_t size = 0;
    unsigned char *buf = tu_read_file(e->path, &size);
    assert_non_null(buf);
    for (int i = 0; i < n; i++) buf[offs[i]] = vals[i];
    FILE *f = fopen(e->bad, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, size, f), size);
    fclose(f);
    free(buf);
}

static void expect_corrupt(int rc, const struct qv_error *err, const char *what) {
    if (rc != EIO || err->kind != QV_ERROR_CORRUPT || !strstr(err->message, "receipt"))
        fail_msg("%s: rc %d kind %d: %s", what, rc, (int)err->kind, err->message);
}

/* Reads of the damaged file: row group 1 of receipt fails, row group 0
 * still reads as written. */
static void attack(struct env *e, const char *what) {
    for (int mapped = 0; mapped < 2; mapped++) {
        struct qv_file_options fo = {.skip_checksums = true, .mmap = mapped};
        struct qv_file *f;
        struct qv_error err;
        int rc = qv_file_open(e->bad, &fo, &f, &err);
        if (rc) fail_msg("%s: open: %s", what, err.message);
        const struct qv_reader *rd = qv_file_reader(f);

        /* A range read of the damaged row group. */
        struct qv_column_reader *cr = NULL;
        struct ArrowArray got;
        rc = qv_column_reader_open(rd, 1, C_RECEIPT, e->s.r, &cr, &err);
        if (!rc) {
            rc = qv_column_reader_read(cr, 0, RG_ROWS, &got, &err);
            if (!rc) got.release(&got);
        }
        expect_corrupt(rc, &err, what);
        /* The same reader moved to an intact row group reads it right. */
        if (cr) {
            rc = qv_column_reader_move(&cr, 0, &err);
            if (!rc) rc = qv_column_reader_read(cr, 0, RG_ROWS, &got, &err);
            if (rc) fail_msg("%s: row group 0 after the damaged one: %s", what, err.message);
            struct ArrowArray want = *e->s.batch.children[C_RECEIPT];
            want.length = RG_ROWS;
            char why[256];
            if (!qv_arrow_array_equal(&e->s.schema->root.children[C_RECEIPT], &want, &got, why,
                                      sizeof why))
                fail_msg("%s: row group 0: %s", what, why);
            got.release(&got);
            qv_column_reader_close(cr);
        }

        /* A take of the dependent alone: rows of both row groups (the
         * gathered path), then only of row group 0. */
        const char *name = "receipt";
        for (int only0 = 0; only0 < 2; only0++) {
            int64_t rows[] = {3, 100, 4095, RG_ROWS + 7, RG_ROWS + 2000};
            int64_t n = only0 ? 3 : 5;
            struct qv_file_scan_options so = {.columns = &name, .n_columns = 1};
            struct ArrowArrayStream st;
            rc = qv_file_take(f, rows, n, &so, &st, &err);
            if (rc) fail_msg("%s: take open: %s", what, err.message);
            struct ArrowArray b;
            int64_t seen = 0;
            for (;;) {
                rc = st.get_next(&st, &b);
                if (rc || !b.release) break;
                const int32_t *v = b.children[0]->buffers[1];
                const int32_t *w = e->s.batch.children[C_RECEIPT]->buffers[1];
                const uint8_t *wv = e->s.batch.children[C_RECEIPT]->buffers[0];
                for (int64_t i = 0; i < b.length; i++) {
                    int64_t row = rows[seen + i];
                    int valid = !wv || qv_bit_get(wv, row);
                    const uint8_t *gv = b.children[0]->buffers[0];
                    int gvalid = !gv || qv_bit_get(gv, b.children[0]->offset + i);
                    assert_int_equal(gvalid, valid);
                    if (valid) assert_int_equal(v[b.children[0]->offset + i], w[row]);
                }
                seen += b.length;
                b.release(&b);
            }
            if (only0) {
                if (rc) fail_msg("%s: take of row group 0: %s", what, st.get_last_error(&st));
                assert_int_equal(seen, n);
            } else {
                const char *m = st.get_last_error(&st);
                if (rc != EIO || !m || !strstr(m, "receipt"))
                    fail_msg("%s: take: rc %d: %s", what, rc, m ? m : "(none)");
            }
            st.release(&st);
        }

        /* A filtered scan of the dependent alone. */
        struct qv_file_scan_options so = {.columns = &name, .n_columns = 1};
        so.scan.filter = "receipt < DATE '1994-08-21'"; /* day 8998 */
        so.scan.threads = QV_SCAN_SYNC;
        struct ArrowArrayStream st;
        rc = qv_file_scan(f, &so, &st, &err);
        if (rc) fail_msg("%s: scan open: %s", what, err.message);
        struct ArrowArray b;
        for (;;) {
            rc = st.get_next(&st, &b);
            if (rc || !b.release) break;
            b.release(&b);
        }
        const char *m = st.get_last_error(&st);
        if (rc != EIO || !m || !strstr(m, "receipt"))
            fail_msg("%s: filtered scan: rc %d: %s", what, rc, m ? m : "(none)");
        st.release(&st);
        qv_file_close(f);
    }
}

static void test_reference_rewritten(void **state) {
    struct env *e = *state;
    const uint64_t at = ref_param_offset(e, 1, C_RECEIPT);
    static const struct {
        int64_t ref;
        const char *what;
    } cases[] = {
        {C_RECEIPT, "itself"},
        {C_COMMIT, "a relative column (chain)"},
        {C_KEY, "int64 column"},
        {C_NOISE, "int32 column"},
        {C_NOTE, "string column"},
        {60, "node out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t v = (uint8_t)(cases[i].ref * 2);
        patch_copy(e, &at, &v, 1);
        attack(e, cases[i].what);
    }
}

/* A cycle: receipt relative to commit and commit relative to receipt. */
static void test_reference_cycle(void **state) {
    struct env *e = *state;
    const uint64_t at[2] = {ref_param_offset(e, 1, C_RECEIPT), ref_param_offset(e, 1, C_COMMIT)};
    const uint8_t v[2] = {C_COMMIT * 2, C_RECEIPT * 2};
    patch_copy(e, at, v, 2);
    attack(e, "cycle");
}

/* A reference mostly null, with the producer's garbage under its null
 * slots, written under every null-fill mode: the dependents read back as
 * written (their values are the reference's stored slots plus the
 * differences, so a fill that differed between the reference's segment and
 * the differences would show), and a filter on a dependent never matches
 * a null row. */
static void test_null_fill_modes(void **state) {
    struct env *e = *state;
    struct ArrowArray *ship = e->s.batch.children[C_SHIP];
    int32_t *sv = (int32_t *)ship->buffers[1];
    uint8_t *valid = (uint8_t *)ship->buffers[0];
    assert_non_null(valid);
    uint64_t s = 5;
    int64_t nulls = 0;
    for (int64_t i = 0; i < ROWS; i++) {
        if (rb_next(&s) % 10 < 6) qv_bit_clear(valid, i);
        if (!qv_bit_get(valid, i)) {
            sv[i] = (int32_t)rb_next(&s); /* garbage under the null slot */
            nulls++;
        }
    }
    ship->null_count = nulls;
    const int32_t *rv = e->s.batch.children[C_RECEIPT]->buffers[1];
    const uint8_t *rvalid = e->s.batch.children[C_RECEIPT]->buffers[0];
    int64_t want = 0;
    for (int64_t i = 0; i < ROWS; i++)
        want += (!rvalid || qv_bit_get(rvalid, i)) && rv[i] < 8998;
    for (int mode = 0; mode < QV__FILL_MODES; mode++) {
        struct qv_writer *w;
        struct qv_error err;
        struct qv_writer_options o = {.row_group_rows = RG_ROWS};
        assert_int_equal(qv_writer_open(e->bad, e->s.schema, &o, e->s.r, &w, &err), 0);
        qv_writer_force_encoding(w, QV_ENC_RELATIVE);
        qv_writer_force_null_fill(w, mode);
        if (bio_write_pieces(w, &e->s.batch, NULL, 0, &err)) fail_msg("write: %s", err.message);
        if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
        qv_writer_close(w);
        struct qv_file *f;
        assert_int_equal(qv_file_open(e->bad, NULL, &f, &err), 0);
        struct qv_file_scan_options so = {0};
        so.scan.threads = QV_SCAN_SYNC;
        struct ArrowArrayStream st;
        assert_int_equal(qv_file_scan(f, &so, &st, &err), 0);
        int64_t at = 0;
        for (;;) {
            struct ArrowArray b;
            if (st.get_next(&st, &b)) fail_msg("mode %d: %s", mode, st.get_last_error(&st));
            if (!b.release) break;
            for (int c = 0; c < N_COLS; c++) {
                struct ArrowArray want_c = *e->s.batch.children[c];
                want_c.offset += at;
                want_c.length = b.length;
                char why[256];
                if (!qv_arrow_array_equal(&e->s.schema->root.children[c], &want_c, b.children[c],
                                          why, sizeof why))
                    fail_msg("mode %d, column %s at row %lld: %s", mode,
                             e->s.schema->root.children[c].name, (long long)at, why);
            }
            at += b.length;
            b.release(&b);
        }
        st.release(&st);
        assert_int_equal(at, ROWS);
        const char *name = "receipt";
        struct qv_file_scan_options fo = {.columns = &name, .n_columns = 1};
        fo.scan.threads = QV_SCAN_SYNC;
        fo.scan.filter = "receipt < DATE '1994-08-21'"; /* day 8998 */
        assert_int_equal(qv_file_scan(f, &fo, &st, &err), 0);
        int64_t got = 0;
        for (;;) {
            struct ArrowArray b;
            if (st.get_next(&st, &b)) fail_msg("mode %d: %s", mode, st.get_last_error(&st));
            if (!b.release) break;
            assert_int_equal(b.children[0]->null_count, 0);
            got += b.length;
            b.release(&b);
        }
        st.release(&st);
        assert_int_equal(got, want);
        qv_file_close(f);
    }
}

/* The writer's choice when the reference has nulls: ship is null in 5% of
 * the rows and receipt follows it by 1..30 days. The sample fills ship's
 * null slots as the writer will (the previous value), so the choice sees
 * the wide differences those rows really get; receipt may or may not be
 * stored relative to ship (the estimate decides), and either way every
 * row group reads back as written. */
static void test_chosen_with_reference_nulls(void **state) {
    struct env *e = *state;
    struct qv_writer *w;
    struct qv_error err;
    struct qv_writer_options o = {.row_group_rows = RG_ROWS};
    assert_int_equal(qv_writer_open(e->bad, e->s.schema, &o, e->s.r, &w, &err), 0);
    if (bio_write_pieces(w, &e->s.batch, NULL, 0, &err)) fail_msg("write: %s", err.message);
    if (qv_writer_finish(w, &err)) fail_msg("finish: %s", err.message);
    qv_writer_close(w);
    assert_true(e->s.batch.children[C_SHIP]->null_count > 0);
    size_t size = 0;
    unsigned char *buf = tu_read_file(e->bad, &size);
    assert_non_null(buf);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(e->bad, NULL, e->s.r, &rd, &err), 0);
    int32_t node = qv_reader_column_node(rd, C_RECEIPT);
    int64_t n_relative = 0;
    for (int64_t g = 0; g < qv_reader_num_row_groups(rd); g++) {
        struct qv_chunk_info ci;
        assert_int_equal(qv_reader_chunk_info(rd, g, node, &ci, &err), 0);
        int relative = 0;
        for (int i = 0; i < ci.n_segments; i++) {
            struct qv_segment_info si;
            assert_int_equal(qv_reader_segment_info(rd, g, node, i, &si, &err), 0);
            if (si.role != QV_SEGMENT_VALUES) continue;
            /* encoding, type, count varint, nparams, the ref (zig-zag) */
            uint64_t at = si.offset + 2;
            while (buf[at] & 0x80) at++;
            relative = buf[si.offset] == QV_ENC_RELATIVE && buf[at + 1] == 1 &&
                       buf[at + 2] == C_SHIP * 2;
        }
        if (relative) n_relative++;
    }
    bio_check_row_groups(rd, e->s.schema, &e->s.batch, e->s.r, 0);
    print_message("receipt stored relative to ship in %lld of %lld row groups\n",
                  (long long)n_relative, (long long)qv_reader_num_row_groups(rd));
    qv_reader_close(rd);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reference_rewritten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reference_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_fill_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chosen_with_reference_nulls, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
