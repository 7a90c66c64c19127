/* The writer's two batch paths side by side, one process (issue 15: write
 * speed):
 *
 *   bench/run write_paths FILE.qvr [ROUNDS] [--threads N] [--only copy|owned]
 *                    [--batch-rows N]
 *
 * FILE's rows are read once into Arrow batches (the scan's batches, 65536
 * rows unless --batch-rows), held in memory. Each round then writes them to a temporary file
 * twice, alternating: "copy" (qv_writer_write: each batch copied into the
 * writer's builder) and "owned" (qv_writer_write_owned: the batches moved
 * in and held, what qv_file_write_stream does, so every front end that
 * writes a stream: Python's quiver.write, `qv import`). Only the writer's
 * calls are timed (open to finish, no fsync); the encoding runs on the
 * calling thread (QV_WRITER_INLINE) unless --threads N. Prints min and
 * median per path and their ratio, and checks that both wrote the same
 * bytes. --only PATH writes with that path alone (for a profiler). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "quiver/quiver.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "%s: %s\n", what, err->message);
    exit(1);
}

/* The held batches are lent to the owned path: its copy of a batch has this
 * release, which leaves the buffers (still the scan's) alone. */
static void lent_release(struct ArrowArray *a) { a->release = NULL; }

static double write_once(const struct qv_schema *schema, struct ArrowArray *batches, int n,
                         int owned, int threads, struct qv_reservation *r, const char *out) {
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_writer_options wo = {.durability = QV_NOT_DURABLE};
    if (threads > 0) wo.threads = threads;
    else wo.max_in_flight = QV_WRITER_INLINE;
    double t0 = now();
    struct qv_writer *w;
    if (qv_writer_open(out, schema, &wo, r, &w, &err)) die("writer open", &err);
    for (int i = 0; i < n; i++) {
        int rc;
        if (owned) {
            struct ArrowArray lent = batches[i];
            lent.release = lent_release;
            rc = qv_writer_write_owned(w, &lent, &err);
        } else {
            rc = qv_writer_write(w, &batches[i], &err);
        }
        if (rc) die(owned ? "write_owned" : "write", &err);
    }
    if (qv_writer_finish(w, &err)) die("finish", &err);
    qv_writer_close(w);
    return now() - t0;
}

static int same_bytes(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    static char ba[1 << 16], bb[1 << 16];
    while (same) {
        size_t x = fread(ba, 1, sizeof ba, fa), y = fread(bb, 1, sizeof bb, fb);
        if (x != y || memcmp(ba, bb, x)) same = 0;
        if (x < sizeof ba) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* --only: one path, min of the rounds, and the file's size. */
static void one_path(const struct qv_schema *schema, struct ArrowArray *batches, int n, int owned,
                     int threads, int rounds, struct qv_reservation *r, const char *out) {
    double best = 0;
    for (int i = 0; i < rounds; i++) {
        double t = write_once(schema, batches, n, owned, threads, r, out);
        if (!i || t < best) best = t;
    }
    struct stat sb;
    long long bytes = stat(out, &sb) ? -1 : (long long)sb.st_size;
    printf("%s only: min %.2f ms over %d rounds; %lld bytes\n", owned ? "owned" : "copy",
           best * 1e3, rounds, bytes);
}

/* Both paths alternating: min and median of each, their ratio, and whether
 * they wrote the same bytes (1 when not). */
static int both_paths(const struct qv_schema *schema, struct ArrowArray *batches, int n,
                      int threads, int rounds, struct qv_reservation *r, char out[2][64]) {
    /* One unmeasured write per path: pages and code warm alike. */
    write_once(schema, batches, n, 0, threads, r, out[0]);
    write_once(schema, batches, n, 1, threads, r, out[1]);
    double *t[2] = {calloc((size_t)rounds, sizeof(double)), calloc((size_t)rounds, sizeof(double))};
    if (!t[0] || !t[1]) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int i = 0; i < rounds; i++)
        for (int p = 0; p < 2; p++) {
            /* Alternating which goes first, so neither always follows the other. */
            int path = (i & 1) ? 1 - p : p;
            t[path][i] = write_once(schema, batches, n, path, threads, r, out[path]);
        }
    const int same = same_bytes(out[0], out[1]);
    double med[2];
    for (int p = 0; p < 2; p++) {
        qsort(t[p], (size_t)rounds, sizeof(double), cmp_d);
        med[p] = t[p][rounds / 2];
        printf("%-6s min %8.2f ms  median %8.2f ms\n", p ? "owned" : "copy", t[p][0] * 1e3,
               med[p] * 1e3);
    }
    printf("copy / owned (median): %.3f; %d batches, %s, %d rounds; files %s\n", med[0] / med[1],
           n, threads > 0 ? "encoding threads" : "inline", rounds, same ? "identical" : "DIFFER");
    free(t[0]);
    free(t[1]);
    return !same;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_write_paths FILE.qvr [ROUNDS] [--threads N]\n");
        return 2;
    }
    int rounds = 7, threads = 0, only = -1;
    int64_t batch_rows = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = !strcmp(argv[++i], "owned");
        else if (!strcmp(argv[i], "--batch-rows") && i + 1 < argc) batch_rows = atoll(argv[++i]);
        else rounds = atoi(argv[i]);
    }
    if (rounds < 1 || rounds > 1000) rounds = 7;
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_pool_options po = {.name = "write_paths"};
    struct qv_pool *pool;
    if (qv_pool_create(&po, &pool, &err)) die("pool", &err);
    struct qv_file_options fo = {.pool = pool};
    struct qv_file *f;
    if (qv_file_open(argv[1], &fo, &f, &err)) die("open", &err);
    struct qv_file_scan_options so = {.scan = {.threads = QV_SCAN_SYNC, .batch_rows = batch_rows}};
    struct ArrowArrayStream st;
    if (qv_file_scan(f, &so, &st, &err)) die("scan", &err);
    int n = 0, cap = 64;
    struct ArrowArray *batches = malloc((size_t)cap * sizeof *batches);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            batches = realloc(batches, (size_t)cap * sizeof *batches);
        }
        if (!batches) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        int rc = st.get_next(&st, &batches[n]);
        if (rc) {
            fprintf(stderr, "scan: %s\n", st.get_last_error(&st));
            return 1;
        }
        if (!batches[n].release) break;
        n++;
    }
    st.release(&st);
    struct qv_reservation *r;
    struct qv_reservation_options ro = {.name = "writer"};
    if (qv_reservation_create(pool, &ro, &r, &err)) die("reservation", &err);
    char dir[] = "/tmp/qv_write_paths_XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char out[2][64];
    snprintf(out[0], sizeof out[0], "%s/copy.qvr", dir);
    snprintf(out[1], sizeof out[1], "%s/owned.qvr", dir);
    const struct qv_schema *schema = qv_reader_schema(qv_file_reader(f));
    const int rc = only >= 0 ? (one_path(schema, batches, n, only, threads, rounds, r, out[only]), 0)
                             : both_paths(schema, batches, n, threads, rounds, r, out);
    unlink(out[0]);
    unlink(out[1]);
    rmdir(dir);
    for (int i = 0; i < n; i++) batches[i].release(&batches[i]);
    free(batches);
    qv_reservation_destroy(r);
    qv_file_close(f);
    qv_pool_destroy(pool);
    return rc;
}
