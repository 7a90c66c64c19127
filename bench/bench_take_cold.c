/* Cold and warm takes and a full scan through the file layer, one process,
 * for load-independent measures (issue 14, item 5): strace -c -f counts,
 * minor page faults (getrusage around the measured part), callgrind
 * instructions (--toggle-collect=measured).
 *
 *   bench_take_cold FILE MODE [REPEATS]   (build/release/bench/bench_take_cold)
 *
 * MODE: cold (fresh qv_file_open + take of 100 rows + close, REPEATS
 * times), warm (one open and one unmeasured take, then REPEATS takes), scan
 * (open + full scan of every column, REPEATS times; scan-validate: the
 * same with every batch validated in full, as the Python package's scans
 * are by default), none (the cold path's
 * setup only: a baseline for whole-process counts), warm-flushed (warm,
 * but 64 MiB of other memory is written before each measured take, outside
 * the timing: a warm take as a program meets it between other work, and as
 * bench/compare.py measures it, where a garbage collection runs before
 * each call; what it costs then is the memory it touches). The rows: 100
 * distinct random rows of the file, sorted, from a fixed seed (the same
 * rows every run). As the Python package does, a pool of the process's own
 * (block cache on) is shared by the opens, and takes validate fully.
 * Before and after the measured part the program makes a write(2) to fd -1
 * with a marker ("QV_MEASURE_BEGIN" / "QV_MEASURE_END"), so a trace can
 * count the system calls in between. Prints the faults and the wall-clock
 * time of each repeat (min, median). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "quiver/quiver.h"

static struct qv_pool *pool;
static int64_t rows[100];
static int n_rows;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long minflt(double *user, double *sys) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
    *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    return ru.ru_minflt;
}

static void die(const char *what, int rc, const struct qv_error *err) {
    fprintf(stderr, "%s: %d %s\n", what, rc, err->message);
    exit(1);
}

static void drain(struct ArrowArrayStream *st, int64_t *total) {
    for (;;) {
        struct ArrowArray b;
        int rc = st->get_next(st, &b);
        if (rc) {
            fprintf(stderr, "get_next: %d %s\n", rc, st->get_last_error(st));
            exit(1);
        }
        if (!b.release) break;
        *total += b.length;
        b.release(&b);
    }
    st->release(st);
}

static void take(struct qv_file *f) {
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_file_scan_options fo = {.scan = {.threads = QV_SCAN_SYNC,
                                               .validate = QV_SCAN_VALIDATE_FULL}};
    struct ArrowArrayStream st;
    int rc = qv_file_take(f, rows, n_rows, &fo, &st, &err);
    if (rc) die("take", rc, &err);
    int64_t got = 0;
    drain(&st, &got);
    if (got != n_rows) {
        fprintf(stderr, "took %lld rows, wanted %d\n", (long long)got, n_rows);
        exit(1);
    }
}

static struct qv_file *open_file(const char *path) {
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_file_options o = {.pool = pool};
    struct qv_file *f;
    int rc = qv_file_open(path, &o, &f, &err);
    if (rc) die("open", rc, &err);
    return f;
}

/* The measured parts, one function each (callgrind --toggle-collect). */
__attribute__((noinline)) void measured_cold(const char *path) {
    struct qv_file *f = open_file(path);
    take(f);
    qv_file_close(f);
}
__attribute__((noinline)) void measured_warm(struct qv_file *f) { take(f); }
__attribute__((noinline)) void measured_scan(const char *path, int validate) {
    struct qv_file *f = open_file(path);
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_file_scan_options fo = {.scan = {.threads = QV_SCAN_SYNC, .validate = validate}};
    struct ArrowArrayStream st;
    int rc = qv_file_scan(f, &fo, &st, &err);
    if (rc) die("scan", rc, &err);
    int64_t got = 0;
    drain(&st, &got);
    qv_file_close(f);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void marker(const char *m) {
    ssize_t w = write(-1, m, strlen(m));
    (void)w;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_take_cold FILE cold|warm|warm-flushed|scan|scan-validate|none [REPEATS]\n");
        return 2;
    }
    const char *path = argv[1], *mode = argv[2];
    int reps = argc > 3 ? atoi(argv[3]) : 1;
    if (reps < 1 || reps > 10000) reps = 1;
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_pool_options po = {.name = "take_cold"};
    if (qv_pool_create(&po, &pool, &err)) die("pool", 1, &err);
    struct qv_file *f = open_file(path);
    int64_t n = qv_reader_num_rows(qv_file_reader(f));
    /* splitmix64, seed 42: distinct rows, sorted. */
    uint64_t s = 42;
    while (n_rows < 100 && n_rows < n) {
        uint64_t z = (s += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        int64_t r = (int64_t)(z % (uint64_t)n);
        int dup = 0;
        for (int i = 0; i < n_rows; i++) dup |= rows[i] == r;
        if (!dup) rows[n_rows++] = r;
    }
    qsort(rows, (size_t)n_rows, sizeof rows[0], cmp_i64);
    /* One unmeasured take on another open file: code and libraries paged
     * in, the pool's first blocks made (as in a Python process that took
     * before). */
    take(f);
    const int flushed = !strcmp(mode, "warm-flushed");
    if (flushed) mode = "warm";
    if (strcmp(mode, "warm")) {
        qv_file_close(f);
        f = NULL;
    }
    double cpu_user = 0, cpu_sys = 0;
    double *t = calloc((size_t)reps, sizeof *t);
    long *flt = calloc((size_t)reps, sizeof *flt);
    double u0, s0, u1, s1;
    const size_t junk_size = (size_t)64 << 20;
    volatile uint8_t *junk = flushed ? malloc(junk_size) : NULL;
    if (flushed && !junk) die("malloc", ENOMEM, &err);
    marker("QV_MEASURE_BEGIN");
    for (int i = 0; i < reps; i++) {
        if (junk)
            for (size_t b = 0; b < junk_size; b += 64) junk[b] = (uint8_t)(b + (size_t)i);
        long f0 = minflt(&u0, &s0);
        double t0 = now();
        if (!strcmp(mode, "cold")) measured_cold(path);
        else if (!strcmp(mode, "warm")) measured_warm(f);
        else if (!strcmp(mode, "scan")) measured_scan(path, QV_SCAN_VALIDATE_NONE);
        else if (!strcmp(mode, "scan-validate")) measured_scan(path, QV_SCAN_VALIDATE_FULL);
        t[i] = now() - t0;
        flt[i] = minflt(&u1, &s1) - f0;
        cpu_user += u1 - u0;
        cpu_sys += s1 - s0;
    }
    marker("QV_MEASURE_END");
    qv_file_close(f);
    long fsum = 0;
    for (int i = 0; i < reps; i++) fsum += flt[i];
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    printf("%s%s: %d repeats: min %.3f ms median %.3f ms; minor faults first %ld, mean %.1f; "
           "cpu per repeat: user %.3f ms, sys %.3f ms\n",
           mode, flushed ? " (flushed)" : "", reps, t[0] * 1e3, t[reps / 2] * 1e3, flt[0], (double)fsum / reps,
           cpu_user / reps * 1e3, cpu_sys / reps * 1e3);
    free((void *)junk);
    free(t);
    free(flt);
    qv_pool_destroy(pool);
    return 0;
}
