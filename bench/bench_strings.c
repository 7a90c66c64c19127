/*
 * bench_strings FILE.qvr COLUMN [--chunk ROWS] [--reps N] [--level L] [--coder NAME]
 *
 * The string coders side by side on one real column: the column is read
 * from a .qvr file and cut into chunks of ROWS rows (default 131072, the
 * writer's row group), and each chunk is encoded with FSST forced,
 * zstd_dict forced, plain zstd frames forced and the cascade's own choice.
 * Per coder: total encoded bytes and ratio (raw string bytes / encoded),
 * encode MB/s, full-decode MB/s (of the decoded bytes), and the cost of a
 * take of 100 random sorted rows from one chunk, cold (decoder opened for
 * the take) and warm (a second take on the open decoder). Times are the
 * min and median over repeats (one core; say so when the machine is
 * shared). Null rows count as empty strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "quiver/quiver.h"

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench_strings: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

struct strs {
    int64_t n, cap;
    int64_t *off; /* n + 1 */
    uint8_t *data;
    size_t size, data_cap;
};

static void push(struct strs *s, const uint8_t *p, size_t len) {
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1 << 16;
        s->off = realloc(s->off, (size_t)s->cap * 8);
    }
    if (s->size + len > s->data_cap) {
        while (s->size + len > s->data_cap) s->data_cap = s->data_cap ? s->data_cap * 2 : 1 << 20;
        s->data = realloc(s->data, s->data_cap);
    }
    if (!s->off || !s->data) die("out of memory", NULL);
    if (s->n == 0) s->off[0] = 0;
    memcpy(s->data + s->size, p, len);
    s->size += len;
    s->off[++s->n] = (int64_t)s->size;
}

/* The column's strings, nulls as empty. */
static void read_column(const char *path, const char *column, struct strs *s) {
    struct qv_error err;
    struct qv_file *f;
    if (qv_file_open(path, NULL, &f, &err)) die("open", &err);
    const char *cols[1] = {column};
    struct qv_file_scan_options so;
    memset(&so, 0, sizeof so);
    so.columns = cols;
    so.n_columns = 1;
    struct ArrowArrayStream st;
    if (qv_file_scan(f, &so, &st, &err)) die("scan", &err);
    struct ArrowSchema sch;
    if (st.get_schema(&st, &sch)) die("schema", NULL);
    const char *fmt = sch.children[0]->format;
    int large = fmt[0] == 'U' || fmt[0] == 'Z';
    if (!large && fmt[0] != 'u' && fmt[0] != 'z') die("not a string column", NULL);
    sch.release(&sch);
    for (;;) {
        struct ArrowArray a;
        if (st.get_next(&st, &a)) die("next", NULL);
        if (!a.release) break;
        const struct ArrowArray *c = a.children[0];
        const uint8_t *valid = c->buffers[0];
        const uint8_t *data = c->buffers[2];
        for (int64_t i = 0; i < c->length; i++) {
            int64_t j = c->offset + i;
            int64_t b, e;
            if (large) {
                b = ((const int64_t *)c->buffers[1])[j];
                e = ((const int64_t *)c->buffers[1])[j + 1];
            } else {
                b = ((const int32_t *)c->buffers[1])[j];
                e = ((const int32_t *)c->buffers[1])[j + 1];
            }
            int ok = !valid || (valid[j >> 3] >> (j & 7) & 1);
            push(s, data + b, ok ? (size_t)(e - b) : 0);
        }
        a.release(&a);
    }
    st.release(&st);
    qv_file_close(f);
}

static uint64_t rs = 7;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_strings FILE.qvr COLUMN [--chunk ROWS] [--reps N] [--level L] [--coder NAME]\n");
        return 2;
    }
    int64_t chunk = 131072;
    int reps = 5, level = 0, only = -1;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--chunk")) chunk = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--level")) level = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--coder")) only = qv_encoding_from_name(argv[i + 1]);
    }
    if (reps < 1 || reps > 100) reps = 5;
    struct strs s;
    memset(&s, 0, sizeof s);
    read_column(argv[1], argv[2], &s);
    if (!s.n) die("empty column", NULL);
    printf("%s %s: %lld strings, %.1f MiB, chunks of %lld rows, %d repeats\n", argv[1], argv[2],
           (long long)s.n, s.size / 1048576.0, (long long)chunk, reps);
    struct qv_pool *pool;
    struct qv_reservation *r;
    struct qv_pool_options po = {0};
    po.name = "bench_strings";
    struct qv_error err;
    if (qv_pool_create(&po, &pool, &err) || qv_reservation_create(pool, NULL, &r, &err))
        die("pool", &err);
    const int64_t nchunks = (s.n + chunk - 1) / chunk;
    struct qv_encoded *enc = calloc((size_t)nchunks, sizeof *enc);
    int64_t *off64 = malloc((size_t)(chunk + 1) * 8);
    int32_t *o32 = malloc((size_t)(chunk + 1) * 4);
    static const int coders[] = {QV_ENC_FSST, QV_ENC_ZSTD_DICT, QV_ENC_ZSTD, QV_ENC_AUTO};
    printf("%-10s %10s %7s %10s %10s %12s %12s %12s %12s  %s\n", "coder", "bytes", "ratio",
           "enc MB/s", "dec MB/s", "take cold", "(median)", "take warm", "(median)", "roots");
    for (size_t ci = 0; ci < sizeof coders / sizeof coders[0]; ci++) {
        if (only >= 0 && coders[ci] != only) continue;
        struct qv_encode_options eo;
        memset(&eo, 0, sizeof eo);
        eo.force = coders[ci];
        eo.zstd_level = level;
        double *et = calloc((size_t)reps, sizeof(double)), *dt = calloc((size_t)reps, sizeof(double));
        double *tc = calloc((size_t)reps, sizeof(double)), *tw = calloc((size_t)reps, sizeof(double));
        uint64_t total = 0;
        int roots[32] = {0};
        for (int rep = 0; rep < reps; rep++) {
            double t0 = qv_bench_now_s();
            total = 0;
            for (int64_t k = 0; k < nchunks; k++) {
                int64_t b = k * chunk, m = s.n - b < chunk ? s.n - b : chunk;
                struct qv_values v;
                memset(&v, 0, sizeof v);
                v.kind = QV_KIND_LARGE_BINARY;
                v.count = m;
                v.values = s.off + b;
                v.data = s.data;
                if (rep) qv_encoded_release(r, &enc[k]);
                if (qv_encode(&v, &eo, r, &enc[k], &err)) die("encode", &err);
                total += enc[k].size;
                if (!rep && enc[k].data[0] < 32) roots[enc[k].data[0]]++;
            }
            et[rep] = qv_bench_now_s() - t0;
            /* Full decode of every chunk into int32 offsets (as a scan). */
            t0 = qv_bench_now_s();
            for (int64_t k = 0; k < nchunks; k++) {
                int64_t m = s.n - k * chunk < chunk ? s.n - k * chunk : chunk;
                struct qv_decode_out o;
                memset(&o, 0, sizeof o);
                o.values = o32;
                if (qv_decode(enc[k].data, enc[k].size, QV_KIND_BINARY, 0, m, r, &o, &err))
                    die("decode", &err);
                qv_bench_sink(o.data);
                qv_free(r, o.data, o.data_capacity);
            }
            dt[rep] = qv_bench_now_s() - t0;
            /* Take of 100 sorted random rows from a middle chunk. */
            int64_t k = nchunks / 2, m = s.n - k * chunk < chunk ? s.n - k * chunk : chunk;
            int64_t rows[100];
            for (int j = 0; j < 100; j++) rows[j] = (int64_t)(rnd() % (uint64_t)m);
            qsort(rows, 100, 8, cmp64);
            t0 = qv_bench_now_s();
            struct qv_decoder *d;
            if (qv_decoder_open(enc[k].data, enc[k].size, QV_KIND_BINARY, 0, m, r, &d, &err))
                die("open", &err);
            struct qv_decode_out o;
            memset(&o, 0, sizeof o);
            o.values = o32;
            if (qv_decoder_take(d, rows, 100, &o, &err)) die("take", &err);
            tc[rep] = qv_bench_now_s() - t0;
            for (int j = 0; j < 100; j++) rows[j] = (int64_t)(rnd() % (uint64_t)m);
            qsort(rows, 100, 8, cmp64);
            o.data_size = 0;
            t0 = qv_bench_now_s();
            if (qv_decoder_take(d, rows, 100, &o, &err)) die("take", &err);
            tw[rep] = qv_bench_now_s() - t0;
            qv_free(r, o.data, o.data_capacity);
            qv_decoder_close(d);
        }
        char rootstr[256] = "";
        for (int e = 0; e < 32; e++)
            if (roots[e])
                snprintf(rootstr + strlen(rootstr), sizeof rootstr - strlen(rootstr), "%s:%d ",
                         qv_encoding_name(e), roots[e]);
        const double mb = s.size / 1e6;
        printf("%-10s %10llu %7.2f %10.0f %10.0f %9.1f us %9.1f us %9.1f us %9.1f us  %s\n",
               qv_encoding_name(coders[ci]), (unsigned long long)total, (double)s.size / total,
               mb / qv_bench_min(et, reps), mb / qv_bench_min(dt, reps),
               qv_bench_min(tc, reps) * 1e6, qv_bench_median(tc, reps) * 1e6,
               qv_bench_min(tw, reps) * 1e6, qv_bench_median(tw, reps) * 1e6, rootstr);
        printf("%-10s %10s %7s %10.0f %10.0f  (median MB/s)\n", "", "", "",
               mb / qv_bench_median(et, reps), mb / qv_bench_median(dt, reps));
        fflush(stdout);
        free(et);
        free(dt);
        free(tc);
        free(tw);
        for (int64_t k = 0; k < nchunks; k++) qv_encoded_release(r, &enc[k]);
    }
    free(enc);
    free(off64);
    free(o32);
    free(s.off);
    free(s.data);
    qv_reservation_destroy(r);
    qv_pool_destroy(pool);
    return 0;
}
