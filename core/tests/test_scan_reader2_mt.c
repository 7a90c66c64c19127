/* Second column readers (twins, scan.c): a projected column decoded by two
 * tasks at once (batches N and N + 1), each on a reader of its own, in
 * narrow projections (fewer projected columns than threads) and filtered
 * ones like them with two or more workers, and in no other scan. Checked here: the output equals the synchronous scan's, value for value, over many row
 * groups with batch sizes that do not divide them, for 1, 2 and 4 workers
 * and prefetch 1 to 3; a twin is really used (a read of the first reader is
 * held on a gate meanwhile); a corrupt segment the twin loads fails its
 * batch, returned in batch order; a twin refused for memory gives the task
 * back to the first reader (the scan goes on with one reader); allocation
 * failures at every step end in the output or a clean ENOMEM; cancel and
 * release at any point; a caller's read_at source; takes through the file
 * layer (whose readers are lent) make no twin; filtered scans of few
 * columns with two or more workers have twins and equal the synchronous
 * scan; scans that are not narrow (wider projections, a filter with one
 * worker or prefetch 1) hold no second reader at all. Runs under ThreadSanitizer
 * (label "concurrency"); every test is under the deadline set in setup. */
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
#include "canceller.h"
#include "fx_file.h"
#include "memory/memory_testing.h"
#include "quiver/file.h"
#include "quiver/scan.h"
#include "scan/scan_testing.h"
#include "scan_fixture.h"

#define ROWS 30000
#define RG 2048 /* row groups cut at the writer's next end of rows: 3000 rows */

static struct fx_file fx;
static struct qv_reader *rd;

static int setup(void **state) {
    (void)state;
    alarm(600); /* a hang fails the test instead of stalling CI */
    /* The fixture's columns decode in microseconds: twins for them too. */
    __atomic_store_n(&qv__scan_twin_min_ns, 0, __ATOMIC_RELAXED);
    fx_file_open(&fx, "scan_reader2_mt.qvr", ROWS, RG);
    assert_int_equal(qv_reader_open(fx.path, NULL, fx.res, &rd, NULL), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    qv_reader_close(rd);
    fx_file_close(&fx);
    alarm(0);
    return 0;
}

static void pool_is_clean(void) { fx_file_pool_is_clean(&fx); }

/* Rows of a row group (all but the last have as many): batches of this
 * size are one per row group. */
static int64_t rg_rows(void) {
    int64_t n = qv_reader_row_group_rows(rd, 0);
    for (int64_t g = 1; g + 1 < qv_reader_num_row_groups(rd); g++)
        assert_int_equal(qv_reader_row_group_rows(rd, g), n);
    return n;
}

static void nap_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t rs = 4242;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* ---- the output, written down canonically ---- */

struct buf {
    uint8_t *p;
    size_t n, cap;
};

static void put(struct buf *b, const void *v, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 1024;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

static int valid_at(const struct ArrowArray *a, int64_t i) {
    const uint8_t *v = a->n_buffers > 0 ? a->buffers[0] : NULL;
    i += a->offset;
    return !v || (v[i / 8] >> (i % 8)) & 1;
}

/* Column c of the fixture (0 id int64, 1 v int32, 2 s utf8, 3 d float64,
 * 4 tags list<int64>): per row its validity and, when valid, its value's
 * bytes (a string's or list's length first). */
static void put_column(struct buf *out, int32_t c, const struct ArrowArray *a) {
    for (int64_t r = 0; r < a->length; r++) {
        uint8_t ok = (uint8_t)valid_at(a, r);
        put(out, &ok, 1);
        if (!ok) continue;
        int64_t i = r + a->offset;
        switch (c) {
        case 0:
        case 3:
            put(out, (const uint8_t *)a->buffers[1] + 8 * i, 8);
            break;
        case 1:
            put(out, (const uint8_t *)a->buffers[1] + 4 * i, 4);
            break;
        case 2: {
            const int32_t *off = a->buffers[1];
            int32_t len = off[i + 1] - off[i];
            put(out, &len, sizeof len);
            put(out, (const char *)a->buffers[2] + off[i], (size_t)len);
            break;
        }
        default: {
            const int32_t *off = a->buffers[1];
            const struct ArrowArray *item = a->children[0];
            int32_t len = off[i + 1] - off[i];
            put(out, &len, sizeof len);
            for (int32_t k = off[i]; k < off[i + 1]; k++) {
                uint8_t iv = (uint8_t)valid_at(item, k);
                put(out, &iv, 1);
                if (iv) put(out, (const uint8_t *)item->buffers[1] + 8 * (k + item->offset), 8);
            }
            break;
        }
        }
    }
}

/* Appends a batch of the projection cols[0..n) (its length first). */
static void put_batch(struct buf *out, const int32_t *cols, int32_t n, const struct ArrowArray *b) {
    assert_int_equal(b->n_children, n);
    put(out, &b->length, sizeof b->length);
    for (int32_t j = 0; j < n; j++) {
        assert_int_equal(b->children[j]->length, b->length);
        put_column(out, cols[j], b->children[j]);
    }
}

/* Drains a scan into `out`; returns the first get_next error (0 at the
 * end), with *batches the batches received before it. */
static int drain(struct ArrowArrayStream *st, const int32_t *cols, int32_t n, struct buf *out,
                 int64_t *batches) {
    *batches = 0;
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) return rc;
        if (!b.release) return 0;
        assert_true(b.length > 0);
        put_batch(out, cols, n, &b);
        b.release(&b);
        (*batches)++;
    }
}

/* The synchronous scan of the same options: the reference. */
static void reference(const struct qv_reader *r, struct qv_scan_options o, struct buf *out) {
    o.threads = QV_SCAN_SYNC;
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(r, &o, fx.res, &st, NULL), 0);
    int64_t nb;
    assert_int_equal(drain(&st, o.columns, o.n_columns, out, &nb), 0);
    st.release(&st);
}

/* Whether a is the start of b (empty buffers have no pointer). */
static int is_prefix(const struct buf *a, const struct buf *b) {
    return a->n <= b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

static void assert_same(const struct buf *a, const struct buf *b, const char *what) {
    if (a->n != b->n || !is_prefix(a, b))
        fail_msg("%s: output differs from the synchronous scan (%zu against %zu bytes)", what,
                 a->n, b->n);
}

/* Scans r with o, which must run to the end, and asserts the output is
 * ref's; then releases the scan and checks the pool holds nothing. */
static void scan_same(const struct qv_reader *r, const struct qv_scan_options *o, const struct buf *ref,
                      const char *what) {
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(r, o, fx.res, &st, NULL), 0);
    struct buf got = {0};
    int64_t nb;
    assert_int_equal(drain(&st, o->columns, o->n_columns, &got, &nb), 0);
    assert_same(&got, ref, what);
    st.release(&st);
    pool_is_clean();
    free(got.p);
}

static const int32_t p_s[] = {2}, p_id[] = {0}, p_vs[] = {1, 2}, p_tags[] = {4},
                     p_ivs[] = {0, 1, 2}, p_dtags[] = {3, 4};
static const struct {
    const int32_t *cols;
    int32_t n;
} projs[] = {{p_s, 1}, {p_id, 1}, {p_vs, 2}, {p_tags, 1}, {p_ivs, 3}, {p_dtags, 2}};
#define NPROJ ((int)(sizeof projs / sizeof projs[0]))

/* Scans rd with o to the end and asserts: the output is ref's; at most one
 * twin per column was opened and none dropped; the scan has twins exactly
 * when `twins` says (and opened none without them). Returns the twins
 * opened; *ss gets the scan's stats. */
static int32_t scan_mix(const struct qv_scan_options *o, const struct buf *ref, const char *what,
                        int twins, struct qv_scan_stats *ss) {
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(rd, o, fx.res, &st, NULL), 0);
    struct buf got = {0};
    int64_t nb;
    assert_int_equal(drain(&st, o->columns, o->n_columns, &got, &nb), 0);
    assert_same(&got, ref, what);
    assert_int_equal(qv_scan_get_stats(&st, ss), 0);
    int32_t opened, dropped;
    assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
    assert_true(opened <= o->n_columns); /* at most one twin per column */
    assert_int_equal(dropped, 0);
    assert_int_equal(qv__scan_testing_has_twins(&st), twins);
    if (!twins) assert_int_equal(opened, 0);
    st.release(&st);
    pool_is_clean();
    free(got.p);
    return opened;
}

/* Narrow projections (and some that are not, with 1 worker) equal the
 * synchronous scan for every mix of workers, prefetch and batch size. */
static void test_equals_sync_every_mix(void **state) {
    (void)state;
    int threads[] = {1, 2, 4};
    int64_t batch_rows[] = {333, 1100, 2048, 3000, 5000};
    for (int pj = 0; pj < NPROJ; pj++)
        for (int br = 0; br < 5; br++) {
            struct qv_scan_options o = {.columns = projs[pj].cols, .n_columns = projs[pj].n,
                                        .batch_rows = batch_rows[br]};
            struct buf ref = {0};
            reference(rd, o, &ref);
            for (int t = 0; t < 3; t++)
                for (int p = 1; p <= 3; p++) {
                    o.threads = threads[t];
                    o.prefetch = p;
                    char what[96];
                    snprintf(what, sizeof what, "projection %d, batch_rows %lld, threads %d, prefetch %d",
                             pj, (long long)batch_rows[br], threads[t], p);
                    /* Narrow: fewer columns than workers + the consumer
                     * (the file is the library's: the consumer reads). */
                    struct qv_scan_stats ss;
                    scan_mix(&o, &ref, what, o.n_columns < threads[t] + 1, &ss);
                    assert_true(ss.max_queued <= p);
                    assert_int_equal(ss.rows_output, ROWS);
                }
            free(ref.p);
        }
}

/* Filtered scans equal the synchronous scan for every mix of workers,
 * prefetch and batch size; those with two or more workers, prefetch 2 or
 * more and fewer projected columns than threads have twins (filter
 * columns among the projected ones too: their values come from the
 * filter, the others' from either reader). */
static void test_filtered_equals_sync(void **state) {
    (void)state;
    static const char *filters[] = {"v >= 0", "id < 20000 AND d > 0.5", "id < 5000 OR v < 10"};
    int threads[] = {1, 2, 4};
    int64_t batch_rows[] = {1100, 3000};
    int32_t twinned = 0;
    for (int pj = 0; pj < NPROJ; pj++)
        for (int fl = 0; fl < 3; fl++)
            for (int br = 0; br < 2; br++) {
                struct qv_scan_options o = {.columns = projs[pj].cols, .n_columns = projs[pj].n,
                                            .batch_rows = batch_rows[br], .filter = filters[fl]};
                struct buf ref = {0};
                reference(rd, o, &ref);
                for (int t = 0; t < 3; t++)
                    for (int p = 1; p <= 3; p++) {
                        o.threads = threads[t];
                        o.prefetch = p;
                        char what[160];
                        snprintf(what, sizeof what,
                                 "projection %d, filter %s, batch_rows %lld, threads %d, prefetch %d",
                                 pj, filters[fl], (long long)batch_rows[br], threads[t], p);
                        int twins = threads[t] >= 2 && p >= 2 && o.n_columns < threads[t] + 1;
                        struct qv_scan_stats ss;
                        twinned += scan_mix(&o, &ref, what, twins, &ss);
                    }
                free(ref.p);
            }
    assert_true(twinned > 0); /* some twin really decoded a batch */
}

/* ---- a source whose reads of one byte range wait on a gate ---- */

struct gated {
    qv_mutex mu;
    qv_cond cv;
    uint64_t lo, hi; /* reads overlapping [lo, hi) wait while the gate is closed */
    uint64_t lo2, hi2; /* reads overlapping [lo2, hi2) are counted in `later` */
    int open, blocked, gave_up, later;
    const uint8_t *bytes;
};

static int gated_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    struct gated *g = ctx;
    qv_mutex_lock(&g->mu);
    if (off < g->hi2 && off + len > g->lo2) {
        g->later++;
        qv_cond_broadcast(&g->cv);
    }
    if (off < g->hi && off + len > g->lo) {
        g->blocked++;
        qv_cond_broadcast(&g->cv);
        /* Bounded: a lost wake-up shows up as a failed assertion, not a hang. */
        for (int i = 0; i < 600 && !g->open; i++) qv_cond_timedwait_ms(&g->cv, &g->mu, 100);
        if (!g->open) g->gave_up++;
    }
    qv_mutex_unlock(&g->mu);
    if (off + len > fx.size) return qv_error_set(err, EIO, "gated: read past the end");
    memcpy(buf, g->bytes + off, len);
    return 0;
}

static void gated_init(struct gated *g, const uint8_t *bytes, int64_t rg, int32_t column) {
    memset(g, 0, sizeof *g);
    qv_mutex_init(&g->mu);
    qv_cond_init(&g->cv);
    g->bytes = bytes;
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, rg, qv_reader_column_node(rd, column), 0, &si, NULL), 0);
    g->lo = si.offset;
    g->hi = si.offset + si.length;
}

static void gated_open(struct gated *g) {
    qv_mutex_lock(&g->mu);
    g->open = 1;
    qv_cond_broadcast(&g->cv);
    qv_mutex_unlock(&g->mu);
}

static void gated_destroy(struct gated *g) {
    assert_int_equal(g->gave_up, 0);
    qv_cond_destroy(&g->cv);
    qv_mutex_destroy(&g->mu);
}

/* Waits (at most 60 s) until the scan has opened `opened` twins or dropped
 * `dropped`, and a read is held at the gate. */
static void wait_twins(struct gated *g, struct ArrowArrayStream *st, int32_t opened, int32_t dropped) {
    for (int i = 0; i < 6000; i++) {
        int32_t o, d;
        assert_int_equal(qv__scan_twin_counts(st, &o, &d), 0);
        qv_mutex_lock(&g->mu);
        int blocked = g->blocked;
        qv_mutex_unlock(&g->mu);
        if (blocked && o >= opened && d >= dropped) return;
        nap_us(10000);
    }
    fail_msg("no twin after 60 s (wanted %d opened, %d dropped)", opened, dropped);
}

struct consumer {
    struct ArrowArrayStream *st;
    const int32_t *cols;
    int32_t n;
    struct buf out;
    int rc;
    int64_t batches;
};

static void *consume(void *arg) {
    struct consumer *c = arg;
    c->rc = drain(c->st, c->cols, c->n, &c->out, &c->batches);
    return NULL;
}

/* Opens a scan of column s over a gated copy of the file whose reads of
 * column s in row group 0 wait, with one batch per row group, so that
 * batch 1 must run on the twin while the first reader waits in batch 0. */
static void open_gated(struct gated *g, const uint8_t *bytes, struct qv_reader **r,
                       struct ArrowArrayStream *st, int threads) {
    gated_init(g, bytes, 0, 2);
    struct qv_source src = {.ctx = g, .name = "gated.qvr", .size = fx.size, .read_at = gated_read};
    assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, r, NULL), 0);
    struct qv_scan_options o = {.columns = p_s, .n_columns = 1, .batch_rows = rg_rows(),
                                .threads = threads};
    assert_int_equal(qv_scan_open(*r, &o, fx.res, st, NULL), 0);
}

/* A gated run: the scan of open_gated over `bytes`, drained by a consumer
 * thread into c.out. */
struct gated_run {
    struct gated g;
    struct qv_reader *r;
    struct ArrowArrayStream st;
    struct consumer c;
};

/* Opens the gated scan, starts the consumer, waits until the scan has
 * opened `opened` twins or dropped `dropped` with a read held at the gate
 * (wait_twins), opens the gate and joins the consumer: the caller then
 * checks c.rc, c.out and st, and calls gated_run_end. */
static void gated_run(struct gated_run *x, const uint8_t *bytes, int threads, int32_t opened,
                      int32_t dropped) {
    open_gated(&x->g, bytes, &x->r, &x->st, threads);
    x->c = (struct consumer){.st = &x->st, .cols = p_s, .n = 1};
    qv_thread th;
    assert_int_equal(qv_thread_create(&th, consume, &x->c), 0);
    wait_twins(&x->g, &x->st, opened, dropped);
    gated_open(&x->g);
    qv_thread_join(th);
}

/* Releases the scan, closes the reader and the gate (asserting no read gave
 * up waiting), checks the pool holds nothing and frees the output. */
static void gated_run_end(struct gated_run *x) {
    x->st.release(&x->st);
    qv_reader_close(x->r);
    gated_destroy(&x->g);
    pool_is_clean();
    free(x->c.out.p);
}

/* A twin is really used: while the first reader of s waits inside its read
 * of row group 0, batch 1 runs on the twin; the output equals the
 * synchronous scan's, over a caller's read_at source (whose reads the
 * consumer leaves to the workers). */
static void test_twin_used_while_first_reader_waits(void **state) {
    (void)state;
    struct qv_scan_options ro = {.columns = p_s, .n_columns = 1, .batch_rows = rg_rows()};
    struct buf ref = {0};
    reference(rd, ro, &ref);
    for (int threads = 2; threads <= 4; threads += 2) {
        struct gated_run x;
        gated_run(&x, fx.bytes, threads, 1, 0);
        assert_int_equal(x.c.rc, 0);
        assert_same(&x.c.out, &ref, "gated");
        int32_t opened, dropped;
        assert_int_equal(qv__scan_twin_counts(&x.st, &opened, &dropped), 0);
        assert_int_equal(opened, 1);
        assert_int_equal(dropped, 0);
        gated_run_end(&x);
    }
    free(ref.p);
}

/* Narrow scans give twins to columns measured cheap too (the threshold,
 * QV_SCAN_TWIN_MIN_NS, applies to filtered scans only): with every column
 * measured cheap, while one reader of s waits at the gate inside row group
 * 2, the other reads row group 3. Without a twin for a cheap column, row
 * group 3 would wait for the gated reader and this fails after 60 s. */
static void test_cheap_column_twin_in_narrow_scan(void **state) {
    (void)state;
    const int64_t saved = __atomic_load_n(&qv__scan_twin_min_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&qv__scan_twin_min_ns, INT64_MAX, __ATOMIC_RELAXED);
    struct qv_scan_options o = {.columns = p_s, .n_columns = 1, .batch_rows = rg_rows(),
                                .threads = 2, .prefetch = 3};
    struct buf ref = {0};
    reference(rd, o, &ref);
    assert_true(qv_reader_num_row_groups(rd) > 4);
    /* The gate and the count start once the reader is open (its first
     * read may span the data). */
    struct gated g;
    gated_init(&g, fx.bytes, 2, 2);
    const uint64_t lo = g.lo, hi = g.hi;
    g.lo = g.hi = 0;
    struct qv_source src = {.ctx = &g, .name = "gated.qvr", .size = fx.size, .read_at = gated_read};
    struct qv_reader *r;
    assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &r, NULL), 0);
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 3, qv_reader_column_node(rd, 2), 0, &si, NULL), 0);
    qv_mutex_lock(&g.mu);
    g.lo = lo;
    g.hi = hi;
    g.lo2 = si.offset;
    g.hi2 = si.offset + si.length;
    qv_mutex_unlock(&g.mu);
    struct ArrowArrayStream st;
    assert_int_equal(qv_scan_open(r, &o, fx.res, &st, NULL), 0);
    struct consumer c = {.st = &st, .cols = p_s, .n = 1};
    qv_thread th;
    assert_int_equal(qv_thread_create(&th, consume, &c), 0);
    int blocked = 0, later = 0;
    for (int i = 0; i < 6000 && !(blocked && later); i++) {
        qv_mutex_lock(&g.mu);
        blocked = g.blocked;
        later = g.later;
        qv_mutex_unlock(&g.mu);
        if (!(blocked && later)) nap_us(10000);
    }
    gated_open(&g);
    qv_thread_join(th);
    assert_true(blocked);
    if (!later) fail_msg("row group 3 was not read while row group 2's read waited");
    assert_int_equal(c.rc, 0);
    assert_same(&c.out, &ref, "cheap column, gated");
    st.release(&st);
    qv_reader_close(r);
    gated_destroy(&g);
    pool_is_clean();
    free(c.out.p);
    free(ref.p);
    __atomic_store_n(&qv__scan_twin_min_ns, saved, __ATOMIC_RELAXED);
}

/* A corrupt segment of s in row group 1, loaded by the twin (the first
 * reader waits in row group 0): batch 0 arrives intact, then EIO naming
 * the file, the column and the row group, and the error stays. */
static void test_corrupt_segment_seen_by_twin(void **state) {
    (void)state;
    uint8_t *copy = malloc(fx.size);
    assert_non_null(copy);
    memcpy(copy, fx.bytes, fx.size);
    struct qv_segment_info si;
    assert_int_equal(qv_reader_segment_info(rd, 1, qv_reader_column_node(rd, 2), 0, &si, NULL), 0);
    copy[si.offset + si.length / 2] ^= 0x5a;
    struct qv_scan_options ro = {.columns = p_s, .n_columns = 1, .batch_rows = rg_rows()};
    struct buf ref = {0};
    reference(rd, ro, &ref);
    for (int threads = 2; threads <= 4; threads += 2) {
        struct gated_run x;
        gated_run(&x, copy, threads, 1, 0);
        assert_int_equal(x.c.rc, EIO);
        if (x.c.batches != 1)
            fail_msg("%lld batches before: %s", (long long)x.c.batches, x.st.get_last_error(&x.st));
        assert_true(x.c.out.n < ref.n && is_prefix(&x.c.out, &ref));
        const char *msg = x.st.get_last_error(&x.st);
        if (!strstr(msg, "gated.qvr") || !strstr(msg, "row group 1") || !strstr(msg, "'s'"))
            fail_msg("message '%s'", msg);
        struct ArrowArray b;
        assert_int_equal(x.st.get_next(&x.st, &b), EIO);
        assert_null(b.release);
        gated_run_end(&x);
    }
    free(ref.p);
    free(copy);
}

/* Corruption in every row group of s, batch sizes that do not divide row
 * groups (so both readers load most row groups): whichever reader meets it
 * first, the scan hands out what the synchronous scan does before its
 * error, then EIO. */
static void test_corrupt_every_row_group(void **state) {
    (void)state;
    uint8_t *copy = malloc(fx.size);
    assert_non_null(copy);
    int64_t nrg = qv_reader_num_row_groups(rd);
    for (int64_t g = 0; g < nrg; g += 2) {
        memcpy(copy, fx.bytes, fx.size);
        struct qv_segment_info si;
        assert_int_equal(qv_reader_segment_info(rd, g, qv_reader_column_node(rd, 2), 0, &si, NULL), 0);
        copy[si.offset + si.length / 2] ^= 0x5a;
        struct qv_source src;
        assert_int_equal(qv_source_from_memory(copy, fx.size, "bad.qvr", &src, NULL), 0);
        struct qv_reader *bad;
        assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &bad, NULL), 0);
        const struct {
            const int32_t *cols;
            int32_t n;
        } pr[] = {{p_s, 1}, {p_vs, 2}};
        for (int k = 0; k < 2; k++) {
            struct qv_scan_options o = {.columns = pr[k].cols, .n_columns = pr[k].n,
                                        .batch_rows = 700, .threads = QV_SCAN_SYNC};
            struct ArrowArrayStream st;
            assert_int_equal(qv_scan_open(bad, &o, fx.res, &st, NULL), 0);
            struct buf ref = {0};
            int64_t ref_batches;
            assert_int_equal(drain(&st, o.columns, o.n_columns, &ref, &ref_batches), EIO);
            st.release(&st);
            for (int t = 2; t <= 4; t += 2)
                for (int p = 1; p <= 2; p++) {
                    o.threads = t;
                    o.prefetch = p;
                    assert_int_equal(qv_scan_open(bad, &o, fx.res, &st, NULL), 0);
                    struct buf got = {0};
                    int64_t nb;
                    assert_int_equal(drain(&st, o.columns, o.n_columns, &got, &nb), EIO);
                    assert_int_equal(nb, ref_batches);
                    assert_same(&got, &ref, "corrupt");
                    char rgs[48];
                    snprintf(rgs, sizeof rgs, "row group %lld", (long long)g);
                    assert_non_null(strstr(st.get_last_error(&st), rgs));
                    st.release(&st);
                    pool_is_clean();
                    free(got.p);
                }
            free(ref.p);
        }
        qv_reader_close(bad);
    }
    free(copy);
}

/* A twin refused for memory: the task goes back to the first reader and the
 * scan goes on with one reader per column, output unchanged. */
static void test_twin_refused_falls_back(void **state) {
    (void)state;
    struct qv_scan_options ro = {.columns = p_s, .n_columns = 1, .batch_rows = rg_rows()};
    struct buf ref = {0};
    reference(rd, ro, &ref);
    for (int threads = 2; threads <= 4; threads += 2) {
        __atomic_store_n(&qv__scan_twin_open_fail, 1000, __ATOMIC_RELAXED);
        struct gated_run x;
        gated_run(&x, fx.bytes, threads, 0, 1);
        __atomic_store_n(&qv__scan_twin_open_fail, 0, __ATOMIC_RELAXED);
        assert_int_equal(x.c.rc, 0);
        assert_same(&x.c.out, &ref, "twin refused");
        int32_t opened, dropped;
        assert_int_equal(qv__scan_twin_counts(&x.st, &opened, &dropped), 0);
        assert_int_equal(opened, 0);
        assert_int_equal(dropped, 1); /* once: then the column has no twin */
        gated_run_end(&x);
    }
    /* Without the gate, every mix: refusals never change the output. */
    for (int pj = 0; pj < NPROJ; pj++) {
        struct qv_scan_options o = {.columns = projs[pj].cols, .n_columns = projs[pj].n,
                                    .batch_rows = 1000};
        struct buf want = {0};
        reference(rd, o, &want);
        for (int t = 1; t <= 4; t *= 2) {
            __atomic_store_n(&qv__scan_twin_open_fail, 1 + pj % 2, __ATOMIC_RELAXED);
            o.threads = t;
            scan_same(rd, &o, &want, "refusals");
        }
        __atomic_store_n(&qv__scan_twin_open_fail, 0, __ATOMIC_RELAXED);
        free(want.p);
    }
    free(ref.p);
}

/* Under a memory limit, a scan never fails for memory a twin holds: a
 * task that runs out while twins hold memory gives them up and runs again
 * (filtered scans with two or more workers, and narrow ones). Swept over
 * limits up to where the scans fit; each scan runs once with every twin
 * refused and three times with twins allowed (which task runs out depends
 * on timing). Found by a hostile test: 9-12 of 20 filtered scans at 4
 * workers, prefetch 3 failed with ENOMEM at a limit where all 20 fit with
 * twins refused, the pool's message naming the twin ('2nd reader') as
 * its second consumer. */
static void test_limit_fits_with_twins(void **state) {
    (void)state;
    static const int32_t *pcols[] = {p_s, p_tags};
    static const char *filters[] = {"id < 20000 AND d > 0.5", NULL};
    int64_t fit_both = 0;
    for (int fl = 0; fl < 2; fl++)
        for (int pj = 0; pj < 2; pj++) {
            struct qv_scan_options o = {.columns = pcols[pj], .n_columns = 1, .batch_rows = 1025,
                                        .filter = filters[fl]};
            struct buf ref = {0};
            reference(rd, o, &ref);
            for (int t = 2; t <= 4; t += 2)
                for (int p = 2; p <= 3; p++)
                    for (uint64_t lim = 96 << 10; lim <= 8u << 20; lim = lim * 5 / 4) {
                        o.threads = t;
                        o.prefetch = p;
                        int fits_alone = 0;
                        for (int run = 0; run < 4; run++) {
                            struct qv_pool *pool;
                            struct qv_pool_options po = {.name = "limited", .limit = lim};
                            assert_int_equal(qv_pool_create(&po, &pool, NULL), 0);
                            struct qv_reservation *res;
                            struct qv_reservation_options ro = {.name = "scan"};
                            assert_int_equal(qv_reservation_create(pool, &ro, &res, NULL), 0);
                            /* Run 0: every twin refused; runs 1-3: twins allowed. */
                            __atomic_store_n(&qv__scan_twin_open_fail, run ? 0 : 1 << 30,
                                             __ATOMIC_RELAXED);
                            struct ArrowArrayStream st;
                            int rc = qv_scan_open(rd, &o, res, &st, NULL);
                            struct buf got = {0};
                            int64_t nb = 0;
                            char msg[512] = "";
                            if (!rc) {
                                rc = drain(&st, o.columns, o.n_columns, &got, &nb);
                                if (rc) snprintf(msg, sizeof msg, "%s", st.get_last_error(&st));
                                st.release(&st);
                            }
                            __atomic_store_n(&qv__scan_twin_open_fail, 0, __ATOMIC_RELAXED);
                            char what[160];
                            snprintf(what, sizeof what, "filter %d, projection %d, threads %d, prefetch %d, limit %llu, run %d",
                                     fl, pj, t, p, (unsigned long long)lim, run);
                            if (rc && rc != ENOMEM) fail_msg("%s: rc %d", what, rc);
                            if (!rc) assert_same(&got, &ref, what);
                            else if (!is_prefix(&got, &ref)) fail_msg("%s: batches before the error differ", what);
                            /* Which run of a threaded scan runs out depends on
                             * timing, twins or not; but a run never fails while a
                             * twin holds memory (the pool's message lists the
                             * largest consumers at the failure). */
                            if (run && rc && strstr(msg, "2nd reader"))
                                fail_msg("%s: ENOMEM while a twin held memory: %s", what, msg);
                            if (run == 0) fits_alone = rc == 0;
                            else if (fits_alone && !rc) fit_both++;
                            free(got.p);
                            qv_reservation_destroy(res);
                            qv_pool_destroy(pool);
                        }
                    }
            free(ref.p);
        }
    assert_true(fit_both > 0); /* the sweep reached limits where the scans fit */
}

/* Allocation failures at every step (the n-th allocation of the pool from
 * the open on): each run either hands out exactly the synchronous output
 * (a twin refused, or a task of the batch a narrow scan starts beyond
 * prefetch put off, are not failures) or stops with ENOMEM and a message;
 * nothing leaks. */
static void test_alloc_failures(void **state) {
    (void)state;
    const struct qv_scan_options cases[] = {
        {.columns = p_vs, .n_columns = 2, .batch_rows = 3000, .threads = 2},
        {.columns = p_s, .n_columns = 1, .batch_rows = 1100, .threads = 1},
        {.columns = p_s, .n_columns = 1, .batch_rows = 1100, .threads = 2, .prefetch = 2},
        {.columns = p_tags, .n_columns = 1, .batch_rows = 2048, .threads = 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct qv_scan_options o = cases[k];
    struct buf ref = {0};
    reference(rd, o, &ref);
    int ok = 0, failed = 0;
    for (uint64_t n = 1; n < 100000 && !ok; n++) {
        qv_pool_inject_alloc_failure(fx.pool, n);
        struct ArrowArrayStream st;
        struct qv_error err;
        int rc = qv_scan_open(rd, &o, fx.res, &st, &err);
        if (rc) {
            assert_int_equal(rc, ENOMEM);
            failed++;
            pool_is_clean();
            continue;
        }
        struct buf got = {0};
        int64_t nb;
        rc = drain(&st, o.columns, o.n_columns, &got, &nb);
        if (rc) {
            assert_int_equal(rc, ENOMEM);
            assert_non_null(st.get_last_error(&st));
            /* What came before the failure is the synchronous output's start. */
            assert_true(is_prefix(&got, &ref));
            failed++;
        } else {
            assert_same(&got, &ref, "alloc failures");
            ok = 1;
        }
        st.release(&st);
        qv_pool_inject_alloc_failure(fx.pool, 0);
        pool_is_clean();
        free(got.p);
    }
    qv_pool_inject_alloc_failure(fx.pool, 0);
    assert_true(ok);
    assert_true(failed > 0);
    free(ref.p);
    }
}

/* Cancelled from another thread at random points, or released after some
 * batches (kept past the release): what arrived is the start of the
 * synchronous output; nothing leaks or hangs. */
static void test_cancel_and_release_mid_scan(void **state) {
    (void)state;
    for (int i = 0; i < 48; i++) {
        int pj = i % NPROJ;
        struct qv_scan_options o = {.columns = projs[pj].cols, .n_columns = projs[pj].n,
                                    .batch_rows = 700 + 300 * (i % 3), .threads = 1 << (i % 3),
                                    .prefetch = 1 + i % 2};
        struct buf ref = {0};
        reference(rd, o, &ref);
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        struct buf got = {0};
        if (i % 2) {
            struct canceller c = {.st = &st, .after_us = (long)(rnd() % 3000)};
            qv_thread th;
            assert_int_equal(qv_thread_create(&th, cancel_main, &c), 0);
            int64_t nb;
            int rc = drain(&st, o.columns, o.n_columns, &got, &nb);
            qv_thread_join(th);
            assert_true(rc == 0 || rc == ECANCELED);
            if (rc == ECANCELED) {
                struct ArrowArray b;
                assert_int_equal(st.get_next(&st, &b), ECANCELED);
            }
            st.release(&st);
        } else {
            struct ArrowArray kept[8];
            int nk = 0, stop = (int)(rnd() % 8);
            for (int k = 0; k < stop; k++) {
                struct ArrowArray b;
                assert_int_equal(st.get_next(&st, &b), 0);
                if (!b.release) break;
                put_batch(&got, o.columns, o.n_columns, &b);
                kept[nk++] = b;
            }
            if (i % 4 == 2) nap_us((long)(rnd() % 2000));
            st.release(&st); /* cancels and joins */
            for (int k = 0; k < nk; k++) {
                assert_true(kept[k].length > 0); /* still readable after release */
                kept[k].release(&kept[k]);
            }
        }
        assert_true(is_prefix(&got, &ref));
        pool_is_clean();
        free(got.p);
        free(ref.p);
    }
}

/* A caller's source (read_at, no mapping): the consumer leaves its reads to
 * the workers; twins read through it like first readers. */
static int mem_read(void *ctx, uint64_t off, void *buf, size_t len, struct qv_error *err) {
    (void)ctx;
    if (off + len > fx.size) return qv_error_set(err, EIO, "mem: read past the end");
    memcpy(buf, fx.bytes + off, len);
    return 0;
}

static void test_callers_source(void **state) {
    (void)state;
    struct qv_source src = {.name = "callers.qvr", .size = fx.size, .read_at = mem_read};
    struct qv_reader *r;
    assert_int_equal(qv_reader_open_source(&src, NULL, fx.res, &r, NULL), 0);
    for (int pj = 0; pj < NPROJ; pj++)
        for (int t = 1; t <= 4; t *= 2) {
            struct qv_scan_options o = {.columns = projs[pj].cols, .n_columns = projs[pj].n,
                                        .batch_rows = 1500, .threads = t, .prefetch = 1 + t % 3};
            struct buf ref = {0};
            reference(rd, o, &ref);
            scan_same(r, &o, &ref, "caller's source");
            free(ref.p);
        }
    qv_reader_close(r);
}

/* Takes through the file layer borrow their readers from the file's cache:
 * no twin is made for them, and the rows are right. */
static void test_borrowed_readers_have_no_twin(void **state) {
    (void)state;
    struct qv_file *f;
    struct qv_file_options fo = {.pool = fx.pool};
    assert_int_equal(qv_file_open(fx.path, &fo, &f, NULL), 0);
    static int64_t rows[ROWS / 2];
    int64_t n = 0;
    for (int64_t i = 0; i < ROWS; i += 2) rows[n++] = i;
    const char *cols[] = {"id"};
    struct qv_file_scan_options so = {.columns = cols, .n_columns = 1,
                                      .scan = {.batch_rows = 1000, .threads = 2}};
    struct ArrowArrayStream st;
    assert_int_equal(qv_file_take(f, rows, n, &so, &st, NULL), 0);
    int64_t got = 0;
    for (;;) {
        struct ArrowArray b;
        assert_int_equal(st.get_next(&st, &b), 0);
        if (!b.release) break;
        const int64_t *id = b.children[0]->buffers[1];
        for (int64_t k = 0; k < b.length; k++) assert_int_equal(id[k + b.children[0]->offset], rows[got + k]);
        got += b.length;
        b.release(&b);
    }
    assert_int_equal(got, n);
    int32_t opened, dropped;
    assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
    assert_int_equal(opened, 0);
    st.release(&st);
    qv_file_close(f);
}

/* Scans that are not narrow hold no second reader, whatever their columns
 * cost (even with the cheap-column threshold at 0, as here) and whatever
 * the prefetch: every column, a projection as wide as the threads, and a
 * narrow projection with a filter and one worker or prefetch 1 (a window
 * of one batch); the output equals the synchronous scan's. A narrow one,
 * for contrast, does, and so does a filtered one with two workers and
 * prefetch 2. */
static void test_not_narrow_has_no_twins(void **state) {
    (void)state;
    static const int32_t all[] = {0, 1, 2, 3, 4};
    const struct {
        struct qv_scan_options o;
        int narrow;
    } cases[] = {
        {{.columns = all, .n_columns = 5, .threads = 2, .prefetch = 2}, 0},
        {{.columns = all, .n_columns = 5, .threads = 4, .prefetch = 4}, 0},
        {{.columns = all, .n_columns = 5, .threads = 4, .prefetch = 1}, 0},
        {{.columns = p_ivs, .n_columns = 3, .threads = 2, .prefetch = 3}, 0},
        {{.columns = p_vs, .n_columns = 2, .threads = 1, .prefetch = 2}, 0},
        {{.columns = p_s, .n_columns = 1, .threads = 1, .prefetch = 2, .filter = "v >= 0"}, 0},
        {{.columns = p_s, .n_columns = 1, .threads = 4, .prefetch = 1, .filter = "id < 20000"}, 0},
        {{.columns = p_ivs, .n_columns = 3, .threads = 2, .prefetch = 2, .filter = "v >= 0"}, 0},
        {{.columns = p_s, .n_columns = 1, .threads = 2, .prefetch = 2, .filter = "v >= 0"}, 1},
        {{.columns = p_s, .n_columns = 1, .threads = 2, .prefetch = 2}, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qv_scan_options o = cases[k].o;
        o.batch_rows = 1100;
        struct buf ref = {0};
        reference(rd, o, &ref);
        struct ArrowArrayStream st;
        assert_int_equal(qv_scan_open(rd, &o, fx.res, &st, NULL), 0);
        assert_int_equal(qv__scan_testing_has_twins(&st), cases[k].narrow);
        struct buf got = {0};
        int64_t nb;
        assert_int_equal(drain(&st, o.columns, o.n_columns, &got, &nb), 0);
        assert_same(&got, &ref, "not narrow");
        int32_t opened, dropped;
        assert_int_equal(qv__scan_twin_counts(&st, &opened, &dropped), 0);
        if (!cases[k].narrow) assert_int_equal(opened, 0);
        assert_int_equal(dropped, 0);
        struct qv_scan_stats ss;
        assert_int_equal(qv_scan_get_stats(&st, &ss), 0);
        assert_true(ss.max_queued <= o.prefetch);
        st.release(&st);
        pool_is_clean();
        free(got.p);
        free(ref.p);
    }
    struct ArrowArrayStream none = {0};
    assert_int_equal(qv__scan_testing_has_twins(&none), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equals_sync_every_mix),
        cmocka_unit_test(test_filtered_equals_sync),
        cmocka_unit_test(test_twin_used_while_first_reader_waits),
        cmocka_unit_test(test_cheap_column_twin_in_narrow_scan),
        cmocka_unit_test(test_corrupt_segment_seen_by_twin),
        cmocka_unit_test(test_corrupt_every_row_group),
        cmocka_unit_test(test_twin_refused_falls_back),
        cmocka_unit_test(test_limit_fits_with_twins),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_cancel_and_release_mid_scan),
        cmocka_unit_test(test_callers_source),
        cmocka_unit_test(test_borrowed_readers_have_no_twin),
        cmocka_unit_test(test_not_narrow_has_no_twins),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
