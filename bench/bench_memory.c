/*
 * bench/run memory: the cost of accounting. Reproduces the shape of the
 * DataFusion Comet table (allocate N buffers, release them, repeat; host
 * behind a lock like Spark's TaskMemoryManager) with plain allocation of the
 * same sizes from the same allocator in the same run as the baseline.
 * Then what a scan is charged: peak pool reserved and peak host grant
 * against the peak of bytes really allocated, for small and large batches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "bench_common.h"
#include "base/thread.h"
#include "quiver/memory.h"
#include "quiver/scan.h"

#define MiB (UINT64_C(1) << 20)
#define RUNS 3

/* A host like TaskMemoryManager: one lock around a counter, shared by tasks. */
struct host {
    qv_mutex lock;
    uint64_t used, capacity, peak;
};

static uint64_t host_acquire(void *ctx, uint64_t bytes) {
    struct host *h = ctx;
    qv_mutex_lock(&h->lock);
    uint64_t g = h->capacity && h->used + bytes > h->capacity ? h->capacity - h->used : bytes;
    h->used += g;
    if (h->used > h->peak) h->peak = h->used;
    qv_mutex_unlock(&h->lock);
    return g;
}

static void host_release(void *ctx, uint64_t bytes) {
    struct host *h = ctx;
    qv_mutex_lock(&h->lock);
    h->used -= bytes;
    qv_mutex_unlock(&h->lock);
}

static struct host g_host;
static struct qv_pool_host g_pool_host = {&g_host, host_acquire, host_release, NULL, NULL};

static void die(const char *what, struct qv_error *err) {
    fprintf(stderr, "bench memory: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

static struct qv_pool *make_pool(const char *name) {
    struct qv_pool *p;
    struct qv_error err;
    struct qv_pool_options o = {.name = name, .host = &g_pool_host};
    if (qv_pool_create(&o, &p, &err)) die("pool", &err);
    return p;
}

static struct qv_reservation *make_res(struct qv_pool *p, const char *name) {
    struct qv_reservation *r;
    struct qv_error err;
    struct qv_reservation_options o = {.name = name};
    if (qv_reservation_create(p, &o, &r, &err)) die("reservation", &err);
    return r;
}

/* Plain: the same aligned allocator qv_alloc uses, without accounting. */
static double run_plain(int nbuf, size_t size, int iters, void **bufs) {
    size_t padded = qv_align_up(size);
    double t0 = qv_bench_now_s();
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < nbuf; i++) {
            bufs[i] = aligned_alloc(64, padded);
            if (!bufs[i]) die("aligned_alloc", NULL);
            *(volatile char *)bufs[i] = 1;
        }
        for (int i = 0; i < nbuf; i++) free(bufs[i]);
    }
    return (qv_bench_now_s() - t0) * 1e9 / ((double)iters * nbuf);
}

static double run_accounted(struct qv_reservation *r, int nbuf, size_t size, int iters,
                            void **bufs) {
    struct qv_error err;
    double t0 = qv_bench_now_s();
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < nbuf; i++) {
            bufs[i] = qv_alloc(r, size, &err);
            if (!bufs[i]) die("qv_alloc", &err);
            *(volatile char *)bufs[i] = 1;
        }
        for (int i = 0; i < nbuf; i++) qv_free(r, bufs[i], size);
    }
    return (qv_bench_now_s() - t0) * 1e9 / ((double)iters * nbuf);
}

/* The second task of the contention case: its own pool on the same host,
 * repeatedly reserving and releasing 2 MiB. */
struct rival {
    _Atomic int stop;
    uint64_t ops;
};

static void *rival_main(void *arg) {
    struct rival *rv = arg;
    struct qv_pool *p = make_pool("rival-task");
    struct qv_reservation *r = make_res(p, "rival");
    while (!rv->stop) {
        if (qv_reservation_grow(r, 2 * MiB, NULL) == 0) qv_reservation_shrink(r, 2 * MiB);
        qv_reservation_release_slack(r);
        rv->ops++;
    }
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    return NULL;
}

struct alloc_case {
    const char *name;
    int nbuf;
    size_t size;
    int iters, quick_iters;
    int contention;
};

static void alloc_cases(struct qv_bench *b) {
    static const struct alloc_case cases[] = {
        {"512x128B", 512, 128, 20000, 2000, 0},
        {"128x64KiB", 128, 64 * 1024, 2000, 200, 0},
        /* A working set the pool's block cache holds (64 blocks at most). */
        {"32x64KiB", 32, 64 * 1024, 8000, 800, 0},
        {"8x1MiB", 8, 1024 * 1024, 4000, 400, 0},
        {"8x1MiB+rival", 8, 1024 * 1024, 4000, 400, 1},
    };
    printf("%-14s %22s %22s %8s %10s %10s\n", "case", "not accounted ns/buf",
           "accounted ns/buf", "ratio", "acq/iter", "rel/iter");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const struct alloc_case *ac = &cases[c];
        int iters = qv_bench_quick(b) ? ac->quick_iters : ac->iters;
        void **bufs = calloc((size_t)ac->nbuf, sizeof *bufs);
        struct qv_pool *p = make_pool("task");
        struct qv_reservation *r = make_res(p, "arrow");
        struct rival rv = {0};
        qv_thread th;
        if (ac->contention && qv_thread_create(&th, rival_main, &rv)) die("thread", NULL);
        /* Warm-up: first touch of the allocator and the first host acquire. */
        run_plain(ac->nbuf, ac->size, iters / 10 + 1, bufs);
        run_accounted(r, ac->nbuf, ac->size, iters / 10 + 1, bufs);
        double plain[RUNS], acc[RUNS];
        struct qv_pool_stats s0, s1;
        qv_pool_get_stats(p, &s0);
        for (int k = 0; k < RUNS; k++) {
            plain[k] = run_plain(ac->nbuf, ac->size, iters, bufs);
            acc[k] = run_accounted(r, ac->nbuf, ac->size, iters, bufs);
        }
        qv_pool_get_stats(p, &s1);
        if (ac->contention) {
            rv.stop = 1;
            qv_thread_join(th);
        }
        double total_iters = (double)iters * RUNS;
        double acq = (double)(s1.host_acquire_calls - s0.host_acquire_calls) / total_iters;
        double rel = (double)(s1.host_release_calls - s0.host_release_calls) / total_iters;
        double pm = qv_bench_record_samples(b, ac->name, "not_accounted", "ns_per_buffer", plain,
                                            RUNS, "ns");
        double am = qv_bench_record_samples(b, ac->name, "accounted", "ns_per_buffer", acc, RUNS,
                                            "ns");
        qv_bench_record(b, ac->name, "accounted", "ratio_to_plain", "median", am / pm, "x");
        qv_bench_record(b, ac->name, "accounted", "host_acquire_per_iter", "value", acq, "calls");
        qv_bench_record(b, ac->name, "accounted", "host_release_per_iter", "value", rel, "calls");
        printf("%-14s %10.1f (min %6.1f) %10.1f (min %6.1f) %7.3fx %10.3f %10.3f\n", ac->name, pm,
               qv_bench_min(plain, RUNS), am, qv_bench_min(acc, RUNS), am / pm, acq, rel);
        qv_reservation_destroy(r);
        qv_pool_destroy(p);
        free(bufs);
    }
}

static void micro_cases(struct qv_bench *b) {
    long n = qv_bench_quick(b) ? 20000000L : 200000000L;
    struct qv_pool_options lo = {.name = "local"};
    struct qv_pool *p;
    struct qv_error err;
    if (qv_pool_create(&lo, &p, &err)) die("pool", &err);
    struct qv_reservation *r = make_res(p, "micro");
    if (qv_reservation_grow(r, 4096, &err)) die("grow", &err);
    double inblock[RUNS], interleaved[RUNS], crossing[RUNS];
    /* Latency: one reservation, each pair depending on the previous one. */
    for (int k = 0; k < RUNS; k++) {
        double t0 = qv_bench_now_s();
        for (long i = 0; i < n; i++) {
            qv_reservation_grow(r, 64, NULL);
            qv_reservation_shrink(r, 64);
            qv_bench_sink(r); /* one barrier per pair: the pair must really run */
        }
        inblock[k] = (qv_bench_now_s() - t0) * 1e9 / (double)n;
    }
    /* Throughput: four consumers' reservations interleaved, as when several
     * builders append in one loop; no pair waits on the one before it. */
    struct qv_reservation *rs[4];
    for (int j = 0; j < 4; j++) {
        rs[j] = make_res(p, "micro4");
        if (qv_reservation_grow(rs[j], 4096, &err)) die("grow", &err);
    }
    for (int k = 0; k < RUNS; k++) {
        double t0 = qv_bench_now_s();
        for (long i = 0; i < n / 4; i++) {
            for (int j = 0; j < 4; j++) qv_reservation_grow(rs[j], 64, NULL);
            for (int j = 0; j < 4; j++) qv_reservation_shrink(rs[j], 64);
            qv_bench_sink(rs);
        }
        interleaved[k] = (qv_bench_now_s() - t0) * 1e9 / (double)(n / 4 * 4);
    }
    for (int j = 0; j < 4; j++) {
        qv_reservation_shrink(rs[j], 4096);
        qv_reservation_destroy(rs[j]);
    }
    qv_reservation_shrink(r, 4096);
    qv_reservation_release_slack(r);
    long m = n / 100;
    for (int k = 0; k < RUNS; k++) {
        double t0 = qv_bench_now_s();
        for (long i = 0; i < m; i++) {
            qv_reservation_grow(r, 64, NULL); /* holds nothing: crosses a block */
            qv_reservation_shrink(r, 64);
            qv_reservation_release_slack(r); /* gives the block back to the pool */
        }
        crossing[k] = (qv_bench_now_s() - t0) * 1e9 / (double)m;
    }
    double ib = qv_bench_record_samples(b, "in_block_grow_shrink", "latency_one_reservation",
                                        "ns_per_op", inblock, RUNS, "ns");
    double il = qv_bench_record_samples(b, "in_block_grow_shrink", "throughput_4_reservations",
                                        "ns_per_op", interleaved, RUNS, "ns");
    double cr = qv_bench_record_samples(b, "block_crossing_grow_shrink", "accounted",
                                        "ns_per_op", crossing, RUNS, "ns");
    printf("\n%-34s %8.2f ns (min %.2f)\n", "in-block grow+shrink, latency", ib,
           qv_bench_min(inblock, RUNS));
    printf("%-34s %8.2f ns (min %.2f)\n", "in-block grow+shrink, throughput", il,
           qv_bench_min(interleaved, RUNS));
    printf("%-34s %8.2f ns (min %.2f)\n", "block-crossing grow+shrink+release", cr,
           qv_bench_min(crossing, RUNS));
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

/* Two threads on one host-backed pool, each with its own reservation,
 * allocating and freeing mixed sizes; against one thread doing the same. */
struct mixer {
    struct qv_pool *pool;
    long ops;
    double ns_per_op;
};

static void *mixer_main(void *arg) {
    struct mixer *mx = arg;
    struct qv_reservation *r = make_res(mx->pool, "mixer");
    void *bufs[64] = {0};
    size_t sizes[64] = {0};
    unsigned seed = 12345;
    double t0 = qv_bench_now_s();
    for (long i = 0; i < mx->ops; i++) {
        int k = (int)(rand_r(&seed) & 63);
        if (bufs[k]) {
            qv_free(r, bufs[k], sizes[k]);
            bufs[k] = NULL;
        } else {
            sizes[k] = (size_t)64 << (rand_r(&seed) % 13); /* 64 B .. 256 KiB */
            bufs[k] = qv_alloc(r, sizes[k], NULL);
        }
    }
    mx->ns_per_op = (qv_bench_now_s() - t0) * 1e9 / (double)mx->ops;
    for (int k = 0; k < 64; k++) qv_free(r, bufs[k], sizes[k]);
    qv_reservation_destroy(r);
    return NULL;
}

static void contention_cases(struct qv_bench *b) {
    long ops = qv_bench_quick(b) ? 200000 : 2000000;
    double one[RUNS], two[RUNS], acq_per_kop = 0;
    for (int k = 0; k < RUNS; k++) {
        struct qv_pool *p = make_pool("mix1");
        struct mixer m = {p, ops, 0};
        mixer_main(&m);
        one[k] = m.ns_per_op;
        qv_pool_destroy(p);

        p = make_pool("mix2");
        struct mixer ms[2] = {{p, ops, 0}, {p, ops, 0}};
        qv_thread th[2];
        for (int t = 0; t < 2; t++)
            if (qv_thread_create(&th[t], mixer_main, &ms[t])) die("thread", NULL);
        for (int t = 0; t < 2; t++) qv_thread_join(th[t]);
        two[k] = (ms[0].ns_per_op + ms[1].ns_per_op) / 2;
        struct qv_pool_stats s;
        qv_pool_get_stats(p, &s);
        acq_per_kop = (double)s.host_acquire_calls * 1000.0 / (double)(2 * ops);
        qv_pool_destroy(p);
    }
    double o = qv_bench_record_samples(b, "mixed_sizes", "one_thread", "ns_per_op", one, RUNS, "ns");
    double t = qv_bench_record_samples(b, "mixed_sizes", "two_threads_one_pool", "ns_per_op", two,
                                       RUNS, "ns");
    qv_bench_record(b, "mixed_sizes", "two_threads_one_pool", "host_acquire_per_1000_ops", "value",
                    acq_per_kop, "calls");
    printf("%-34s %8.2f ns/op one thread, %8.2f ns/op two threads (%.2fx), %.3f host acquires per 1000 ops\n",
           "mixed alloc/free 64B..256KiB", o, t, t / o, acq_per_kop);
}

/* ---- What a scan is charged ----
 * A scan's batches carry their own reservations (one per output column and
 * one for the batch), so the number of reservations grows with the batches
 * a consumer holds. Reported: the peak of bytes really allocated (the sum of
 * every reservation's use, sampled after each batch of a synchronous scan,
 * where nothing else runs), the pool's peak reserved bytes, and the peak
 * the host (a Spark task's memory manager) granted. */

#define ACC_ONE_ROWS 2000000 /* one int64 column: 15.3 MiB */
#define ACC_WIDE_COLS 16
#define ACC_WIDE_ROWS 200000 /* 16 columns of 4 and 8 bytes: 19.1 MiB */

static void acc_write(const char *path, int ncols, int64_t rows) {
    struct qv_pool *p;
    struct qv_reservation *r;
    struct qv_error err;
    if (qv_pool_create(NULL, &p, &err)) die("pool", &err);
    r = make_res(p, "writer");
    struct qv_field cols[ACC_WIDE_COLS];
    char names[ACC_WIDE_COLS][16];
    for (int c = 0; c < ncols; c++) {
        snprintf(names[c], sizeof names[c], "c%d", c);
        /* int64, float64, int32, int64, ... */
        enum qv_type t = c % 3 == 0 ? QV_TYPE_INT64 : c % 3 == 1 ? QV_TYPE_FLOAT64 : QV_TYPE_INT32;
        cols[c] = (struct qv_field){.name = names[c], .type = t, .nullable = false};
    }
    struct qv_field root = {.name = "", .type = QV_TYPE_STRUCT, .n_children = ncols, .children = cols};
    struct qv_schema *schema;
    if (qv_schema_create(&root, r, &schema, &err)) die("schema", &err);
    struct qv_writer *w;
    if (qv_writer_open(path, schema, NULL, r, &w, &err)) die("writer open", &err);
    struct qv_builder *b = qv_writer_builder(w);
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < rows; i++) {
        int rc = 0;
        for (int c = 0; c < ncols; c++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* incompressible values */
            struct qv_appender *a = qv_builder_column(b, c);
            rc |= c % 3 == 0   ? qv_append_int64(a, (int64_t)x)
                  : c % 3 == 1 ? qv_append_float64(a, (double)(x >> 11))
                               : qv_append_int32(a, (int32_t)x);
        }
        if (rc) die("append", NULL);
        if ((i & 4095) == 4095 && qv_writer_end_rows(w, &err)) die("writer end_rows", &err);
    }
    if (qv_writer_end_rows(w, &err) || qv_writer_finish(w, &err)) die("writer finish", &err);
    qv_writer_close(w);
    qv_schema_destroy(schema);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
}

struct acc_result {
    double used, reserved, host; /* peaks, bytes */
};

/* One scan of `path` into a fresh host-backed pool. hold: keep every batch
 * until the end (to_arrow); else release each batch after the next one
 * arrives (a streaming consumer holding one batch). */
static struct acc_result acc_scan(const char *path, int64_t batch_rows, int hold) {
    struct host h = {0};
    qv_mutex_init(&h.lock);
    struct qv_pool_host ph = {&h, host_acquire, host_release, NULL, NULL};
    struct qv_pool_options po = {.name = "task", .host = &ph};
    struct qv_pool *p;
    struct qv_error err;
    if (qv_pool_create(&po, &p, &err)) die("pool", &err);
    struct qv_reservation *r = make_res(p, "scan");
    struct qv_reader *rd;
    if (qv_reader_open(path, NULL, r, &rd, &err)) die("reader open", &err);
    struct qv_scan_options so = {.batch_rows = batch_rows, .threads = QV_SCAN_SYNC};
    struct ArrowArrayStream st;
    if (qv_scan_open(rd, &so, r, &st, &err)) die("scan open", &err);
    size_t cap = 1024, n = 0;
    struct ArrowArray *held = malloc(cap * sizeof *held);
    if (!held) die("malloc", NULL);
    uint64_t peak_used = qv_pool_used(p);
    for (;;) {
        struct ArrowArray a;
        if (st.get_next(&st, &a)) die(st.get_last_error(&st), NULL);
        if (!a.release) break;
        uint64_t u = qv_pool_used(p);
        if (u > peak_used) peak_used = u;
        if (!hold && n) { /* the previous batch: the consumer is done with it */
            held[0].release(&held[0]);
            n = 0;
        }
        if (n == cap) {
            struct ArrowArray *m = realloc(held, (cap *= 2) * sizeof *held);
            if (!m) die("realloc", NULL);
            held = m;
        }
        held[n++] = a;
    }
    st.release(&st);
    for (size_t i = 0; i < n; i++) held[i].release(&held[i]);
    free(held);
    qv_reader_close(rd);
    struct qv_pool_stats ps;
    qv_pool_get_stats(p, &ps);
    qv_reservation_destroy(r);
    qv_pool_destroy(p);
    qv_mutex_destroy(&h.lock);
    return (struct acc_result){(double)peak_used, (double)ps.peak_reserved, (double)h.peak};
}

static void accounting_cases(struct qv_bench *b) {
    char one[64], wide[64];
    snprintf(one, sizeof one, "/tmp/qv_bench_acc_one_%d.qvr", (int)getpid());
    snprintf(wide, sizeof wide, "/tmp/qv_bench_acc_wide_%d.qvr", (int)getpid());
    acc_write(one, 1, ACC_ONE_ROWS);
    acc_write(wide, ACC_WIDE_COLS, ACC_WIDE_ROWS);
    printf("\nwhat a scan is charged (host-backed pool, 1 MiB blocks, synchronous scan):\n");
    printf("%-22s %7s %-6s %11s %13s %8s %13s %8s\n", "file", "batch", "mode", "used MiB",
           "reserved MiB", "ratio", "host MiB", "ratio");
    static const int64_t batches[] = {1000, 65536};
    for (int f = 0; f < 2; f++) {
        for (int k = 0; k < 2; k++) {
            for (int hold = 1; hold >= 0; hold--) {
                struct acc_result a = acc_scan(f ? wide : one, batches[k], hold);
                char name[64];
                snprintf(name, sizeof name, "scan_%s_%lld_%s", f ? "16col" : "int64",
                         (long long)batches[k], hold ? "hold_all" : "stream");
                qv_bench_record(b, name, "accounted", "peak_used_bytes", "value", a.used, "bytes");
                qv_bench_record(b, name, "accounted", "peak_reserved_bytes", "value", a.reserved,
                                "bytes");
                qv_bench_record(b, name, "accounted", "peak_host_bytes", "value", a.host, "bytes");
                qv_bench_record(b, name, "accounted", "reserved_to_used", "value",
                                a.reserved / a.used, "x");
                printf("%-22s %7lld %-6s %11.2f %13.2f %7.2fx %13.2f %7.2fx\n",
                       f ? "16 cols x 200k rows" : "int64 x 2M rows", (long long)batches[k],
                       hold ? "hold" : "stream", a.used / MiB, a.reserved / MiB,
                       a.reserved / a.used, a.host / MiB, a.host / a.used);
            }
        }
    }
    unlink(one);
    unlink(wide);
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("memory", argc, argv);
    qv_mutex_init(&g_host.lock);
    printf("Quiver memory benchmark: %d runs, median (min); baseline = the same aligned\n"
           "allocator without accounting; host = a locked counter like TaskMemoryManager.\n\n",
           RUNS);
    alloc_cases(b);
    micro_cases(b);
    contention_cases(b);
    accounting_cases(b);
    return qv_bench_close(b) ? 1 : 0;
}
