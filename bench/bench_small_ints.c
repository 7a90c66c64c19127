/*
 * bench/run small_ints [--quick]
 *
 * The homes of small integers: u64 columns of 131,072 values (one row
 * group). Six shapes of at most 4 bits, for sequential bits (seqpack in
 * zstd frames, docs/format.md 5.5.19 and 5.7), each encoded with the
 * cascade's own choice, bit-packed, radix (5.5.20) and with the entropy
 * stage forced to each of its layouts: ans frames over bytes, zstd over
 * bit-packed lanes, zstd over sequential bytes, zstd over sequential bits;
 * then five uniform ranges that do not fill a power of two, for radix,
 * each with the cascade's choice, bit-packed, radix and ans. Per
 * encoding: bits per value, full decode ns per value (open + decode +
 * close), the same through a filter `x == 1` (open + filter + close) and a
 * cold take of 100 sorted random rows (open + take) in us, min / median
 * of 7 passes (3 with --quick) over 8 chunks. Baseline: bitpack, in the
 * same process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "encoding/enc_internal.h"
#include "encoding/encoding_testing.h"
#include "quiver/encoding.h"

#define N 131072
#define CHUNKS 8

static uint64_t rs = 11;
static double unit(void) { return qv_bench_unit(&rs); }

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench_small_ints: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

/* One value per order of 1..7 lines, a tenth of the lines redrawn (k
 * values: lineitem's l_linestatus has 2, l_returnflag 3). */
static void orders(uint64_t *v, int64_t n, int k) {
    for (int64_t i = 0; i < n;) {
        const int64_t len = 1 + (int64_t)(unit() * 7);
        const uint64_t x = (uint64_t)(unit() * k);
        for (int64_t j = 0; j < len && i < n; j++, i++) v[i] = unit() < 0.1 ? (uint64_t)(unit() * k) : x;
    }
}

static void shape(int sh, uint64_t *v, int64_t n) {
    static const int weights[5] = {2, 3, 4, 6, 5}; /* of 20 */
    for (int64_t i = 0; i < n;) {
        switch (sh) {
        case 0: v[i++] = (uint64_t)(unit() * 11); break; /* l_discount: 0..10, uniform */
        case 1: orders(v + i, n - i, 2), i = n; break;
        case 2: orders(v + i, n - i, 3), i = n; break;
        case 3: { /* line numbers 1..len of orders of 1..7 lines */
            const int64_t len = 1 + (int64_t)(unit() * 7);
            for (int64_t j = 0; j < len && i < n; j++) v[i++] = (uint64_t)(1 + j);
            break;
        }
        case 4: { /* five values skewed 2:3:4:6:5, independent */
            int r = (int)(unit() * 20), x = 0;
            while (r >= weights[x]) r -= weights[x++];
            v[i++] = (uint64_t)(1 + x);
            break;
        }
        case 5: v[i++] = unit() < 0.97 ? 0 : 1 + (uint64_t)(unit() * 3); break; /* rare flags */
        default: { /* uniform ranges for radix: 3, 5, 9 (l_tax), 17 (digits' pixels), 181 */
            static const int span[] = {3, 5, 9, 17, 181};
            v[i++] = (uint64_t)(unit() * span[sh - 6]);
            break;
        }
        }
    }
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("small_ints", argc, argv);
    const int reps = qv_bench_quick(b) ? 3 : 7;
    struct qv_pool *pool;
    struct qv_reservation *res;
    struct qv_error err = {0};
    if (qv_pool_create(NULL, &pool, &err) || qv_reservation_create(pool, NULL, &res, &err))
        die("pool", &err);
    static const char *const shapes[] = {
        "uniform 0..10",   "flag per order", "3 values per order", "line numbers 1..7",
        "skewed 1..5",     "rare flags 3%",  "uniform 0..2",       "uniform 0..4",
        "uniform 0..8",    "uniform 0..16",  "uniform 0..180"};
    /* {force, entropy layout}; the radix shapes (from 6) only the first four */
    static const int encs[][2] = {{QV_ENC_BITPACK, 0},
                                  {QV_ENC_AUTO, 0},
                                  {QV_ENC_RADIX, 0},
                                  {QV_ENC_AUTO, QV__ENTROPY_ANS},
                                  {QV_ENC_AUTO, QV__ENTROPY_PACKED},
                                  {QV_ENC_AUTO, QV__ENTROPY_SEQ},
                                  {QV_ENC_AUTO, QV__ENTROPY_SEQBITS}};
    static const char *const enc_names[] = {"bitpack", "auto", "radix", "ans", "zstd-lanes",
                                            "zstd-seq8", "zstd-seqbits"};
    uint64_t *v = malloc((size_t)N * CHUNKS * 8), *out = malloc((size_t)N * 8);
    if (!v || !out) die("malloc", NULL);
    printf("u64 values, %d chunks of %d; decode ns/value, filter x == 1 ns/value, cold take of "
           "100 rows us: min / median of %d passes\n", CHUNKS, N, reps);
    printf("%-19s %-12s %8s %15s %15s %15s  %s\n", "shape", "encoding", "bits/v", "decode ns/v",
           "filter ns/v", "take 100 us", "root");
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        shape((int)sh, v, (int64_t)N * CHUNKS);
        for (size_t k = 0; k < (sh < 6 ? sizeof encs / sizeof encs[0] : 4); k++) {
            struct qv_encoded e[CHUNKS];
            uint64_t bytes = 0;
            char desc[160] = "";
            struct qv_encode_options o = {0};
            o.force = encs[k][0];
            qv_encode_force_entropy_layout(encs[k][1]);
            for (int c = 0; c < CHUNKS; c++) {
                struct qv_values in = {QV_KIND_UINT64, 0, N, 0, v + (size_t)c * N, NULL};
                if (qv_encode(&in, &o, res, &e[c], &err)) die("encode", &err);
                bytes += e[c].size;
                if (!c && qv_enc_describe(e[c].data, e[c].size, res, desc, sizeof desc, &err) ==
                              EOVERFLOW)
                    strcpy(desc + sizeof desc - 5, "...");
            }
            qv_encode_force_entropy_layout(0);
            double dec[16], flt[16], take[16];
            int64_t rows[100];
            for (int r = 0; r < reps; r++) {
                double td = 0, tf = 0, tt = 0;
                for (int c = 0; c < CHUNKS; c++) {
                    const uint64_t *src = v + (size_t)c * N;
                    struct qv_decode_out dout = {out, 0, NULL, 0, 0};
                    double t0 = qv_bench_now_s();
                    if (qv_decode(e[c].data, e[c].size, QV_KIND_UINT64, 0, N, res, &dout, &err))
                        die("decode", &err);
                    td += qv_bench_now_s() - t0;
                    if (memcmp(out, src, (size_t)N * 8)) die("decode differs", NULL);
                    /* x == 1 over the chunk: a bitmap into out. */
                    struct qv_decoder *d;
                    struct qv_enc_pred p = {.op = QV_ENC_OP_EQ, .ulo = 1};
                    memset(out, 0, (size_t)N / 8);
                    t0 = qv_bench_now_s();
                    if (qv_decoder_open(e[c].data, e[c].size, QV_KIND_UINT64, 0, N, res, &d, &err) ||
                        qv_decoder_filter(d, 0, N, &p, NULL, out, &err))
                        die("filter", &err);
                    tf += qv_bench_now_s() - t0;
                    qv_decoder_close(d);
                    for (int64_t i = 0; i < N; i++)
                        if ((int)(out[i >> 6] >> (i & 63) & 1) != (src[i] == 1)) die("filter differs", NULL);
                    for (int i = 0; i < 100; i++) rows[i] = (int64_t)(unit() * N);
                    for (int i = 1; i < 100; i++)
                        for (int j = i; j > 0 && rows[j - 1] > rows[j]; j--) {
                            int64_t x = rows[j];
                            rows[j] = rows[j - 1];
                            rows[j - 1] = x;
                        }
                    t0 = qv_bench_now_s();
                    if (qv_decoder_open(e[c].data, e[c].size, QV_KIND_UINT64, 0, N, res, &d, &err) ||
                        qv_decoder_take(d, rows, 100, &dout, &err))
                        die("take", &err);
                    tt += qv_bench_now_s() - t0;
                    qv_decoder_close(d);
                    for (int i = 0; i < 100; i++)
                        if (out[i] != src[rows[i]]) die("take differs", NULL);
                }
                dec[r] = td / CHUNKS / N * 1e9;
                flt[r] = tf / CHUNKS / N * 1e9;
                take[r] = tt / CHUNKS * 1e6;
            }
            if (strlen(desc) > 60) strcpy(desc + 57, "...");
            printf("%-19s %-12s %8.2f %6.2f / %6.2f %6.2f / %6.2f %6.1f / %6.1f  %s\n",
                   k ? "" : shapes[sh], enc_names[k], 8.0 * (double)bytes / ((double)N * CHUNKS),
                   qv_bench_min(dec, reps), qv_bench_median(dec, reps), qv_bench_min(flt, reps),
                   qv_bench_median(flt, reps), qv_bench_min(take, reps),
                   qv_bench_median(take, reps), desc);
            char cname[96];
            snprintf(cname, sizeof cname, "%s/%s", shapes[sh], enc_names[k]);
            qv_bench_record_samples(b, cname, "decode", "ns_per_value", dec, reps, "ns");
            qv_bench_record_samples(b, cname, "filter", "ns_per_value", flt, reps, "ns");
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
