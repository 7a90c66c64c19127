/* What a scan reads from its source, now that it reads with pread into
 * owned, verified buffers (every byte read is copied and hashed, so reading
 * less is the only way to make that cheaper):
 *  - a filtered scan reads a projected column's span in a row group only
 *    when some row of it survives the filter; filter columns are read once;
 *  - a take reads only the row groups it touches, one read per column;
 *  - a column reader moved from row group to row group (qv_column_reader_move,
 *    how a scan reuses one read buffer per column) decodes exactly what
 *    opening it there would, keeps arrays decoded before the move valid,
 *    and fails like an open (EIO, reader closed) on a truncated or
 *    overwritten file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "quiver/format.h"
#include "quiver/scan.h"
#include "scan_fixture.h"
#include "test_util.h"

#define RG 5000 /* a multiple of the 1000 rows fx_write ends at a time */
#define NRG 3
#define ROWS (RG * NRG)
#define MAX_READS 4096

static struct qv_pool *pool;
static char path[512];

/* A file source that logs every read. */
struct counting {
    struct qv_source inner;
    int n;
    uint64_t off[MAX_READS], len[MAX_READS];
};

static int counting_read_at(void *ctx, uint64_t offset, void *buf, size_t len, struct qv_error *err) {
    struct counting *c = ctx;
    if (c->n < MAX_READS) {
        c->off[c->n] = offset;
        c->len[c->n] = len;
    }
    c->n++;
    return c->inner.read_at(c->inner.ctx, offset, buf, len, err);
}

static void counting_close(void *ctx) {
    struct counting *c = ctx;
    qv_source_close(&c->inner);
}

static struct qv_reader *open_counting(struct counting *c, struct qv_reservation *r) {
    memset(c, 0, sizeof *c);
    assert_int_equal(qv_source_open_file(path, &c->inner, NULL), 0);
    struct qv_source src = {.ctx = c, .name = c->inner.name, .size = c->inner.size,
                            .read_at = counting_read_at, .close = counting_close};
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open_source(&src, NULL, r, &rd, NULL), 0);
    assert_int_equal(qv_reader_num_row_groups(rd), NRG);
    c->n = 0; /* the footer reads are not the scan's */
    return rd;
}

/* The byte span [lo, hi) of top-level column `col` (a primitive) in rg. */
static void column_span(const struct qv_reader *rd, int64_t rg, int32_t col, uint64_t *lo, uint64_t *hi) {
    int32_t node = qv_reader_column_node(rd, col);
    struct qv_chunk_info ci;
    assert_int_equal(qv_reader_chunk_info(rd, rg, node, &ci, NULL), 0);
    *lo = UINT64_MAX;
    *hi = 0;
    for (int i = 0; i < ci.n_segments; i++) {
        struct qv_segment_info si;
        assert_int_equal(qv_reader_segment_info(rd, rg, node, i, &si, NULL), 0);
        if (si.offset < *lo) *lo = si.offset;
        if (si.offset + si.length > *hi) *hi = si.offset + si.length;
    }
    assert_true(*hi > *lo);
}

/* How many logged reads touch column col's span in rg; each one lies
 * inside it. A range read reads the whole span in one piece (so 1 means
 * that); a take of a format 2 file reads only the blocks it needs, one
 * read per run of them. */
static int reads_of(const struct counting *c, const struct qv_reader *rd, int64_t rg, int32_t col) {
    uint64_t lo, hi;
    column_span(rd, rg, col, &lo, &hi);
    int n = 0;
    assert_true(c->n <= MAX_READS);
    for (int i = 0; i < c->n; i++) {
        if (c->off[i] + c->len[i] <= lo || c->off[i] >= hi) continue;
        assert_true(c->off[i] >= lo);
        assert_true(c->off[i] + c->len[i] <= hi);
        n++;
    }
    return n;
}

/* Drains a scan; returns the rows, checks ids against `want` (may be NULL). */
static int64_t drain(struct qv_reader *rd, const struct qv_scan_options *so, struct qv_reservation *r,
                     int (*want)(int64_t)) {
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, so, r, &st, NULL), 0);
    int64_t rows = 0, prev = -1;
    for (;;) {
        struct ArrowArray a;
        assert_int_equal(st.get_next(&st, &a), 0);
        if (!a.release) break;
        /* Projection below is always (id, s). */
        const struct ArrowArray *id = a.children[0];
        for (int64_t i = 0; i < a.length; i++) {
            int64_t v = ((const int64_t *)id->buffers[1])[id->offset + i];
            assert_true(v > prev);
            if (want) assert_true(want(v));
            prev = v;
        }
        rows += a.length;
        a.release(&a);
    }
    st.release(&st);
    return rows;
}

static int setup(void **state) {
    (void)state;
    alarm(120); /* nothing here may block */
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    char name[64];
    snprintf(name, sizeof name, "scan-reads-%d.qvr", (int)getpid());
    tu_path(path, sizeof path, name);
    assert_int_equal(fx_write(path, ROWS, RG, r), 0);
    qv_reservation_destroy(r);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    qv_pool_destroy(pool);
    alarm(0);
    return 0;
}

/* Columns of the fixture: 0 id, 1 v, 2 s, 3 d, 4 tags. */
enum { C_ID = 0, C_V = 1, C_S = 2, C_D = 3 };

/* v = 37 needs id % 100 == 1 and d = 0.0 needs id % 1000 == 0: never both,
 * but statistics (which ignore correlations) cannot prune a row group. */
#define NEVER "(v = 37 AND d = 0.0)"

static int in_rg1(int64_t id) { return id / RG == 1; }

static void test_no_survivor_reads_no_projection(void **state) {
    (void)state;
    for (int batch = 0; batch < 2; batch++) {
        struct qv_reservation *r;
        assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
        struct counting c;
        struct qv_reader *rd = open_counting(&c, r);
        int32_t cols[2] = {C_ID, C_S};
        char filter[128];
        /* Rows survive in row group 1 only. */
        snprintf(filter, sizeof filter, NEVER " OR id = %d", RG + 17);
        struct qv_scan_options so = {.columns = cols, .n_columns = 2, .filter = filter,
                                     .threads = QV_SCAN_SYNC, .batch_rows = batch ? 1000 : 0};
        assert_int_equal(drain(rd, &so, r, in_rg1), 1);
        for (int64_t g = 0; g < NRG; g++) {
            /* Filter columns: read once per row group, whatever the batches. */
            assert_int_equal(reads_of(&c, rd, g, C_V), 1);
            assert_int_equal(reads_of(&c, rd, g, C_D), 1);
            /* id is a filter column too (the OR), read by the filter's own
             * readers (qv__filter_ctx) in every row group; where a row
             * survived, the projection gathers it from the values the filter
             * decoded (the OR decodes its columns) and reads nothing; s only
             * where a row survived. */
            assert_int_equal(reads_of(&c, rd, g, C_ID), 1);
            assert_int_equal(reads_of(&c, rd, g, C_S) > 0, g == 1);
        }
        /* No survivor anywhere: no projected-only column is read at all. */
        c.n = 0;
        so.filter = NEVER;
        assert_int_equal(drain(rd, &so, r, NULL), 0);
        for (int64_t g = 0; g < NRG; g++) {
            assert_int_equal(reads_of(&c, rd, g, C_V), 1);
            assert_int_equal(reads_of(&c, rd, g, C_ID), 0);
            assert_int_equal(reads_of(&c, rd, g, C_S), 0);
        }
        qv_reader_close(rd);
        qv_reservation_destroy(r);
    }
}

static void test_take_reads_touched_row_groups_only(void **state) {
    (void)state;
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    struct counting c;
    struct qv_reader *rd = open_counting(&c, r);
    int32_t cols[2] = {C_ID, C_S};
    int64_t take[3] = {5, 2 * RG + 1, 2 * RG + 100};
    struct qv_scan_options so = {.columns = cols, .n_columns = 2, .take = take, .n_take = 3,
                                 .threads = QV_SCAN_SYNC};
    assert_int_equal(drain(rd, &so, r, NULL), 3);
    int total = 0;
    for (int64_t g = 0; g < NRG; g++) {
        int want = g == 1 ? 0 : 1;
        int id = reads_of(&c, rd, g, C_ID), str = reads_of(&c, rd, g, C_S);
        assert_int_equal(id > 0, want);
        assert_int_equal(str > 0, want);
        assert_int_equal(reads_of(&c, rd, g, C_V), 0);
        assert_int_equal(reads_of(&c, rd, g, C_D), 0);
        total += id + str;
    }
    assert_int_equal(c.n, total); /* nothing outside the taken columns' spans */
    qv_reader_close(rd);
    qv_reservation_destroy(r);
}

static void check_ids(const struct ArrowArray *a, int64_t first, int64_t n) {
    assert_int_equal(a->length, n);
    for (int64_t i = 0; i < n; i++)
        assert_int_equal(((const int64_t *)a->buffers[1])[a->offset + i], first + i);
}

static void test_move_matches_open(void **state) {
    (void)state;
    struct qv_reservation *r;
    assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
    struct qv_reader *rd;
    assert_int_equal(qv_reader_open(path, NULL, r, &rd, NULL), 0);
    struct qv_column_reader *cr;
    assert_int_equal(qv_column_reader_open(rd, 0, C_ID, r, &cr, NULL), 0);
    struct ArrowArray held;
    assert_int_equal(qv_column_reader_read(cr, 0, RG, &held, NULL), 0);
    uint64_t used = 0;
    const int64_t order[] = {1, 2, 0, 2, 1};
    for (int i = 0; i < 5; i++) {
        int64_t g = order[i];
        assert_int_equal(qv_column_reader_move(&cr, g, NULL), 0);
        assert_non_null(cr);
        struct ArrowArray a;
        assert_int_equal(qv_column_reader_read(cr, 0, RG, &a, NULL), 0);
        check_ids(&a, g * RG, RG);
        a.release(&a);
        int64_t rows[2] = {3, RG - 1};
        assert_int_equal(qv_column_reader_take(cr, rows, 2, &a, NULL), 0);
        assert_int_equal(((const int64_t *)a.buffers[1])[0], g * RG + 3);
        assert_int_equal(((const int64_t *)a.buffers[1])[1], g * RG + RG - 1);
        a.release(&a);
        /* Equal row groups: moving holds no more memory than before. */
        if (i == 0) used = qv_reservation_used(r);
        else assert_int_equal(qv_reservation_used(r), used);
    }
    /* Decoded before any move: still the data of row group 0. */
    check_ids(&held, 0, RG);
    held.release(&held);
    struct qv_error err;
    assert_int_equal(qv_column_reader_move(&cr, NRG, &err), EINVAL);
    assert_null(cr);
    assert_non_null(strstr(err.message, "out of range"));
    assert_int_equal(qv_column_reader_move(&cr, 0, &err), EINVAL); /* nothing to move */
    qv_reader_close(rd);
    assert_int_equal(qv_reservation_used(r), 0);
    qv_reservation_destroy(r);
}

/* A file changed after the reader opened: a move verifies what it reads,
 * like an open, and leaves nothing open on failure. */
static void test_move_fails_like_open(void **state) {
    (void)state;
    char copy[600];
    snprintf(copy, sizeof copy, "%s.changed", path);
    for (int mode = 0; mode < 2; mode++) {
        struct qv_reservation *r;
        assert_int_equal(qv_reservation_create(pool, NULL, &r, NULL), 0);
        {
            /* A private copy to damage. */
            FILE *in = fopen(path, "rb"), *out = fopen(copy, "wb");
            assert_non_null(in);
            assert_non_null(out);
            char buf[65536];
            size_t n;
            while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
            fclose(in);
            assert_int_equal(fclose(out), 0);
        }
        struct qv_reader *rd;
        assert_int_equal(qv_reader_open(copy, NULL, r, &rd, NULL), 0);
        struct qv_column_reader *cr;
        assert_int_equal(qv_column_reader_open(rd, 0, C_S, r, &cr, NULL), 0);
        uint64_t lo, hi;
        column_span(rd, 2, C_S, &lo, &hi);
        if (mode == 0) {
            assert_int_equal(truncate(copy, (off_t)lo + 1), 0);
        } else {
            /* Same length, different bytes, in place. */
            FILE *f = fopen(copy, "r+b");
            assert_non_null(f);
            assert_int_equal(fseek(f, (long)(lo + (hi - lo) / 2), SEEK_SET), 0);
            uint8_t junk[16];
            memset(junk, 0xA5, sizeof junk);
            assert_int_equal(fwrite(junk, 1, sizeof junk, f), sizeof junk);
            assert_int_equal(fclose(f), 0);
        }
        struct qv_error err;
        /* Row group 1 is untouched; row group 2 is damaged. A format 2
         * file read with pread reads and verifies at the first decode, so
         * the move succeeds and the read fails; then nothing stays open
         * once the column reader is closed. */
        assert_int_equal(qv_column_reader_move(&cr, 1, &err), 0);
        int rc = qv_column_reader_move(&cr, 2, &err);
        if (rc == 0) {
            struct ArrowArray a;
            assert_int_equal(qv_column_reader_read(cr, 0, RG, &a, &err), EIO);
            qv_column_reader_close(cr);
        } else {
            assert_int_equal(rc, EIO);
            assert_null(cr);
        }
        assert_non_null(strstr(err.message, mode == 0 ? "short read" : "checksum mismatch"));
        assert_non_null(strstr(err.message, "row group 2"));
        qv_reader_close(rd);
        assert_int_equal(qv_reservation_used(r), 0);
        qv_reservation_destroy(r);
        unlink(copy);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_survivor_reads_no_projection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_reads_touched_row_groups_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_matches_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_fails_like_open, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
