/* Second column readers (twins, scan.c) attacked as a hostile user would,
 * in narrow scans (few projected columns, no filter, 1-4 workers, prefetch
 * 1-3): every type of random_batch.c, alone and in pairs and through nested
 * paths, over files of many row groups, one row group and 7-row row groups,
 * with dictionary, FSST and zstd forced, and with row ranges, takes, splits
 * and max_rows; each output equals the synchronous scan's (qv_arrow_array_equal
 * per column of each batch). Then: a column reader reused after a decode that
 * failed for memory (what a narrow scan does with the task of a batch beyond
 * prefetch) decodes the same rows right; a pool limit at every size ends in
 * the synchronous output or a clean ENOMEM; completed batches waiting stay
 * within what scan.h states; a caller's source whose reads fail once, return
 * short, block, or cancel the scan from inside. Every test is under the
 * deadline set in setup; no timing assertions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/thread.h"
#include "memory/memory_testing.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "random_batch.h"
#include "scan/scan_testing.h"
#include "test_util.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

/* The files: every type of random_batch.c, written several ways. */
enum { F_MANY, F_ONE, F_TINY, F_DICT, F_FSST, F_ZSTD, NFILES };
static const struct {
    const char *name;
    int64_t rows, rg_rows;
    uint32_t allowed;
    int compact, low_card;
} spec[NFILES] = {
    {"r2a_many.qvr", 9000, 1000, 0, 0, 0},
    {"r2a_one.qvr", 9000, 0, 0, 0, 0},
    {"r2a_tiny.qvr", 5000, 7, 0, 0, 0},
    {"r2a_dict.qvr", 9000, 2048, QV_ENC_BIT(QV_ENC_DICT) | QV_ENC_BIT(QV_ENC_BITPACK), 0, 1},
    {"r2a_fsst.qvr", 9000, 3000, QV_ENC_BIT(QV_ENC_FSST), 0, 0},
    {"r2a_zstd.qvr", 9000, 1500, QV_ENC_BIT(QV_ENC_ZSTD) | QV_ENC_BIT(QV_ENC_ZSTD_DICT), 1, 0},
};

struct file {
    char path[512];
    uint8_t *bytes;
    size_t size;
    struct qv_reader *rd;
    int32_t ncol;
};
static struct file files[NFILES];

__attribute__((unused)) static void nap_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t rs = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static void write_file(int k) {
    struct qv_error err = {0};
    struct qv_schema *s;
    assert_int_equal(rb_all_types_schema(res, &s), 0);
    struct qv_builder *b;
    assert_int_equal(qv_builder_create(s, res, NULL, &b, &err), 0);
    struct rb_options o = {.null_prob = 0.1, .max_list = 3, .max_string = 20,
                           .low_cardinality = spec[k].low_card};
    uint64_t seed = 1000 + (uint64_t)k;
    assert_int_equal(rb_append_rows(b, spec[k].rows, &seed, &o), 0);
    struct ArrowArray batch;
    assert_int_equal(qv_builder_finish(b, &batch, &err), 0);
    qv_builder_destroy(b);
    tu_path(files[k].path, sizeof files[k].path, spec[k].name);
    struct qv_writer_options wo = {.row_group_rows = spec[k].rg_rows ? spec[k].rg_rows : spec[k].rows,
                                   .allowed_encodings = spec[k].allowed,
                                   .compact = spec[k].compact};
    struct qv_writer *w;
    if (qv_writer_open(files[k].path, s, &wo, res, &w, &err) || qv_writer_write(w, &batch, &err) ||
        qv_writer_finish(w, &err))
        fail_msg("write %s: %s", spec[k].name, err.message);
    qv_writer_close(w);
    batch.release(&batch);
    qv_schema_destroy(s);
    files[k].bytes = tu_read_file(files[k].path, &files[k].size);
    assert_non_null(files[k].bytes);
    assert_int_equal(qv_reader_open(files[k].path, NULL, res, &files[k].rd, &err), 0);
    files[k].ncol = (int32_t)qv_reader_schema(files[k].rd)->root.n_children;
}

static int setup(void **state) {
    (void)state;
    alarm(1500); /* a hang fails the test instead of stalling CI */
    __atomic_store_n(&qv__scan_twin_min_ns, 0, __ATOMIC_RELAXED); /* twins for small columns too */
    assert_int_equal(qv_pool_create(NULL, &pool, NULL), 0);
    assert_int_equal(qv_reservation_create(pool, NULL, &res, NULL), 0);
    for (int k = 0; k < NFILES; k++) write_file(k);
    assert_int_equal(qv_reader_num_row_groups(files[F_ONE].rd), 1);
    assert_true(qv_reader_num_row_groups(files[F_TINY].rd) > 700);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int k = 0; k < NFILES; k++) {
        qv_reader_close(files[k].rd);
        unlink(files[k].path);
        free(files[k].bytes);
    }
    qv_reservation_destroy(res);
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reserved, 0);
    qv_pool_destroy(pool);
    alarm(0);
    return 0;
}

static void pool_is_clean(void) {
    struct qv_pool_stats st;
    qv_pool_get_stats(pool, &st);
    assert_int_equal(st.reservations, 1); /* only the test's own */
}

/* ---- a scan's output, kept batch by batch ---- */

struct out {
    struct ArrowArray *b;
    int64_t n, cap;
    int rc;             /* get_next's error at the end, or 0 */
    char msg[512];
    struct qv_schema *schema; /* the output schema (for comparisons) */
};

static void out_free(struct out *o) {
    for (int64_t i = 0; i < o->n; i++) o->b[i].release(&o->b[i]);
    free(o->b);
    if (o->schema) qv_schema_destroy(o->schema);
    memset(o, 0, sizeof *o);
}

static void out_push(struct out *o, struct ArrowArray *a) {
    if (o->n == o->cap) {
        o->cap = o->cap * 2 + 16;
        o->b = realloc(o->b, (size_t)o->cap * sizeof *o->b);
        assert_non_null(o->b);
    }
    o->b[o->n++] = *a;
}

/* Drains st into o (kept batches); stops at the first error. */
static void drain(struct ArrowArrayStream *st, struct out *o) {
    struct ArrowSchema sc;
    assert_int_equal(st->get_schema(st, &sc), 0);
    assert_int_equal(qv_schema_import(&sc, res, &o->schema, NULL), 0);
    sc.release(&sc);
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) {
            o->rc = rc;
            const char *m = st->get_last_error(st);
            snprintf(o->msg, sizeof o->msg, "%s", m ? m : "");
            assert_null(b.release);
            return;
        }
        if (!b.release) return;
        assert_true(b.length > 0);
        out_push(o, &b);
    }
}

static int64_t twins_opened; /* by the scans of scan(), summed */

static void scan(const struct qv_reader *r, const struct qv_scan_options *opts, struct out *o) {
    memset(o, 0, sizeof *o);
    struct ArrowArrayStream st;
    struct qv_error err;
    if (qv_scan_open(r, opts, res, &st, &err)) fail_msg("open: %s", err.message);
    drain(&st, o);
    int32_t opened, dropped;
    assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
    twins_opened += opened;
    st.release(&st);
}

/* Asserts got's first `n` batches equal want's (same lengths, every column
 * equal); n = -1: all of them, and as many. */
static void same_batches(const struct out *got, const struct out *want, int64_t n, const char *what) {
    if (n < 0) {
        if (got->n != want->n)
            fail_msg("%s: %lld batches against %lld", what, (long long)got->n, (long long)want->n);
        n = got->n;
    }
    assert_true(n <= got->n && n <= want->n);
    for (int64_t i = 0; i < n; i++) {
        const struct ArrowArray *a = &got->b[i], *b = &want->b[i];
        if (a->length != b->length || a->n_children != b->n_children)
            fail_msg("%s: batch %lld: %lld rows, %lld columns against %lld, %lld", what, (long long)i,
                     (long long)a->length, (long long)a->n_children, (long long)b->length,
                     (long long)b->n_children);
        for (int64_t c = 0; c < a->n_children; c++) {
            char why[256] = "";
            const struct qv_field *f = &want->schema->root.children[c];
            if (!qv_arrow_array_equal(f, a->children[c], b->children[c], why, sizeof why))
                fail_msg("%s: batch %lld column %s: %s", what, (long long)i, f->name, why);
        }
    }
}

/* The synchronous scan of the same options. */
static void reference(const struct qv_reader *r, struct qv_scan_options o, struct out *want) {
    o.threads = QV_SCAN_SYNC;
    scan(r, &o, want);
    if (want->rc) fail_msg("reference: %s", want->msg);
}

/* Options of a random narrow scan of cols[0..n) over file k (the row range,
 * take, split or max_rows drawn from `variant`). */
static int64_t take_rows[20000];
static struct qv_scan_options narrow_opts(int k, const int32_t *cols, int32_t n, int variant) {
    static const int64_t brs[] = {333, 1000, 1024, 4097, 64};
    int64_t rows = spec[k].rows;
    struct qv_scan_options o = {.columns = cols, .n_columns = n,
                                .batch_rows = brs[rnd() % (k == F_TINY ? 5 : 4)],
                                .threads = 1 << (rnd() % 3), .prefetch = 1 + (int)(rnd() % 3)};
    switch (variant) {
    case 1: /* a row range cutting row groups */
        o.row_begin = 1 + (int64_t)(rnd() % 500);
        o.row_end = rows - (int64_t)(rnd() % 500);
        break;
    case 2: { /* a take: runs and gaps, whole row groups skipped */
        int64_t m = 0;
        for (int64_t i = 0; i < rows; i++) {
            uint64_t x = rnd() % 16;
            if ((i / 1500) % 3 == 1) continue; /* skip some row groups whole */
            if (x < 9) take_rows[m++] = i;
        }
        o.take = take_rows;
        o.n_take = m;
        break;
    }
    case 3: { /* a split */
        int64_t nrg = qv_reader_num_row_groups(files[k].rd);
        if (nrg > 2) {
            o.row_group_begin = 1;
            o.row_group_end = nrg - 1;
        }
        break;
    }
    case 4: /* max_rows, not a multiple of batch_rows */
        o.max_rows = 4097 + (int64_t)(rnd() % 3000);
        break;
    default:
        break;
    }
    return o;
}

static void check_narrow(int k, struct qv_scan_options o, const char *what) {
    struct out want, got;
    reference(files[k].rd, o, &want);
    scan(files[k].rd, &o, &got);
    char w[256];
    snprintf(w, sizeof w, "%s: file %s, threads %d, prefetch %d, batch_rows %lld", what, spec[k].name,
             o.threads, o.prefetch, (long long)o.batch_rows);
    if (got.rc) fail_msg("%s: %s", w, got.msg);
    same_batches(&got, &want, -1, w);
    out_free(&want);
    out_free(&got);
    pool_is_clean();
}

/* Every column alone, and pairs, over every file and option variant. */
static void test_every_type_equals_sync(void **state) {
    (void)state;
    twins_opened = 0;
    for (int k = 0; k < NFILES; k++)
        for (int32_t c = 0; c < files[k].ncol; c++) {
            int32_t one[1] = {c};
            char what[64];
            snprintf(what, sizeof what, "column %d", c);
            check_narrow(k, narrow_opts(k, one, 1, (int)(rnd() % 5)), what);
            int32_t two[2] = {c, (c * 7 + 3) % files[k].ncol};
            if (two[1] == c) continue;
            snprintf(what, sizeof what, "columns %d, %d", two[0], two[1]);
            struct qv_scan_options o = narrow_opts(k, two, 2, (int)(rnd() % 5));
            o.threads = 2 + 2 * (int)(rnd() % 2); /* narrow with 2 columns */
            check_narrow(k, o, what);
        }
    assert_true(twins_opened > 0); /* the twins were there */
}

/* Nested paths into struct, list of struct and map, projected narrow. */
static void test_nested_paths_equal_sync(void **state) {
    (void)state;
    const struct qv_schema *s = qv_reader_schema(files[F_MANY].rd);
    int32_t pt = -1, lp = -1, m = -1, lls = -1;
    for (int32_t c = 0; c < (int32_t)s->root.n_children; c++) {
        const char *nm = s->root.children[c].name;
        if (!strcmp(nm, "pt")) pt = c;
        if (!strcmp(nm, "lp")) lp = c;
        if (!strcmp(nm, "m")) m = c;
        if (!strcmp(nm, "lls")) lls = c;
    }
    assert_true(pt >= 0 && lp >= 0 && m >= 0 && lls >= 0);
    static const int32_t x[] = {0}, item_label[] = {0, 1}, entries_value[] = {0, 1};
    const struct qv_column_path sets[][2] = {
        {{pt, 1, x}, {0}},
        {{lp, 2, item_label}, {0}},
        {{m, 2, entries_value}, {0}},
        {{pt, 1, x}, {lp, 2, item_label}},
        {{lls, 0, NULL}, {m, 2, entries_value}},
    };
    const int32_t nset[] = {1, 1, 1, 2, 2};
    for (int k = 0; k < NFILES; k++)
        for (int i = 0; i < 5; i++)
            for (int rep = 0; rep < 2; rep++) {
                struct qv_scan_options o = narrow_opts(k, NULL, 0, (int)(rnd() % 5));
                o.columns = NULL;
                o.n_columns = 0;
                o.paths = sets[i];
                o.n_paths = nset[i];
                if (nset[i] == 2 && o.threads < 2) o.threads = 2;
                char what[64];
                snprintf(what, sizeof what, "path set %d", i);
                check_narrow(k, o, what);
            }
}

/* ---- a column reader reused after a decode that failed for memory ----
 * A narrow scan gives the task of a batch beyond prefetch that found no
 * memory back to its batch and runs it again later, on the same first
 * reader (scan.c, run_task): the reader must decode the same rows right
 * after a failed decode. */
/* Decodes rows [lo, lo + n) through cr the way a scan's task does: into an
 * owned array of a reservation of its own (then adopted by the caller). */
static int read_like_scan(struct qv_column_reader *cr, int64_t lo, int64_t n, struct ArrowArray *out,
                          struct qv_reservation **ores, struct qv_error *err) {
    int rc = qv_reservation_create(pool, NULL, ores, err);
    if (rc) return rc;
    rc = qv_owned_array_create(out, qv_column_reader_field(cr), *ores, err);
    if (!rc) {
        rc = qv_column_reader_read_into(cr, lo, n, out, *ores, err);
        if (rc) out->release(out);
    }
    if (rc) {
        out->release = NULL;
        qv_reservation_destroy(*ores);
        *ores = NULL;
    }
    return rc;
}

static void release_read(struct ArrowArray *a, struct qv_reservation *r) {
    a->release(a);
    qv_reservation_destroy(r);
}

static void test_reader_reused_after_enomem(void **state) {
    (void)state;
    for (int k = 0; k < NFILES; k++) {
        if (k == F_TINY) continue;
        const struct qv_reader *rd = files[k].rd;
        int64_t nrg = qv_reader_num_row_groups(rd);
        for (int32_t c = 0; c < files[k].ncol; c++) {
            int64_t rg = nrg > 1 ? 1 : 0, rows = qv_reader_row_group_rows(rd, rg);
            int64_t lo = rows / 3, n = rows / 3;
            /* The rows decoded by a reader that never failed. */
            struct qv_column_reader *ok;
            struct qv_reservation *r1;
            assert_int_equal(qv_reservation_create(pool, NULL, &r1, NULL), 0);
            assert_int_equal(qv_column_reader_open(rd, rg, c, r1, &ok, NULL), 0);
            struct ArrowArray want;
            struct qv_reservation *wr;
            assert_int_equal(read_like_scan(ok, lo, n, &want, &wr, NULL), 0);
            const struct qv_field *f = qv_column_reader_field(ok);
            int done = 0;
            for (uint64_t nth = 1; nth < 2000 && !done; nth++) {
                struct qv_reservation *r2;
                assert_int_equal(qv_reservation_create(pool, NULL, &r2, NULL), 0);
                struct qv_column_reader *cr;
                assert_int_equal(qv_column_reader_open(rd, rg, c, r2, &cr, NULL), 0);
                /* A first decode elsewhere in the row group, then the one
                 * that fails, then again. */
                struct ArrowArray a;
                struct qv_reservation *ar;
                assert_int_equal(read_like_scan(cr, 0, lo / 2 + 1, &a, &ar, NULL), 0);
                release_read(&a, ar);
                qv_pool_inject_alloc_failure(pool, nth);
                struct qv_error err;
                int rc = read_like_scan(cr, lo, n, &a, &ar, &err);
                qv_pool_inject_alloc_failure(pool, 0);
                if (!rc) {
                    done = 1;
                    release_read(&a, ar);
                } else {
                    if (rc != ENOMEM) fail_msg("column %d nth %llu: %d %s", c, (unsigned long long)nth, rc, err.message);
                    struct ArrowArray again;
                    struct qv_reservation *gr;
                    rc = read_like_scan(cr, lo, n, &again, &gr, &err);
                    if (rc) fail_msg("%s column %d: read after ENOMEM (nth %llu): %s", spec[k].name, c,
                                     (unsigned long long)nth, err.message);
                    char why[256] = "";
                    if (!qv_arrow_array_equal(f, &want, &again, why, sizeof why))
                        fail_msg("%s column %s: after a failed decode (allocation %llu) the same rows "
                                 "decode differently: %s",
                                 spec[k].name, f->name, (unsigned long long)nth, why);
                    release_read(&again, gr);
                }
                qv_column_reader_close(cr);
                qv_reservation_destroy(r2);
            }
            assert_true(done);
            release_read(&want, wr);
            qv_column_reader_close(ok);
            qv_reservation_destroy(r1);
        }
    }
    pool_is_clean();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type_equals_sync),
        cmocka_unit_test(test_nested_paths_equal_sync),
        cmocka_unit_test(test_reader_reused_after_enomem),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
