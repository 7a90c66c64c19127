/*
 * bench/run bucket [--quick]
 *
 * The bucket encoding (docs/format.md 5.5.18) against what the cascade
 * had for values of more than 8 bits: dictionary-code-like u32 columns of
 * 131,072 values (one row group) in five shapes, each encoded with the
 * cascade's own choice, and forced to bucket, patched and bitpack. Per
 * encoding: bits per value, the tree's root, full decode ns per value
 * (open + decode + close) and a cold take of 100 sorted random rows (open
 * + take) in us, min / median of 7 passes (3 with --quick) over 8 chunks.
 * Baseline: bitpack at the fixed width, in the same process.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "quiver/encoding.h"

#define N 131072
#define CHUNKS 8

static uint64_t rs = 7;
static double unit(void) { return qv_bench_unit(&rs); }

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench_bucket: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

/* Ranks drawn with weight (r + 1)^-s over d values (codes of a dictionary
 * in frequency order), or uniform when s is 0. */
static void draw(uint32_t *v, int64_t n, int64_t d, double s) {
    double *cdf = malloc((size_t)d * sizeof *cdf), tot = 0;
    for (int64_t r = 0; r < d; r++) cdf[r] = (tot += s > 0 ? pow((double)(r + 1), -s) : 1.0);
    for (int64_t i = 0; i < n; i++) {
        const double u = unit() * tot;
        int64_t lo = 0, hi = d - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1;
            else hi = mid;
        }
        v[i] = (uint32_t)lo;
    }
    free(cdf);
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("bucket", argc, argv);
    const int reps = qv_bench_quick(b) ? 3 : 7;
    struct qv_pool *pool;
    struct qv_reservation *res;
    struct qv_error err = {0};
    if (qv_pool_create(NULL, &pool, &err) || qv_reservation_create(pool, NULL, &res, &err))
        die("pool", &err);
    static const struct {
        const char *name;
        int64_t d;
        double s;
    } shapes[] = {
        {"zipf(1.1) over 1,000", 1000, 1.1},
        {"zipf(0.9) over 4,000", 4000, 0.9},
        {"zipf(0.6) over 3,000", 3000, 0.6},
        {"1/rank over 1,500", 1500, 1.0},
        {"uniform over 4,096", 4096, 0.0},
    };
    static const int encs[] = {QV_ENC_AUTO, QV_ENC_BUCKET, QV_ENC_PATCHED, QV_ENC_BITPACK};
    static const char *const enc_names[] = {"auto", "bucket", "patched", "bitpack"};
    uint32_t *v = malloc((size_t)N * CHUNKS * 4), *out = malloc((size_t)N * 4);
    if (!v || !out) die("malloc", NULL);
    printf("u32 codes, %d chunks of %d values; decode ns/value and cold take of 100 rows us, "
           "min / median of %d passes\n", CHUNKS, N, reps);
    printf("%-22s %-8s %9s %17s %19s  %s\n", "shape", "encoding", "bits/val", "decode ns/val",
           "take 100 us", "root");
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        draw(v, (int64_t)N * CHUNKS, shapes[sh].d, shapes[sh].s);
        for (size_t k = 0; k < sizeof encs / sizeof encs[0]; k++) {
            struct qv_encoded e[CHUNKS];
            uint64_t bytes = 0;
            char desc[160] = "";
            struct qv_encode_options o = {0};
            o.force = encs[k];
            for (int c = 0; c < CHUNKS; c++) {
                struct qv_values in = {QV_KIND_UINT32, 0, N, 0, v + (size_t)c * N, NULL};
                if (qv_encode(&in, &o, res, &e[c], &err)) die("encode", &err);
                bytes += e[c].size;
                if (!c && qv_enc_describe(e[c].data, e[c].size, res, desc, sizeof desc, &err) ==
                              EOVERFLOW)
                    strcpy(desc + sizeof desc - 5, "...");
            }
            double dec[16], take[16];
            int64_t rows[100];
            for (int r = 0; r < reps; r++) {
                double td = 0, tt = 0;
                for (int c = 0; c < CHUNKS; c++) {
                    struct qv_decode_out dout = {out, 0, NULL, 0, 0};
                    double t0 = qv_bench_now_s();
                    if (qv_decode(e[c].data, e[c].size, QV_KIND_UINT32, 0, N, res, &dout, &err))
                        die("decode", &err);
                    td += qv_bench_now_s() - t0;
                    if (memcmp(out, v + (size_t)c * N, (size_t)N * 4)) die("decode differs", NULL);
                    for (int i = 0; i < 100; i++) rows[i] = (int64_t)(unit() * N);
                    for (int i = 1; i < 100; i++)
                        for (int j = i; j > 0 && rows[j - 1] > rows[j]; j--) {
                            int64_t x = rows[j];
                            rows[j] = rows[j - 1];
                            rows[j - 1] = x;
                        }
                    struct qv_decoder *d;
                    t0 = qv_bench_now_s();
                    if (qv_decoder_open(e[c].data, e[c].size, QV_KIND_UINT32, 0, N, res, &d, &err) ||
                        qv_decoder_take(d, rows, 100, &dout, &err))
                        die("take", &err);
                    tt += qv_bench_now_s() - t0;
                    qv_decoder_close(d);
                    for (int i = 0; i < 100; i++)
                        if (out[i] != v[(size_t)c * N + (size_t)rows[i]]) die("take differs", NULL);
                }
                dec[r] = td / CHUNKS / N * 1e9;
                take[r] = tt / CHUNKS * 1e6;
            }
            char *paren = strchr(desc, '(');
            if (paren && strlen(desc) > 60) strcpy(desc + 57, "...");
            printf("%-22s %-8s %9.2f %8.2f / %6.2f %9.1f / %7.1f  %s\n", k ? "" : shapes[sh].name,
                   enc_names[k], 8.0 * (double)bytes / ((double)N * CHUNKS), qv_bench_min(dec, reps),
                   qv_bench_median(dec, reps), qv_bench_min(take, reps),
                   qv_bench_median(take, reps), desc);
            char cname[96];
            snprintf(cname, sizeof cname, "%s/%s", shapes[sh].name, enc_names[k]);
            qv_bench_record_samples(b, cname, "decode", "ns_per_value", dec, reps, "ns");
            qv_bench_record_samples(b, cname, "take100", "cold_take", take, reps, "us");
            for (int c = 0; c < CHUNKS; c++) qv_encoded_release(res, &e[c]);
        }
    }
    free(v);
    free(out);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return qv_bench_close(b);
}
