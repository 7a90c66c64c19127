/*
 * bench/run scan [--quick] [--json FILE] [--gen] [--reps N] [--skip-workloads] [--skip-micro]
 *
 * The scan stream (qv_scan_open) on lineitem and on a table of lists.
 *
 * 1. Scans in this process, warm (file in the page cache):
 *    - one int64 column (l_partkey: frame of reference + bit-packing, and
 *      l_orderkey: run-end), synchronous: values/s, wall and per CPU-second;
 *    - all of lineitem synchronously, with 1 worker and with 2 workers
 *      (MB/s of Arrow output; the consumer only releases batches);
 *    - TPC-H Q6 as a filtered scan (the filter text below, projecting
 *      l_extendedprice and l_discount); its revenue and row count are
 *      checked against a brute-force pass over the unfiltered columns;
 *    - take of 100 random rows, every column, sync and threaded, warm:
 *      milliseconds per take (checked against the unfiltered pass too).
 * 2. The Vortex workloads, side by side: (a) flat read of lineitem,
 *    (b) read of a table with list<int64> and list<struct<k: int32,
 *    v: float64>> columns (~1 GB of Arrow at full size, ~100 MB with
 *    --quick), (c) ordered rewrite of lineitem (scan -> writer). Each at 1
 *    and 4 concurrent scans of the same file and 1, 2, 4, 8 decode workers,
 *    with prefetch = 1 against the baseline of one queued batch per worker
 *    (prefetch = workers). Every configuration runs in a fresh process (this
 *    binary re-executed with --child), which reports its peak RSS (VmHWM,
 *    which includes the file pages the reader maps), its peak anonymous RSS
 *    (RssAnon sampled every millisecond: the memory the scan allocates),
 *    its pool's peak_reserved, the throughput (Arrow MB/s over all
 *    concurrent scans) and the most batches ever queued. The consumer reads
 *    every byte of every batch (an xor over the buffers) for (a) and (b);
 *    (b') is (b) with a consumer slower than decoding (it holds each batch
 *    50 ms), so that queues fill and prefetch matters; for (c) the consumer
 *    is the writer. BENCH_SCAN_COLUMNS=a,b (names) makes (a) project those
 *    columns only.
 *
 * 3. `--sched FILE [REPS]` (not part of a normal run): the scheduler's
 *    measures alone, 1 against 2 workers, alternating, REPS (default 7)
 *    runs each: a full scan, single-column projections (l_comment, the
 *    slowest column; l_partkey, a fast one), both of them (bench/run
 *    compare's "int+str"), Q6 and the comparison's decimal
 *    filter (l_quantity < 24 AND l_discount BETWEEN 0.05 AND 0.07, projecting
 *    those two); min and median wall ms
 *    as "SCHED" lines, for a script that runs two builds side by side.
 *
 * Data: full runs use real TPC-H SF1 (data/bench/lineitem-tpch-sf1.qvr,
 * written by bench format or made here from data/tpch/lineitem.csv when
 * missing or older than this binary); --gen or --quick use the built-in
 * generator (SF1, or SF 0.1 with --quick). The list table is cached as
 * data/bench/scan-lists-*.qvr under the same rule.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_tpch.h"
#include "quiver/scan.h"

#define MB 1e6
#define Q6_FILTER                                                                              \
    "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN " \
    "0.05 AND 0.07 AND l_quantity < 24"

static struct qv_pool *pool;
static int reps = 3;

static uint64_t rs = 7;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void scan_die(const char *what, struct ArrowArrayStream *st, int rc) {
    const char *m = st && st->release && st->get_last_error ? st->get_last_error(st) : NULL;
    fprintf(stderr, "bench scan: %s: %s (%s)\n", what, m ? m : "", qv_errno_name(rc));
    exit(1);
}

static struct qv_reader *open_reader(const char *path, int skip_checksums, struct qv_reservation **rr) {
    struct qv_error err;
    struct qv_reservation_options ro = {.name = "bench reader"};
    if (qv_reservation_create(pool, &ro, rr, &err)) bt_die("reservation", &err);
    struct qv_reader_options o = {.skip_checksums = skip_checksums};
    struct qv_reader *rd;
    if (qv_reader_open(path, &o, *rr, &rd, &err)) bt_die("reader open", &err);
    return rd;
}

static int32_t column_index(const struct qv_reader *rd, const char *name) {
    const struct qv_field *root = &qv_reader_schema(rd)->root;
    int64_t i = qv_field_child_index(root, name);
    if (i < 0) {
        fprintf(stderr, "bench scan: no column '%s'\n", name);
        exit(1);
    }
    return (int32_t)i;
}

/* ================= data files ================= */

static char lineitem_path[4096], lists_path[4096], lineitem_desc[128];

static void make_lineitem_file(int quick, int force_gen) {
    struct qv_error err;
    struct qv_reservation *r;
    struct qv_reservation_options ro = {.name = "bench tables"};
    if (qv_reservation_create(pool, &ro, &r, &err)) bt_die("reservation", &err);
    if (!quick && !force_gen) {
        bt_path(lineitem_path, sizeof lineitem_path, "bench", "lineitem-tpch-sf1.qvr");
        snprintf(lineitem_desc, sizeof lineitem_desc, "real TPC-H SF1 (tpchgen-cli)");
        if (bt_cache_fresh(lineitem_path)) {
            struct qv_reservation *rr;
            struct qv_reader_options o = {0};
            struct qv_reader *rd;
            if (qv_reservation_create(pool, &ro, &rr, &err)) bt_die("reservation", &err);
            int ok = qv_reader_open(lineitem_path, &o, rr, &rd, &err) == 0;
            if (ok) qv_reader_close(rd);
            qv_reservation_destroy(rr);
            if (ok) {
                qv_reservation_destroy(r);
                return;
            }
        }
        const char *csv = bt_tpch_csv();
        struct bt_table t;
        if (csv && bt_table_load_csv(&t, csv, r) == 0) {
            if (strcmp(t.name, "tpch-sf1") != 0) { /* the CSV is another scale */
                char name[128];
                snprintf(name, sizeof name, "lineitem-%s.qvr", t.name);
                bt_path(lineitem_path, sizeof lineitem_path, "bench", name);
                snprintf(lineitem_desc, sizeof lineitem_desc, "real TPC-H (tpchgen-cli), %s", t.name);
            }
            double t0 = qv_bench_now_s();
            bt_table_write(&t, lineitem_path, NULL, pool);
            fprintf(stderr, "bench scan: wrote %s (%lld rows; CSV %.1f s, write %.1f s)\n", lineitem_path,
                    (long long)t.rows, t.load_s, qv_bench_now_s() - t0);
            bt_table_free(&t);
            qv_reservation_destroy(r);
            return;
        }
    }
    double sf = quick ? 0.1 : 1.0;
    char name[128];
    snprintf(name, sizeof name, "scan-lineitem-gen-sf%g.qvr", sf);
    bt_path(lineitem_path, sizeof lineitem_path, "bench", name);
    snprintf(lineitem_desc, sizeof lineitem_desc, "built-in generator SF %g", sf);
    if (!bt_cache_fresh(lineitem_path)) {
        struct bt_table t;
        bt_table_generate(&t, sf, r);
        bt_table_write(&t, lineitem_path, NULL, pool);
        bt_table_free(&t);
    }
    qv_reservation_destroy(r);
}

/* The list table: id int64, ts int64, items list<int64> (0..48 items,
 * values < 2^20), pairs list<struct<k: int32, v: float64>> (0..16 pairs;
 * k < 1000, v a price with two decimals). ~312 bytes of Arrow per row. */
static const struct qv_field lt_item[] = {{.name = "item", .type = QV_TYPE_INT64}};
static const struct qv_field lt_kv[] = {{.name = "k", .type = QV_TYPE_INT32},
                                        {.name = "v", .type = QV_TYPE_FLOAT64}};
static const struct qv_field lt_pair[] = {{.name = "item", .type = QV_TYPE_STRUCT, .n_children = 2, .children = lt_kv}};
static const struct qv_field lt_cols[] = {
    {.name = "id", .type = QV_TYPE_INT64},
    {.name = "ts", .type = QV_TYPE_INT64},
    {.name = "items", .type = QV_TYPE_LIST, .n_children = 1, .children = lt_item},
    {.name = "pairs", .type = QV_TYPE_LIST, .n_children = 1, .children = lt_pair},
};
static const struct qv_field lt_root = {.name = "lists", .type = QV_TYPE_STRUCT, .n_children = 4, .children = lt_cols};

static void make_lists_file(double scale) {
    char name[128];
    snprintf(name, sizeof name, "scan-lists-%g.qvr", scale);
    bt_path(lists_path, sizeof lists_path, "bench", name);
    if (bt_cache_fresh(lists_path)) return;
    double t0 = qv_bench_now_s();
    struct qv_error err;
    struct qv_reservation *r, *wr;
    struct qv_reservation_options ro = {.name = "bench lists"}, wo = {.name = "bench lists writer"};
    if (qv_reservation_create(pool, &ro, &r, &err) || qv_reservation_create(pool, &wo, &wr, &err))
        bt_die("reservation", &err);
    struct qv_schema *schema;
    if (qv_schema_create(&lt_root, r, &schema, &err)) bt_die("list schema", &err);
    struct qv_writer *w;
    if (qv_writer_open(lists_path, schema, NULL, wr, &w, &err)) bt_die("writer open", &err);
    struct qv_builder *b = qv_writer_builder(w);
    struct qv_appender *id = qv_builder_column(b, 0), *ts = qv_builder_column(b, 1);
    struct qv_appender *items = qv_builder_column(b, 2), *pairs = qv_builder_column(b, 3);
    struct qv_appender *item = qv_appender_child(items, 0), *pair = qv_appender_child(pairs, 0);
    struct qv_appender *pk = qv_appender_child(pair, 0), *pv = qv_appender_child(pair, 1);
    int64_t rows = (int64_t)(3300000 * scale);
    uint64_t save = rs;
    rs = 12345;
    int rc = 0;
    for (int64_t i = 0; i < rows && !rc; i++) {
        uint64_t x = rnd();
        rc |= qv_append_int64(id, i);
        rc |= qv_append_int64(ts, INT64_C(1600000000000) + i * 1000 + (int64_t)(x % 1000));
        rc |= qv_append_list_begin(items);
        int n = (int)((x >> 10) % 49);
        for (int k = 0; k < n; k++) rc |= qv_append_int64(item, (int64_t)(rnd() & 0xFFFFF));
        rc |= qv_append_list_end(items);
        rc |= qv_append_list_begin(pairs);
        n = (int)((x >> 20) % 17);
        for (int k = 0; k < n; k++) {
            uint64_t y = rnd();
            rc |= qv_append_struct_begin(pair);
            rc |= qv_append_int32(pk, (int32_t)(y % 1000));
            rc |= qv_append_float64(pv, (double)((y >> 10) % 100000) / 100.0);
            rc |= qv_append_struct_end(pair);
        }
        rc |= qv_append_list_end(pairs);
        if ((i & 1023) == 1023 && qv_writer_end_rows(w, &err)) bt_die("writer end_rows", &err);
    }
    rs = save;
    if (rc) bt_die("list table append", qv_builder_error(b));
    if (qv_writer_end_rows(w, &err) || qv_writer_finish(w, &err)) bt_die("writer finish", &err);
    qv_writer_close(w);
    qv_schema_destroy(schema);
    qv_reservation_destroy(wr);
    qv_reservation_destroy(r);
    fprintf(stderr, "bench scan: wrote %s (%lld rows, %.1f s)\n", lists_path, (long long)rows,
            qv_bench_now_s() - t0);
}

/* ================= one scan, drained ================= */

struct drain {
    int64_t rows, batches;
    uint64_t bytes, acc;
    double wall, cpu;
    struct qv_scan_stats stats;
    /* Q6 */
    int64_t revenue;
    /* take check */
    int64_t *col0;
};

enum consume { C_RELEASE, C_TOUCH, C_TOUCH_SLOW, C_Q6 };

/* The slow consumer holds each batch this long after reading it. */
#define SLOW_CONSUMER_MS 50

/* Runs one scan to the end on this thread's consumer side. */
static void drain_once(const struct qv_reader *rd, const struct qv_scan_options *o, enum consume how,
                       struct drain *d) {
    struct qv_error err;
    struct qv_reservation *sr;
    struct qv_reservation_options ro = {.name = "bench scan"};
    if (qv_reservation_create(pool, &ro, &sr, &err)) bt_die("reservation", &err);
    const struct qv_field *root = &qv_reader_schema(rd)->root;
    const struct qv_field *fields[64];
    int32_t n = o->columns ? o->n_columns : (int32_t)root->n_children;
    for (int32_t i = 0; i < n; i++) fields[i] = &root->children[o->columns ? o->columns[i] : i];
    memset(d, 0, sizeof *d);
    double c0 = bt_cpu_s(), t0 = qv_bench_now_s();
    struct ArrowArrayStream st;
    int rc = qv_scan_open(rd, o, sr, &st, &err);
    if (rc) bt_die("scan open", &err);
    for (;;) {
        struct ArrowArray a;
        rc = st.get_next(&st, &a);
        if (rc) scan_die("get_next", &st, rc);
        if (!a.release) break;
        d->rows += a.length;
        d->batches++;
        if (how == C_TOUCH || how == C_TOUCH_SLOW) d->bytes += bt_batch_bytes(fields, &a, bt_touch, &d->acc);
        else d->bytes += bt_batch_bytes(fields, &a, NULL, NULL);
        if (how == C_Q6) {
            /* children: l_extendedprice, l_discount (decimal128, low words) */
            const int64_t *p = a.children[0]->buffers[1], *q = a.children[1]->buffers[1];
            int64_t po = a.children[0]->offset, qo = a.children[1]->offset;
            for (int64_t i = 0; i < a.length; i++) d->revenue += p[2 * (po + i)] * q[2 * (qo + i)];
        }
        if (how == C_TOUCH_SLOW) {
            struct timespec ts = {0, SLOW_CONSUMER_MS * 1000000L};
            nanosleep(&ts, NULL);
        }
        a.release(&a);
    }
    qv_scan_get_stats(&st, &d->stats);
    st.release(&st);
    d->wall = qv_bench_now_s() - t0;
    d->cpu = bt_cpu_s() - c0;
    qv_reservation_destroy(sr);
}

/* Short scans are repeated until a sample lasts this long (0: once); wall
 * and CPU time are then per scan, averaged over the sample. */
static double min_sample_s = 0;

static void drain_scan(const struct qv_reader *rd, const struct qv_scan_options *o, enum consume how,
                       struct drain *d) {
    drain_once(rd, o, how, d);
    if (d->wall >= min_sample_s) return;
    int n = (int)(min_sample_s / (d->wall > 1e-6 ? d->wall : 1e-6)) + 1;
    if (n > 1000) n = 1000;
    double wall = d->wall, cpu = d->cpu;
    for (int i = 1; i < n; i++) {
        drain_once(rd, o, how, d);
        wall += d->wall;
        cpu += d->cpu;
    }
    d->wall = wall / n;
    d->cpu = cpu / n;
}

/* ================= 1. scans in this process ================= */

struct micro_result {
    double int64_gvs, int64_gvs_cpu, orderkey_gvs, orderkey_gvs_cpu;
    double full_sync, full_w1, full_w2, full_w1_cpu, full_w2_cpu, full_w1_best, full_w2_best;
    double cpus_before, cpus_after;
    double q6_ms, q6_sync_ms, full_ms_q6cols;
    double take_sync_ms, take_thr_ms, take_nock_ms;
    int q6_ok, take_ok;
};

static double column_scan(struct qv_bench *b, const struct qv_reader *rd, const char *col, double *per_cpu) {
    int32_t c = column_index(rd, col);
    struct qv_scan_options o = {.columns = &c, .n_columns = 1, .threads = QV_SCAN_SYNC};
    double s[16], sc[16];
    int64_t rows = 0;
    struct drain d;
    drain_scan(rd, &o, C_RELEASE, &d); /* warm */
    for (int r = 0; r < reps; r++) {
        drain_scan(rd, &o, C_RELEASE, &d);
        rows = d.rows;
        s[r] = d.rows / d.wall / 1e9;
        sc[r] = d.rows / d.cpu / 1e9;
    }
    char cs[64];
    snprintf(cs, sizeof cs, "column_%s", col);
    double m = qv_bench_record_samples(b, cs, "sync", "gvalues_per_s", s, reps, "Gv/s");
    *per_cpu = qv_bench_record_samples(b, cs, "sync", "gvalues_per_cpu_s", sc, reps, "Gv/s");
    printf("%-40s %10.3f G values/s (%.3f per CPU-s), %lld values\n", cs, m, *per_cpu, (long long)rows);
    return m;
}

static double full_scan(struct qv_bench *b, const struct qv_reader *rd, int threads, const char *variant,
                        double *per_cpu, double *best) {
    struct qv_scan_options o = {.threads = threads};
    double s[16], sc[16];
    struct drain d;
    for (int r = 0; r < reps; r++) {
        drain_scan(rd, &o, C_RELEASE, &d);
        s[r] = d.bytes / d.wall / MB;
        sc[r] = d.bytes / d.cpu / MB;
    }
    double m = qv_bench_record_samples(b, "full_lineitem", variant, "mb_per_s", s, reps, "MB/s");
    double mc = qv_bench_record_samples(b, "full_lineitem", variant, "mb_per_cpu_s", sc, reps, "MB/s");
    if (per_cpu) *per_cpu = mc;
    if (best) {
        *best = s[0];
        for (int r = 1; r < reps; r++)
            if (s[r] > *best) *best = s[r];
    }
    printf("%-40s %10.0f MB/s of Arrow (%.0f MB/CPU-s), %lld rows, %.0f MB, %lld batches\n", variant, m, mc,
           (long long)d.rows, d.bytes / MB, (long long)d.batches);
    return m;
}

/* Decimal128 / date32 / int64 values of one full column, as int64. */
static int64_t *load_column(const struct qv_reader *rd, const char *name) {
    int32_t c = column_index(rd, name);
    const struct qv_field *f = &qv_reader_schema(rd)->root.children[c];
    int64_t n = qv_reader_num_rows(rd);
    int64_t *v = malloc((size_t)n * 8), pos = 0;
    struct qv_error err;
    struct qv_reservation *sr;
    struct qv_reservation_options ro = {.name = "bench load"};
    if (qv_reservation_create(pool, &ro, &sr, &err)) bt_die("reservation", &err);
    struct qv_scan_options o = {.columns = &c, .n_columns = 1, .threads = QV_SCAN_SYNC};
    struct ArrowArrayStream st;
    if (qv_scan_open(rd, &o, sr, &st, &err)) bt_die("scan open", &err);
    for (;;) {
        struct ArrowArray a;
        int rc = st.get_next(&st, &a);
        if (rc) scan_die("get_next", &st, rc);
        if (!a.release) break;
        const struct ArrowArray *ch = a.children[0];
        for (int64_t i = 0; i < a.length; i++) {
            int64_t j = ch->offset + i;
            if (f->type == QV_TYPE_DECIMAL128) v[pos++] = ((const int64_t *)ch->buffers[1])[2 * j];
            else if (f->type == QV_TYPE_DATE32 || f->type == QV_TYPE_INT32) v[pos++] = ((const int32_t *)ch->buffers[1])[j];
            else v[pos++] = ((const int64_t *)ch->buffers[1])[j];
        }
        a.release(&a);
    }
    st.release(&st);
    qv_reservation_destroy(sr);
    return v;
}

static double q6(struct qv_bench *b, const struct qv_reader *rd, int threads, const char *variant,
                 int64_t want_rev, int64_t want_rows, int *ok) {
    int32_t cols[2] = {column_index(rd, "l_extendedprice"), column_index(rd, "l_discount")};
    struct qv_scan_options o = {.columns = cols, .n_columns = 2, .filter = Q6_FILTER, .threads = threads};
    double s[16];
    struct drain d;
    for (int r = 0; r < reps; r++) {
        drain_scan(rd, &o, C_Q6, &d);
        s[r] = d.wall * 1e3;
        if (d.revenue != want_rev || d.rows != want_rows) *ok = 0;
    }
    double m = qv_bench_record_samples(b, "q6", variant, "ms", s, reps, "ms");
    printf("%-40s %10.1f ms (min %.1f); %lld rows, revenue %lld.%04lld, row groups pruned %lld/%lld, "
           "filter rows decoded %lld%s\n",
           variant, m, qv_bench_min(s, reps), (long long)d.rows, (long long)(d.revenue / 10000),
           (long long)(d.revenue % 10000), (long long)d.stats.row_groups_pruned,
           (long long)d.stats.row_groups_total, (long long)d.stats.rows_decoded,
           (d.revenue == want_rev && d.rows == want_rows) ? "" : "  WRONG RESULT");
    return m;
}

static double take100(struct qv_bench *b, const struct qv_reader *rd, int threads, const char *variant,
                      const int64_t *rows, const int64_t *okey, const int64_t *pkey, int *ok) {
    struct qv_scan_options o = {.take = rows, .n_take = 100, .threads = threads};
    int32_t ck = column_index(rd, "l_orderkey"), cp = column_index(rd, "l_partkey");
    int n = reps < 5 ? 10 : 3 * reps;
    if (n > 16) n = 16;
    double s[16];
    struct qv_error err;
    struct qv_reservation *sr;
    struct qv_reservation_options ro = {.name = "bench take"};
    if (qv_reservation_create(pool, &ro, &sr, &err)) bt_die("reservation", &err);
    for (int r = -1; r < n; r++) { /* r = -1: warm-up */
        double t0 = qv_bench_now_s();
        struct ArrowArrayStream st;
        int rc = qv_scan_open(rd, &o, sr, &st, &err);
        if (rc) bt_die("scan open (take)", &err);
        int64_t got = 0;
        for (;;) {
            struct ArrowArray a;
            rc = st.get_next(&st, &a);
            if (rc) scan_die("get_next (take)", &st, rc);
            if (!a.release) break;
            const int64_t *k = a.children[ck]->buffers[1], *p = a.children[cp]->buffers[1];
            for (int64_t i = 0; i < a.length; i++, got++)
                if (got >= 100 || k[a.children[ck]->offset + i] != okey[rows[got]] ||
                    p[a.children[cp]->offset + i] != pkey[rows[got]])
                    *ok = 0;
            a.release(&a);
        }
        st.release(&st);
        if (got != 100) *ok = 0;
        if (r >= 0) s[r] = (qv_bench_now_s() - t0) * 1e3;
    }
    qv_reservation_destroy(sr);
    double m = qv_bench_record_samples(b, "take_100_rows", variant, "ms", s, n, "ms");
    double mx = s[0];
    for (int r = 1; r < n; r++)
        if (s[r] > mx) mx = s[r];
    printf("%-40s %10.2f ms (min %.2f, max %.2f over %d warm takes)%s\n", variant, m, qv_bench_min(s, n), mx, n,
           *ok ? "" : "  WRONG ROWS");
    return m;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* How many CPUs this process can get right now: two threads spin for
 * ~0.3 s; process CPU time over wall time. On a shared machine this is
 * what bounds any 2-worker speedup. */
static void *spin_thread(void *arg) {
    double until = *(const double *)arg;
    volatile uint64_t x = 0;
    while (qv_bench_now_s() < until)
        for (int i = 0; i < 100000; i++) x += (uint64_t)i;
    return NULL;
}

static double cpus_available(void) {
    double t0 = qv_bench_now_s(), c0 = bt_cpu_s(), until = t0 + 0.3;
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, spin_thread, &until);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    return (bt_cpu_s() - c0) / (qv_bench_now_s() - t0);
}

static struct micro_result bench_micro(struct qv_bench *b) {
    struct micro_result mr = {0};
    min_sample_s = 0.2;
    struct qv_reservation *rr;
    struct qv_reader *rd = open_reader(lineitem_path, 0, &rr);
    int64_t nrows = qv_reader_num_rows(rd);
    printf("\n== Scans in this process, warm: %s, %lld rows, %lld row groups (median of %d) ==\n",
           lineitem_desc, (long long)nrows, (long long)qv_reader_num_row_groups(rd), reps);
    mr.int64_gvs = column_scan(b, rd, "l_partkey", &mr.int64_gvs_cpu);
    mr.orderkey_gvs = column_scan(b, rd, "l_orderkey", &mr.orderkey_gvs_cpu);
    mr.cpus_before = cpus_available();
    mr.full_sync = full_scan(b, rd, QV_SCAN_SYNC, "full scan, synchronous", NULL, NULL);
    mr.full_w1 = full_scan(b, rd, 1, "full scan, 1 worker", &mr.full_w1_cpu, &mr.full_w1_best);
    mr.full_w2 = full_scan(b, rd, 2, "full scan, 2 workers", &mr.full_w2_cpu, &mr.full_w2_best);
    mr.cpus_after = cpus_available();
    printf("%-40s %10.2fx medians, %.2fx best runs (per CPU-s: 1 worker %.0f, 2 workers %.0f MB/CPU-s)\n",
           "2 workers / 1 worker", mr.full_w2 / mr.full_w1, mr.full_w2_best / mr.full_w1_best, mr.full_w1_cpu,
           mr.full_w2_cpu);
    printf("%-40s %10.2f before, %.2f after (two spinning threads: CPU-s per wall-s this process got)\n",
           "CPUs available to this process", mr.cpus_before, mr.cpus_after);
    qv_bench_record(b, "machine", "two_spinning_threads", "cpus_available", "value",
                    (mr.cpus_before + mr.cpus_after) / 2, "CPUs");
    qv_bench_record(b, "full_lineitem", "2w_over_1w", "speedup", "value", mr.full_w2 / mr.full_w1, "x");
    qv_bench_record(b, "full_lineitem", "2w_over_1w", "speedup_best_runs", "value",
                    mr.full_w2_best / mr.full_w1_best, "x");

    /* reference for Q6 and take: brute force over whole columns */
    int64_t *ship = load_column(rd, "l_shipdate"), *disc = load_column(rd, "l_discount");
    int64_t *qty = load_column(rd, "l_quantity"), *price = load_column(rd, "l_extendedprice");
    int64_t *okey = load_column(rd, "l_orderkey"), *pkey = load_column(rd, "l_partkey");
    int64_t want_rev = 0, want_rows = 0;
    for (int64_t i = 0; i < nrows; i++)
        if (ship[i] >= 8766 && ship[i] < 9131 && disc[i] >= 5 && disc[i] <= 7 && qty[i] < 2400) {
            want_rev += price[i] * disc[i];
            want_rows++;
        }
    mr.q6_ok = 1;
    mr.q6_ms = q6(b, rd, 0, "Q6 filtered scan, default workers", want_rev, want_rows, &mr.q6_ok);
    mr.q6_sync_ms = q6(b, rd, QV_SCAN_SYNC, "Q6 filtered scan, synchronous", want_rev, want_rows, &mr.q6_ok);
    {
        int32_t cols[4] = {column_index(rd, "l_extendedprice"), column_index(rd, "l_discount"),
                           column_index(rd, "l_shipdate"), column_index(rd, "l_quantity")};
        struct qv_scan_options o = {.columns = cols, .n_columns = 4, .threads = QV_SCAN_SYNC};
        double s[16];
        struct drain d;
        for (int r = 0; r < reps; r++) {
            drain_scan(rd, &o, C_RELEASE, &d);
            s[r] = d.wall * 1e3;
        }
        mr.full_ms_q6cols = qv_bench_record_samples(b, "q6", "unfiltered_4_columns_sync", "ms", s, reps, "ms");
        printf("%-40s %10.1f ms (the 4 columns Q6 reads, no filter, synchronous)\n", "  for comparison",
               mr.full_ms_q6cols);
    }
    printf("%-40s %10s expected %lld rows, revenue %lld.%04lld: %s\n", "Q6 check", "",
           (long long)want_rows, (long long)(want_rev / 10000), (long long)(want_rev % 10000),
           mr.q6_ok ? "ok" : "MISMATCH");

    int64_t take[100];
    uint64_t save = rs;
    rs = 99;
    for (int i = 0; i < 100;) {
        take[i] = (int64_t)(rnd() % (uint64_t)nrows);
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= take[j] == take[i];
        if (!dup) i++;
    }
    rs = save;
    qsort(take, 100, sizeof take[0], cmp_i64);
    mr.take_ok = 1;
    mr.take_sync_ms = take100(b, rd, QV_SCAN_SYNC, "take 100 rows, synchronous", take, okey, pkey, &mr.take_ok);
    mr.take_thr_ms = take100(b, rd, 0, "take 100 rows, default workers", take, okey, pkey, &mr.take_ok);
    struct qv_reservation *rr2;
    struct qv_reader *rd2 = open_reader(lineitem_path, 1, &rr2);
    mr.take_nock_ms = take100(b, rd2, QV_SCAN_SYNC, "take 100 rows, sync, checksums off", take, okey, pkey,
                              &mr.take_ok);
    qv_reader_close(rd2);
    qv_reservation_destroy(rr2);
    free(ship);
    free(disc);
    free(qty);
    free(price);
    free(okey);
    free(pkey);
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
    min_sample_s = 0;
    return mr;
}

/* ================= 2. the Vortex workloads, one process per configuration ================= */

enum wl { WL_FLAT, WL_LIST, WL_LIST_SLOW, WL_REWRITE, WL_IDLE, WL_COUNT };
static const char *const wl_names[WL_COUNT] = {"flat", "list", "list-slow", "rewrite", "idle"};
static const char *const wl_titles[WL_COUNT] = {
    "(a) flat read of lineitem", "(b) list-layout read",
    "(b') list-layout read, slow consumer (holds each batch 50 ms after reading it)",
    "(c) ordered rewrite of lineitem (scan -> writer)", "idle"};

struct child_arg {
    const struct qv_reader *rd;
    enum wl wl;
    int workers, prefetch, index;
    const char *outdir;
    struct drain d;
};

static void *child_scan(void *p) {
    struct child_arg *ca = p;
    struct qv_scan_options o = {.threads = ca->workers, .prefetch = ca->prefetch};
    /* BENCH_SCAN_COLUMNS=a,b,...: the flat read projects these columns only
     * (the memory of narrow projections). */
    const char *names = getenv("BENCH_SCAN_COLUMNS");
    int32_t cols[64];
    if (names && *names && ca->wl == WL_FLAT) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", names);
        int32_t n = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save))
            cols[n++] = column_index(ca->rd, t);
        o.columns = cols;
        o.n_columns = n;
    }
    if (ca->wl != WL_REWRITE) {
        drain_scan(ca->rd, &o, ca->wl == WL_LIST_SLOW ? C_TOUCH_SLOW : C_TOUCH, &ca->d);
        return NULL;
    }
    struct qv_error err;
    struct qv_reservation *sr, *wr;
    struct qv_reservation_options ro = {.name = "bench scan"}, wo = {.name = "bench rewrite writer"};
    if (qv_reservation_create(pool, &ro, &sr, &err) || qv_reservation_create(pool, &wo, &wr, &err))
        bt_die("reservation", &err);
    char path[4096];
    snprintf(path, sizeof path, "%.4000s/rewrite-%d-%d.qvr", ca->outdir, (int)getpid(), ca->index);
    struct qv_writer *w;
    if (qv_writer_open(path, qv_reader_schema(ca->rd), NULL, wr, &w, &err)) bt_die("writer open", &err);
    const struct qv_field *root = &qv_reader_schema(ca->rd)->root;
    const struct qv_field *fields[64];
    for (int64_t i = 0; i < root->n_children; i++) fields[i] = &root->children[i];
    struct ArrowArrayStream st;
    if (qv_scan_open(ca->rd, &o, sr, &st, &err)) bt_die("scan open", &err);
    for (;;) {
        struct ArrowArray a;
        int rc = st.get_next(&st, &a);
        if (rc) scan_die("get_next", &st, rc);
        if (!a.release) break;
        ca->d.rows += a.length;
        ca->d.batches++;
        ca->d.bytes += bt_batch_bytes(fields, &a, NULL, NULL);
        if (qv_writer_write(w, &a, &err)) bt_die("writer write", &err);
        a.release(&a);
    }
    qv_scan_get_stats(&st, &ca->d.stats);
    st.release(&st);
    if (qv_writer_finish(w, &err)) bt_die("writer finish", &err);
    if (qv_writer_rows_written(w) != ca->d.rows) bt_die("rewrite: row count differs", NULL);
    qv_writer_close(w);
    unlink(path);
    qv_reservation_destroy(sr);
    qv_reservation_destroy(wr);
    return NULL;
}

/* VmHWM counts file pages mapped by the reader (it decodes mapped files in
 * place) as well as anonymous memory, and /proc has no peak of the latter,
 * so a thread samples RssAnon and RssFile every millisecond. */
struct rss_sampler {
    volatile int stop;
    uint64_t anon_peak, file_peak;
};

static void read_rss(uint64_t *anon, uint64_t *file) {
    FILE *f = fopen("/proc/self/status", "r");
    *anon = *file = 0;
    if (!f) return;
    char line[256];
    unsigned long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "RssAnon: %lu kB", &kb) == 1) *anon = (uint64_t)kb * 1024;
        else if (sscanf(line, "RssFile: %lu kB", &kb) == 1) *file = (uint64_t)kb * 1024;
    }
    fclose(f);
}

static void *sampler_main(void *arg) {
    struct rss_sampler *rs_ = arg;
    while (!rs_->stop) {
        uint64_t a, f;
        read_rss(&a, &f);
        if (a > rs_->anon_peak) rs_->anon_peak = a;
        if (f > rs_->file_peak) rs_->file_peak = f;
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int child_main(int argc, char **argv) {
    /* --child WL FILE WORKERS PREFETCH CONC OUTDIR */
    if (argc < 6) {
        fprintf(stderr, "bench scan --child: bad arguments\n");
        return 2;
    }
    enum wl wl = WL_COUNT;
    for (int i = 0; i < WL_COUNT; i++)
        if (!strcmp(argv[0], wl_names[i])) wl = (enum wl)i;
    const char *file = argv[1];
    int workers = atoi(argv[2]), prefetch = atoi(argv[3]), conc = atoi(argv[4]);
    const char *outdir = argv[5];
    if (wl == WL_COUNT || conc < 1 || conc > 64) return 2;
    struct qv_error err;
    static struct rss_sampler sampler;
    pthread_t sampler_th;
    if (pthread_create(&sampler_th, NULL, sampler_main, &sampler)) bt_die("pthread_create", NULL);
    struct qv_pool_options po = {.name = "bench-scan-child"};
    if (qv_pool_create(&po, &pool, &err)) bt_die("pool", &err);
    struct qv_reservation *rr;
    struct qv_reader *rd = open_reader(file, 0, &rr);
    struct child_arg ca[64];
    pthread_t th[64];
    double c0 = bt_cpu_s(), t0 = qv_bench_now_s();
    if (wl != WL_IDLE) {
        for (int i = 0; i < conc; i++) {
            ca[i] = (struct child_arg){.rd = rd, .wl = wl, .workers = workers, .prefetch = prefetch,
                                       .index = i, .outdir = outdir};
            if (pthread_create(&th[i], NULL, child_scan, &ca[i])) bt_die("pthread_create", NULL);
        }
        for (int i = 0; i < conc; i++) pthread_join(th[i], NULL);
    }
    double wall = qv_bench_now_s() - t0, cpu = bt_cpu_s() - c0;
    int64_t rows = 0, maxq = 0;
    uint64_t bytes = 0;
    for (int i = 0; wl != WL_IDLE && i < conc; i++) {
        rows += ca[i].d.rows;
        bytes += ca[i].d.bytes;
        if (ca[i].d.stats.max_queued > maxq) maxq = ca[i].d.stats.max_queued;
    }
    sampler.stop = 1;
    pthread_join(sampler_th, NULL);
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
    struct qv_pool_stats ps;
    qv_pool_get_stats(pool, &ps);
    printf("RESULT secs=%.6f cpu=%.6f rows=%lld bytes=%llu hwm=%llu pool_peak=%llu maxq=%lld anon=%llu file=%llu\n",
           wall, cpu, (long long)rows, (unsigned long long)bytes, (unsigned long long)qv_bench_peak_rss(),
           (unsigned long long)ps.peak_reserved, (long long)maxq, (unsigned long long)sampler.anon_peak,
           (unsigned long long)sampler.file_peak);
    fflush(stdout);
    qv_pool_destroy(pool);
    return 0;
}

struct child_result {
    double secs, cpu;
    long long rows, maxq;
    unsigned long long bytes, hwm, pool_peak, anon, file;
};

static void run_child(enum wl wl, const char *file, int workers, int prefetch, int conc, const char *outdir,
                      struct child_result *out) {
    char a_w[16], a_p[16], a_c[16];
    snprintf(a_w, sizeof a_w, "%d", workers);
    snprintf(a_p, sizeof a_p, "%d", prefetch);
    snprintf(a_c, sizeof a_c, "%d", conc);
    char *args[] = {"bench_scan", "--child", (char *)wl_names[wl], (char *)file, a_w, a_p, a_c,
                    (char *)outdir, NULL};
    char buf[8192];
    int status = qv_bench_run_self(args, 0, buf, sizeof buf);
    const char *line = strstr(buf, "RESULT ");
    if (status != 0 || !line ||
        sscanf(line, "RESULT secs=%lf cpu=%lf rows=%lld bytes=%llu hwm=%llu pool_peak=%llu maxq=%lld anon=%llu file=%llu",
               &out->secs, &out->cpu, &out->rows, &out->bytes, &out->hwm, &out->pool_peak, &out->maxq, &out->anon,
               &out->file) != 9) {
        fprintf(stderr, "bench scan: child %s workers=%d prefetch=%d conc=%d failed (status %d): %s\n",
                wl_names[wl], workers, prefetch, conc, status, buf);
        exit(1);
    }
}

struct cfg_result {
    double mbs, hwm, rss, file, pool, maxq; /* medians (maxq: max); rss = peak anonymous RSS */
    int valid;
};

#define MAXW 4
struct wl_result {
    int nconc, nworkers;
    int conc[2], workers[MAXW];
    struct cfg_result r[2][MAXW][2]; /* [conc][workers][0: prefetch 1, 1: prefetch = workers] */
    double idle_rss, idle_anon;
    double arrow_mb;
};

static void bench_workload(struct qv_bench *b, enum wl wl, const char *file, int quick, struct wl_result *wr) {
    char outdir[4096];
    bt_path(outdir, sizeof outdir, "bench", "rewrite-tmp");
    bt_mkdirs(outdir);
    memset(wr, 0, sizeof *wr);
    wr->nconc = 2;
    wr->conc[0] = 1;
    wr->conc[1] = 4;
    static const int wfull[] = {1, 2, 4, 8}, wquick[] = {1, 4};
    wr->nworkers = quick ? 2 : 4;
    for (int i = 0; i < wr->nworkers; i++) wr->workers[i] = quick ? wquick[i] : wfull[i];
    struct child_result cr;
    run_child(WL_IDLE, file, 1, 1, 1, outdir, &cr);
    wr->idle_rss = cr.hwm / MB;
    wr->idle_anon = cr.anon / MB;
    printf("\n== %s: %s ==\n", wl_titles[wl], file);
    printf("fresh process per configuration, median of %d. MB/s = Arrow MB/s summed over the concurrent scans;\n"
           "HWM = VmHWM (includes the file pages the reader maps); anon = peak anonymous RSS (sampled every ms);\n"
           "pool = pool peak_reserved; q = most batches ever queued. Idle process with the reader open: HWM %.1f MB,"
           " anon %.1f MB\n", reps, wr->idle_rss, wr->idle_anon);
    printf("%4s %7s | %7s %7s %7s %7s %3s | %7s %7s %7s %7s %3s | %9s %9s\n", "", "", "----", "prefetch", "= 1",
           "----", "", "----", "prefetch", "= work", "ers -", "", "p1/pW", "p1/pW");
    printf("%4s %7s | %7s %7s %7s %7s %3s | %7s %7s %7s %7s %3s | %9s %9s\n", "conc", "workers", "MB/s", "HWM MB",
           "anon MB", "pool MB", "q", "MB/s", "HWM MB", "anon MB", "pool MB", "q", "anon", "pool");
    char cs[96];
    for (int ci = 0; ci < wr->nconc; ci++) {
        for (int wi = 0; wi < wr->nworkers; wi++) {
            int w = wr->workers[wi];
            for (int pv = 0; pv < 2; pv++) {
                int prefetch = pv == 0 ? 1 : w;
                struct cfg_result *res = &wr->r[ci][wi][pv];
                if (pv == 1 && w == 1) {
                    *res = wr->r[ci][wi][0];
                    continue;
                }
                double mbs[16], hwm[16], rss[16], fl[16], pp[16];
                double maxq = 0;
                for (int r = 0; r < reps; r++) {
                    run_child(wl, file, w, prefetch, wr->conc[ci], outdir, &cr);
                    mbs[r] = cr.bytes / cr.secs / MB;
                    hwm[r] = cr.hwm / MB;
                    rss[r] = cr.anon / MB;
                    fl[r] = cr.file / MB;
                    pp[r] = cr.pool_peak / MB;
                    if (cr.maxq > maxq) maxq = cr.maxq;
                    wr->arrow_mb = cr.bytes / MB / wr->conc[ci];
                }
                snprintf(cs, sizeof cs, "%s/c%d/w%d", wl_names[wl], wr->conc[ci], w);
                const char *variant = pv == 0 ? "prefetch1" : "prefetch_workers";
                res->mbs = qv_bench_record_samples(b, cs, variant, "mb_per_s", mbs, reps, "MB/s");
                res->hwm = qv_bench_record_samples(b, cs, variant, "vmhwm_mb", hwm, reps, "MB");
                res->rss = qv_bench_record_samples(b, cs, variant, "peak_anon_rss_mb", rss, reps, "MB");
                res->file = qv_bench_record_samples(b, cs, variant, "peak_file_rss_mb", fl, reps, "MB");
                res->pool = qv_bench_record_samples(b, cs, variant, "pool_peak_mb", pp, reps, "MB");
                res->maxq = maxq;
                res->valid = 1;
                qv_bench_record(b, cs, variant, "max_queued", "max", maxq, "batches");
            }
            struct cfg_result *p1 = &wr->r[ci][wi][0], *pw = &wr->r[ci][wi][1];
            printf("%4d %7d | %7.0f %7.1f %7.1f %7.1f %3.0f | %7.0f %7.1f %7.1f %7.1f %3.0f | %9.2f %9.2f\n",
                   wr->conc[ci], w, p1->mbs, p1->hwm, p1->rss, p1->pool, p1->maxq, pw->mbs, pw->hwm, pw->rss, pw->pool,
                   pw->maxq, p1->rss / pw->rss, p1->pool / pw->pool);
        }
    }
    for (int ci = 0; ci < wr->nconc; ci++) {
        double rmin = 1e30, rmax = 0, pmin = 1e30, pmax = 0;
        for (int wi = 0; wi < wr->nworkers; wi++) {
            struct cfg_result *p1 = &wr->r[ci][wi][0];
            if (p1->rss < rmin) rmin = p1->rss;
            if (p1->rss > rmax) rmax = p1->rss;
            if (p1->pool < pmin) pmin = p1->pool;
            if (p1->pool > pmax) pmax = p1->pool;
        }
        printf("conc %d, prefetch=1, workers %d..%d: anon RSS max/min %.2f, pool max/min %.2f\n", wr->conc[ci],
               wr->workers[0], wr->workers[wr->nworkers - 1], rmax / rmin, pmax / pmin);
        snprintf(cs, sizeof cs, "%s/c%d", wl_names[wl], wr->conc[ci]);
        qv_bench_record(b, cs, "prefetch1", "anon_rss_max_over_min_workers", "value", rmax / rmin, "x");
        qv_bench_record(b, cs, "prefetch1", "pool_max_over_min_workers", "value", pmax / pmin, "x");
    }
    printf("(%.0f MB of Arrow per scan)\n", wr->arrow_mb);
}

/* ================= main ================= */

static const char *verdict(int ok) { return ok ? "PASS" : "MISS"; }

/* ================= 3. the scheduler's measures (--sched) ================= */

static int sched_main(int argc, char **argv) {
    /* --sched FILE [REPS] */
    if (argc < 1) {
        fprintf(stderr, "bench scan --sched: FILE [REPS]\n");
        return 2;
    }
    int n = argc > 1 ? atoi(argv[1]) : 7;
    if (n < 1 || n > 16) n = 7;
    cpu_set_t cs;
    int cpus = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : -1;
    printf("SCHED cpus_in_affinity=%d\n", cpus);
    struct qv_error err;
    struct qv_pool_options po = {.name = "bench-scan-sched"};
    if (qv_pool_create(&po, &pool, &err)) bt_die("pool", &err);
    struct qv_reservation *rr;
    struct qv_reader *rd = open_reader(argv[0], 0, &rr);
    int32_t comment = column_index(rd, "l_comment"), partkey = column_index(rd, "l_partkey");
    int32_t q6cols[2] = {column_index(rd, "l_extendedprice"), column_index(rd, "l_discount")};
    int32_t deccols[2] = {column_index(rd, "l_quantity"), column_index(rd, "l_discount")};
    /* bench/run compare's "int+str" projection. */
    int32_t intstr[2] = {partkey, comment};
    struct {
        const char *name;
        struct qv_scan_options o;
        enum consume how;
    } m[] = {
        {"full", {0}, C_RELEASE},
        {"col_l_comment", {.columns = &comment, .n_columns = 1}, C_RELEASE},
        {"col_l_partkey", {.columns = &partkey, .n_columns = 1}, C_RELEASE},
        {"int_str", {.columns = intstr, .n_columns = 2}, C_RELEASE},
        {"q6", {.columns = q6cols, .n_columns = 2, .filter = Q6_FILTER}, C_Q6},
        /* bench/run compare's "decimal filter": filters on decimals alone. */
        {"dec_filter",
         {.columns = deccols, .n_columns = 2,
          .filter = "l_quantity < 24 AND l_discount BETWEEN 0.05 AND 0.07"},
         C_RELEASE},
        /* The same rows through conjuncts that decode their columns (an
         * OR is not compared on encoded values): the projection gathers
         * them from the filter's values (docs/scan.md, "Reusing"). */
        {"dec_filter_or",
         {.columns = deccols, .n_columns = 2,
          .filter = "(l_quantity < 24 OR l_quantity IS NULL) AND "
                    "(l_discount BETWEEN 0.05 AND 0.07 OR l_discount IS NULL)"},
         C_RELEASE},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        double ms[2][16];
        struct drain d;
        for (int w = 1; w <= 2; w++) { /* warm-up */
            m[i].o.threads = w;
            drain_once(rd, &m[i].o, m[i].how, &d);
        }
        for (int r = 0; r < n; r++)
            for (int w = 1; w <= 2; w++) {
                m[i].o.threads = w;
                drain_once(rd, &m[i].o, m[i].how, &d);
                ms[w - 1][r] = d.wall * 1e3;
            }
        for (int w = 1; w <= 2; w++)
            printf("SCHED %-14s w%d min_ms=%8.2f med_ms=%8.2f rows=%lld\n", m[i].name, w,
                   qv_bench_min(ms[w - 1], n), qv_bench_median(ms[w - 1], n), (long long)d.rows);
        printf("SCHED %-14s w2/w1 speedup min %.2fx med %.2fx\n", m[i].name,
               qv_bench_min(ms[0], n) / qv_bench_min(ms[1], n),
               qv_bench_median(ms[0], n) / qv_bench_median(ms[1], n));
        fflush(stdout);
    }
    qv_reader_close(rd);
    qv_reservation_destroy(rr);
    qv_pool_destroy(pool);
    return 0;
}

int main(int argc, char **argv) {
    bt_prog = "bench scan";
    if (argc > 1 && !strcmp(argv[1], "--child")) return child_main(argc - 2, argv + 2);
    if (argc > 1 && !strcmp(argv[1], "--sched")) return sched_main(argc - 2, argv + 2);
    struct qv_bench *b = qv_bench_open("scan", argc, argv);
    int quick = qv_bench_quick(b), force_gen = 0, skip_wl = 0, skip_micro = 0;
    for (int i = 0; i < qv_bench_argc(b); i++) {
        const char *a = qv_bench_argv(b)[i];
        if (!strcmp(a, "--gen")) force_gen = 1;
        else if (!strcmp(a, "--reps") && i + 1 < qv_bench_argc(b)) reps = atoi(qv_bench_argv(b)[++i]);
        else if (!strcmp(a, "--skip-workloads")) skip_wl = 1;
        else if (!strcmp(a, "--skip-micro")) skip_micro = 1;
        else {
            fprintf(stderr, "usage: bench/run scan [--quick] [--json FILE] [--gen] [--reps N] "
                            "[--skip-workloads] [--skip-micro]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 16) reps = 16;
    struct qv_error err;
    struct qv_pool_options po = {.name = "bench-scan"};
    if (qv_pool_create(&po, &pool, &err)) bt_die("pool", &err);
    double t0 = qv_bench_now_s();
    make_lineitem_file(quick, force_gen);
    make_lists_file(quick ? 0.1 : 1.0);
    printf("bench scan: %s, %d repeats, %d CPUs online; lineitem: %s (%s, %.1f MB); lists: %s (%.1f MB); "
           "data ready in %.1f s\n", quick ? "quick" : "full", reps, qv_cpu_count(), lineitem_desc, lineitem_path,
           bt_file_size(lineitem_path) / MB, lists_path, bt_file_size(lists_path) / MB, qv_bench_now_s() - t0);

    struct micro_result mr = {0};
    if (!skip_micro) mr = bench_micro(b);
    static struct wl_result wr[WL_IDLE];
    static const enum wl order[] = {WL_FLAT, WL_LIST, WL_LIST_SLOW, WL_REWRITE};
    if (!skip_wl)
        for (int k = 0; k < 4; k++)
            bench_workload(b, order[k], order[k] == WL_LIST || order[k] == WL_LIST_SLOW ? lists_path : lineitem_path,
                           quick, &wr[order[k]]);

    printf("\n== Targets ==\n");
    if (!skip_wl) {
        for (int k = 0; k < 4; k++) {
            struct wl_result *w = &wr[order[k]];
            for (int ci = 0; ci < w->nconc; ci++) {
                double rmin = 1e30, rmax = 0, pmin = 1e30, pmax = 0, hmin = 1e30, hmax = 0;
                for (int wi = 0; wi < w->nworkers; wi++) {
                    struct cfg_result *p1 = &w->r[ci][wi][0];
                    if (p1->hwm < hmin) hmin = p1->hwm;
                    if (p1->hwm > hmax) hmax = p1->hwm;
                    if (p1->rss < rmin) rmin = p1->rss;
                    if (p1->rss > rmax) rmax = p1->rss;
                    if (p1->pool < pmin) pmin = p1->pool;
                    if (p1->pool > pmax) pmax = p1->pool;
                }
                char what[128];
                snprintf(what, sizeof what, "%s c%d: prefetch=1 peak, %d->%d workers", wl_names[order[k]],
                         w->conc[ci], w->workers[0], w->workers[w->nworkers - 1]);
                printf("%-44s anon %+6.1f%% %s, pool %+6.1f%% %s, HWM %+6.1f%% %s  (goal: within 10%%)\n", what,
                       (rmax / rmin - 1) * 100, verdict(rmax / rmin <= 1.10), (pmax / pmin - 1) * 100,
                       verdict(pmax / pmin <= 1.10), (hmax / hmin - 1) * 100, verdict(hmax / hmin <= 1.10));
            }
        }
        for (int k = WL_LIST; k <= WL_LIST_SLOW; k++) {
            struct wl_result *w = &wr[k];
            for (int ci = 0; ci < w->nconc; ci++) {
                int wi = w->nworkers - 1;
                struct cfg_result *p1 = &w->r[ci][wi][0], *pw = &w->r[ci][wi][1];
                char what[128];
                snprintf(what, sizeof what, "%s c%d w%d: prefetch=1 below per-worker", wl_names[k], w->conc[ci],
                         w->workers[wi]);
                double dr = 1 - p1->rss / pw->rss, dp = 1 - p1->pool / pw->pool, dh = 1 - p1->hwm / pw->hwm;
                printf("%-44s anon %6.1f%% %s, pool %6.1f%% %s, HWM %6.1f%% %s  (goal: >= 25%% below)\n", what,
                       dr * 100, verdict(dr >= 0.25), dp * 100, verdict(dp >= 0.25), dh * 100, verdict(dh >= 0.25));
                char cs[64];
                snprintf(cs, sizeof cs, "%s/c%d/w%d", wl_names[k], w->conc[ci], w->workers[wi]);
                qv_bench_record(b, cs, "prefetch1_vs_workers", "anon_rss_reduction", "value", dr, "fraction");
                qv_bench_record(b, cs, "prefetch1_vs_workers", "pool_reduction", "value", dp, "fraction");
            }
        }
    }
    if (!skip_micro) {
        printf("%-48s %8.2f ms %s   (goal: <= 1 ms; threaded %.2f ms, checksums off %.2f ms)\n",
               "take 100 rows, warm, synchronous", mr.take_sync_ms, verdict(mr.take_sync_ms <= 1.0), mr.take_thr_ms,
               mr.take_nock_ms);
        printf("%-48s %8.3f Gv/s per CPU-s %s   (goal: >= 1; wall %.3f; l_orderkey %.3f per CPU-s)\n",
               "single int64 column (l_partkey), synchronous", mr.int64_gvs_cpu, verdict(mr.int64_gvs_cpu >= 1.0),
               mr.int64_gvs, mr.orderkey_gvs_cpu);
        double avail = (mr.cpus_before + mr.cpus_after) / 2;
        printf("%-48s %8.2fx %s   (goal: >= 1.7x; best runs %.2fx; this process could get %.2f CPUs%s)\n",
               "full scan 2 workers / 1 worker", mr.full_w2 / mr.full_w1, verdict(mr.full_w2 / mr.full_w1 >= 1.7),
               mr.full_w2_best / mr.full_w1_best, avail, avail < 1.8 ? ": not assessable here" : "");
        printf("%-48s %s\n", "Q6 and take results checked", mr.q6_ok && mr.take_ok ? "ok" : "MISMATCH");
    }
    printf("(total %.1f s)\n", qv_bench_now_s() - t0);
    qv_pool_destroy(pool);
    fflush(stdout);
    return qv_bench_close(b);
}
