/*
 * bench/run filter [--quick] [--json FILE] [--sf X]
 *
 * Predicates on encoded chunks (qv_decoder_filter) against decode then
 * compare (qv_decoder_decode_range into a buffer, then a plain loop that
 * writes the same bitmap), one thread, on lineitem-like columns cut into
 * 131,072-row chunks encoded by the cascade: l_shipdate (int32 days,
 * Q6's year), l_quantity and l_discount (int64, Q6's ranges), l_shipmode
 * (strings, EQ) and l_orderkey (sorted int64, a narrow range). Both sides
 * answer 16,384 rows per call with the decoder kept open, as a scan does.
 * Values/s over all rows, min over repeats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "encoding/enc_internal.h"
#include "quiver/encoding.h"

#define CHUNK 131072
#define BATCH 16384

static struct qv_reservation *res;
static uint64_t rs = 7;
static uint64_t rnd(void) { return qv_bench_xorshift(&rs); }
static int64_t urand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "%s: %s\n", what, err->message);
    exit(1);
}

struct col {
    const char *name;
    enum qv_value_kind kind;
    int64_t n;
    void *values; /* int32 / int64, or int32 offsets */
    uint8_t *data;
    struct qv_enc_pred pred;
    const char *pred_text;
};

/* The baseline's compare: the decoded values through the filter's own
 * branch-free compare kernel (qv__arc_cmp: the range as one unsigned
 * subtraction and comparison, a byte per value packed into words), so the
 * difference measured is the decode, not a weaker loop. Strings: length
 * and memcmp per value. */
static void cmp_plain(const struct col *c, const void *vals, const uint8_t *data, int64_t m,
                      uint64_t *out) {
    const struct qv_enc_pred *p = &c->pred;
    if (c->kind == QV_KIND_INT32) {
        qv__arc_cmp(vals, 4, m, (uint32_t)p->lo, (uint32_t)(p->hi - p->lo), UINT32_MAX, out);
    } else if (c->kind == QV_KIND_INT64) {
        qv__arc_cmp(vals, 8, m, (uint64_t)p->lo, (uint64_t)p->hi - (uint64_t)p->lo, UINT64_MAX, out);
    } else {
        const int32_t *o = vals;
        const size_t len = p->len;
        const uint8_t *lit = p->bytes;
        memset(out, 0, (size_t)(m + 63) / 64 * 8);
        for (int64_t i = 0; i < m; i++) {
            size_t l = (size_t)(o[i + 1] - o[i]);
            out[i >> 6] |= (uint64_t)(l == len && !memcmp(data + o[i], lit, l)) << (i & 63);
        }
    }
}

static void bench_col(struct qv_bench *b, struct col *c, int reps) {
    const int64_t nch = (c->n + CHUNK - 1) / CHUNK;
    struct qv_encoded *enc = calloc((size_t)nch, sizeof *enc);
    struct qv_decoder **dec = calloc((size_t)nch, sizeof *dec);
    struct qv_error err = {0};
    char desc[160] = "";
    for (int64_t k = 0; k < nch; k++) {
        int64_t a = k * CHUNK, m = c->n - a < CHUNK ? c->n - a : CHUNK;
        struct qv_values v = {.kind = c->kind, .count = m};
        if (c->kind == QV_KIND_BINARY) {
            v.values = (const int32_t *)c->values + a;
            v.data = c->data;
        } else {
            v.values = (const uint8_t *)c->values + (size_t)a * (c->kind == QV_KIND_INT32 ? 4 : 8);
        }
        if (qv_encode(&v, NULL, res, &enc[k], &err)) die("encode", &err);
        if (k == 0 && qv_enc_describe(enc[k].data, enc[k].size, res, desc, sizeof desc, &err) == EOVERFLOW)
            strcpy(desc + sizeof desc - 5, "...");
        if (qv_decoder_open(enc[k].data, enc[k].size, c->kind, 0, m, res, &dec[k], &err)) die("open", &err);
    }
    uint64_t *out = malloc(BATCH / 8), *out2 = malloc(BATCH / 8);
    void *vals = malloc((size_t)(BATCH + 1) * 8);
    uint8_t *sdata = NULL;
    size_t scap = 0;
    double tf[8], td[8];
    int64_t hits_f = 0, hits_d = 0;
    for (int r = 0; r < reps; r++) {
        hits_f = hits_d = 0;
        double t0 = qv_bench_now_s();
        for (int64_t k = 0; k < nch; k++) {
            int64_t m = c->n - k * CHUNK < CHUNK ? c->n - k * CHUNK : CHUNK;
            for (int64_t s = 0; s < m; s += BATCH) {
                int64_t bm = m - s < BATCH ? m - s : BATCH;
                int rc = qv_decoder_filter(dec[k], s, bm, &c->pred, NULL, out, &err);
                if (rc) die("filter", &err);
                for (int64_t w = 0; w < (bm + 63) / 64; w++) hits_f += __builtin_popcountll(out[w]);
            }
        }
        double t1 = qv_bench_now_s();
        for (int64_t k = 0; k < nch; k++) {
            int64_t m = c->n - k * CHUNK < CHUNK ? c->n - k * CHUNK : CHUNK;
            for (int64_t s = 0; s < m; s += BATCH) {
                int64_t bm = m - s < BATCH ? m - s : BATCH;
                /* The bytes' buffer is kept across calls, as a scan's would be. */
                struct qv_decode_out o = {.values = vals, .data = sdata, .data_capacity = scap};
                if (qv_decoder_decode_range(dec[k], s, bm, &o, &err)) die("decode", &err);
                sdata = o.data;
                scap = o.data_capacity;
                cmp_plain(c, vals, o.data, bm, out2);
                for (int64_t w = 0; w < (bm + 63) / 64; w++) hits_d += __builtin_popcountll(out2[w]);
            }
        }
        double t2 = qv_bench_now_s();
        tf[r] = t1 - t0;
        td[r] = t2 - t1;
    }
    if (hits_f != hits_d) {
        fprintf(stderr, "%s: filter found %lld rows, decode + compare %lld\n", c->name,
                (long long)hits_f, (long long)hits_d);
        exit(1);
    }
    double f = (double)c->n / qv_bench_min(tf, reps) / 1e6, d = (double)c->n / qv_bench_min(td, reps) / 1e6;
    printf("%-12s %-16s %-48.48s %9.0f %9.0f %6.2fx %6.1f%%\n", c->name, c->pred_text, desc, f, d, f / d,
           100.0 * (double)hits_f / (double)c->n);
    qv_bench_record(b, c->name, "filter", "values_per_s", "min", f * 1e6, "values/s");
    qv_bench_record(b, c->name, "decode_compare", "values_per_s", "min", d * 1e6, "values/s");
    for (int64_t k = 0; k < nch; k++) {
        qv_decoder_close(dec[k]);
        qv_encoded_release(res, &enc[k]);
    }
    free(enc);
    free(dec);
    free(out);
    free(out2);
    free(vals);
    if (sdata) qv_free(res, sdata, scap);
}

static int64_t days(int y, int m, int d) {
    /* Days since 1970-01-01 (proleptic Gregorian). */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("filter", argc, argv);
    double sf = qv_bench_quick(b) ? 0.1 : 1.0;
    for (int i = 0; i < qv_bench_argc(b); i++)
        if (!strcmp(qv_bench_argv(b)[i], "--sf") && i + 1 < qv_bench_argc(b)) sf = atof(qv_bench_argv(b)[++i]);
    struct qv_error err;
    struct qv_pool *pool;
    struct qv_pool_options po = {.name = "bench-filter"};
    if (qv_pool_create(&po, &pool, &err) || qv_reservation_create(pool, NULL, &res, &err)) die("pool", &err);
    const int64_t orders = (int64_t)(1500000 * sf), cap = orders * 7 + 8;
    int32_t *ship = malloc((size_t)cap * 4), *moff = malloc((size_t)(cap + 1) * 4);
    int64_t *qty = malloc((size_t)cap * 8), *disc = malloc((size_t)cap * 8), *okey = malloc((size_t)cap * 8);
    uint8_t *mdata = malloc((size_t)cap * 8);
    static const char *modes[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
    const int64_t start = days(1992, 1, 1), end = days(1998, 12, 31);
    int64_t n = 0, mpos = 0;
    for (int64_t o = 0; o < orders; o++) {
        int64_t key = (o / 8) * 32 + (o % 8) + 1, odate = urand(start, end - 151);
        for (int l = 0, lines = (int)urand(1, 7); l < lines; l++, n++) {
            okey[n] = key;
            ship[n] = (int32_t)(odate + urand(1, 121));
            qty[n] = urand(1, 50);
            disc[n] = urand(0, 10);
            const char *md = modes[urand(0, 6)];
            moff[n] = (int32_t)mpos;
            memcpy(mdata + mpos, md, strlen(md));
            mpos += (int64_t)strlen(md);
        }
    }
    moff[n] = (int32_t)mpos;
    struct col cols[] = {
        {"l_shipdate", QV_KIND_INT32, n, ship, NULL,
         {.op = QV_ENC_OP_BETWEEN, .lo = days(1994, 1, 1), .hi = days(1994, 12, 31)}, "in 1994"},
        {"l_discount", QV_KIND_INT64, n, disc, NULL, {.op = QV_ENC_OP_BETWEEN, .lo = 5, .hi = 7},
         "between 5 and 7"},
        {"l_quantity", QV_KIND_INT64, n, qty, NULL, {.op = QV_ENC_OP_BETWEEN, .lo = -1000, .hi = 23},
         "< 24"},
        {"l_orderkey", QV_KIND_INT64, n, okey, NULL,
         {.op = QV_ENC_OP_BETWEEN, .lo = 100000, .hi = 200000}, "in [1e5, 2e5]"},
        {"l_shipmode", QV_KIND_BINARY, n, moff, mdata,
         {.op = QV_ENC_OP_EQ, .bytes = (const uint8_t *)"AIR", .len = 3}, "= 'AIR'"},
    };
    printf("Predicates on %lld rows (SF %.2g), chunks of %d, %d rows per call, 1 thread; M values/s\n",
           (long long)n, sf, CHUNK, BATCH);
    printf("%-12s %-16s %-48s %9s %9s %7s %7s\n", "column", "predicate", "encoding (first chunk)",
           "filter", "dec+cmp", "ratio", "pass");
    const int reps = qv_bench_quick(b) ? 3 : 5;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) bench_col(b, &cols[i], reps);
    free(ship);
    free(moff);
    free(qty);
    free(disc);
    free(okey);
    free(mdata);
    fflush(stdout);
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return qv_bench_close(b);
}
