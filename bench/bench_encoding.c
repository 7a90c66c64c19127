/*
 * bench/run encoding [--quick] [--json FILE] [--sf X] [--chunk N] [--kernels|--lineitem|--decode|--write]
 *
 * 1. Bit-unpacking kernels: one 1024-value vector at each width 1..32 into
 *    uint32 and uint64 outputs, in cache; baseline: memcpy of the same
 *    output bytes.
 * 2. TPC-H lineitem (dbgen-like synthetic columns, SF1 = 6M rows by default,
 *    SF 0.1 with --quick), cut into chunks: per column the chosen encoding,
 *    ratio, encode MB/s (of raw input) and full-decode MB/s (of output),
 *    alongside zstd -1 and lz4 over the raw bytes of the same chunks.
 *    Total encoded size of the table is printed against the 120 MB target.
 * 3. Random access: take() of 100 random rows (cold and warm decoder) and
 *    a 1000-row range decode, per encoding family.
 *
 * 4. Run-end decode (l_orderkey-like runs) and FSST decode (l_comment-like
 *    text, URL-like strings) on their own, one core (--decode: only this).
 * 5. Write-path cases (--write: only this): encode time of short strings
 *    with few distinct values, a small table's string chunks, decimal
 *    doubles and comment-like text.
 *
 * min and median over repeats are reported; the JSON records follow
 * DESIGN.md section 2.
 */
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "bench_common.h"
#include "encoding/enc_internal.h"
#include "quiver/encoding.h"

static struct qv_pool *pool;
static struct qv_reservation *res;

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench_encoding: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

static uint64_t rs = 42;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static int64_t urand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* ---- 1. Kernels ---- */

static void bench_kernels(struct qv_bench *b) {
    const int reps = qv_bench_quick(b) ? 5 : 15;
    const int iters = qv_bench_quick(b) ? 20000 : 100000;
    uint64_t in[QV__VEC];
    uint8_t *packed = aligned_alloc(64, 128 * 64);
    uint32_t *o32 = aligned_alloc(64, QV__VEC * 4);
    uint64_t *o64 = aligned_alloc(64, QV__VEC * 8);
    uint32_t tmp[QV__VEC];
    printf("\nBit-unpacking, one 1024-value vector in cache (G values/s; memcpy = copy of the output bytes)\n");
    printf("%5s %12s %12s %14s %14s\n", "width", "->u32", "->u64", "memcpy 4KiB", "memcpy 8KiB");
    double sum32 = 0, sum64 = 0;
    for (unsigned w = 1; w <= 32; w++) {
        for (int i = 0; i < QV__VEC; i++) in[i] = rnd() & qv__mask(w);
        qv__pack_vec(in, QV__VEC, w, packed, tmp);
        double s32[32], s64[32], m4[32], m8[32];
        for (int r = 0; r < reps; r++) {
            double t0 = qv_bench_now_s();
            for (int i = 0; i < iters; i++) {
                qv__unpack32((const uint32_t *)(void *)packed, w, o32, (uint32_t)i);
                qv_bench_sink(o32);
            }
            double t1 = qv_bench_now_s();
            for (int i = 0; i < iters; i++) {
                qv__unpack64(packed, w, o64, (uint64_t)i);
                qv_bench_sink(o64);
            }
            double t2 = qv_bench_now_s();
            for (int i = 0; i < iters; i++) {
                memcpy(o32, packed + (i & 1), QV__VEC * 4 - 64);
                qv_bench_sink(o32);
            }
            double t3 = qv_bench_now_s();
            for (int i = 0; i < iters; i++) {
                memcpy(o64, (const uint8_t *)o32 + (i & 1), QV__VEC * 4);
                memcpy((uint8_t *)o64 + QV__VEC * 4, packed + (i & 1), QV__VEC * 4 - 64);
                qv_bench_sink(o64);
            }
            double t4 = qv_bench_now_s();
            double v = (double)iters * QV__VEC / 1e9;
            s32[r] = v / (t1 - t0);
            s64[r] = v / (t2 - t1);
            m4[r] = v / (t3 - t2);
            m8[r] = v / (t4 - t3);
        }
        char cs[32];
        snprintf(cs, sizeof cs, "w%u", w);
        double a = qv_bench_record_samples(b, cs, "unpack_u32", "gvalues_per_s", s32, reps, "Gv/s");
        double c = qv_bench_record_samples(b, cs, "unpack_u64", "gvalues_per_s", s64, reps, "Gv/s");
        double d4 = qv_bench_record_samples(b, cs, "memcpy_4KiB", "gvalues_per_s", m4, reps, "Gv/s");
        double d8 = qv_bench_record_samples(b, cs, "memcpy_8KiB", "gvalues_per_s", m8, reps, "Gv/s");
        sum32 += a;
        sum64 += c;
        if (w <= 4 || w % 4 == 0 || w == 17 || w == 31)
            printf("%5u %12.2f %12.2f %14.2f %14.2f\n", w, a, c, d4, d8);
    }
    printf("%5s %12.2f %12.2f   (mean of medians over widths 1..32)\n", "mean", sum32 / 32, sum64 / 32);
    qv_bench_record(b, "w1-32", "unpack_u32", "gvalues_per_s", "value", sum32 / 32, "Gv/s");
    qv_bench_record(b, "w1-32", "unpack_u64", "gvalues_per_s", "value", sum64 / 32, "Gv/s");
    free(packed);
    free(o32);
    free(o64);
}

/* ---- 2. Lineitem ---- */

struct column {
    const char *name;
    enum qv_value_kind kind;
    int64_t n;
    void *values; /* words, or offsets for strings */
    uint8_t *data;
    int in_total; /* part of the lineitem total */
};

static const char *nouns[] = {"foxes", "ideas", "theodolites", "pinto beans", "instructions", "dependencies",
                              "excuses", "platelets", "asymptotes", "courts", "dolphins", "multipliers",
                              "sauternes", "warthogs", "frets", "dinos", "attainments", "somas", "Tiresias",
                              "patterns", "forges", "braids", "hockey players", "frays", "warhorses",
                              "dugouts", "notornis", "epitaphs", "pearls", "tithes", "waters", "orbits",
                              "gifts", "sheaves", "depths", "sentiments", "decoys", "realms", "pains",
                              "grouches", "escapades", "packages", "requests", "accounts", "deposits"};
static const char *verbs[] = {"sleep", "wake", "are", "cajole", "haggle", "nag", "use", "boost", "affix",
                              "detect", "integrate", "maintain", "nod", "was", "lose", "sublate", "solve",
                              "thrash", "promise", "engage", "hinder", "print", "x-ray", "breach", "eat",
                              "grow", "impress", "mold", "poach", "serve", "run", "dazzle", "snooze",
                              "doze", "unwind", "kindle", "play", "hang", "believe", "doubt"};
static const char *adjs[] = {"furious", "sly", "careful", "blithe", "quick", "fluffy", "slow", "quiet",
                             "ruthless", "thin", "close", "dogged", "daring", "brave", "stealthy",
                             "permanent", "enticing", "idle", "busy", "regular", "final", "ironic",
                             "even", "bold", "silent", "pending", "special", "express", "unusual"};
static const char *advs[] = {"sometimes", "always", "never", "furiously", "slyly", "carefully",
                             "blithely", "quickly", "fluffily", "slowly", "quietly", "ruthlessly",
                             "thinly", "closely", "doggedly", "daringly", "bravely", "stealthily",
                             "permanently", "enticingly", "idly", "busily", "regularly", "finally",
                             "ironically", "evenly", "boldly", "silently"};
static const char *preps[] = {"about", "above", "according to", "across", "after", "against", "along",
                              "alongside of", "among", "around", "at", "atop", "before", "behind",
                              "beneath", "beside", "besides", "between", "beyond", "by", "despite",
                              "during", "except", "for", "from", "in place of", "inside", "instead of",
                              "into", "near", "of", "on", "outside", "over", "past", "since", "through",
                              "throughout", "to", "toward", "under", "until", "up", "upon", "without",
                              "with", "within"};
static const char *terms[] = {".", ";", ":", "?", "!", "--"};
#define PICK(a) a[rnd() % (sizeof a / sizeof a[0])]

/* A pool of dbgen-like text; comments are random slices of it. */
static char *make_text(size_t len) {
    char *t = malloc(len + 64);
    size_t p = 0;
    while (p < len) {
        const char *parts[8];
        int k = 0;
        switch (rnd() % 4) {
        case 0: parts[k++] = PICK(adjs); parts[k++] = PICK(nouns); parts[k++] = PICK(verbs); parts[k++] = PICK(advs); break;
        case 1: parts[k++] = PICK(nouns); parts[k++] = PICK(verbs); parts[k++] = PICK(preps); parts[k++] = "the"; parts[k++] = PICK(adjs); parts[k++] = PICK(nouns); break;
        case 2: parts[k++] = PICK(advs); parts[k++] = PICK(adjs); parts[k++] = PICK(nouns); parts[k++] = PICK(verbs); break;
        default: parts[k++] = PICK(adjs); parts[k++] = PICK(nouns); parts[k++] = PICK(verbs); parts[k++] = PICK(preps); parts[k++] = "the"; parts[k++] = PICK(nouns); break;
        }
        for (int i = 0; i < k && p < len; i++) {
            size_t l = strlen(parts[i]);
            memcpy(t + p, parts[i], l);
            p += l;
            t[p++] = ' ';
        }
        const char *term = PICK(terms);
        p--; /* terminator replaces the last space */
        memcpy(t + p, term, strlen(term));
        p += strlen(term);
        t[p++] = ' ';
    }
    return t;
}

static void strings_col(struct column *c, int64_t n, const char *const *choices, const int *idx) {
    c->values = malloc((size_t)(n + 1) * 4);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += strlen(choices[idx[i]]);
    c->data = malloc(total + 1);
    int32_t *o = c->values;
    size_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        o[i] = (int32_t)p;
        size_t l = strlen(choices[idx[i]]);
        memcpy(c->data + p, choices[idx[i]], l);
        p += l;
    }
    o[n] = (int32_t)p;
}

static int64_t date_days(int y, int m, int d) {
    /* days since 1970-01-01 (civil from days, Howard Hinnant's algorithm) */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int ncols;
static struct column cols[24];

static void make_lineitem(double sf) {
    int64_t orders = (int64_t)(1500000 * sf);
    int64_t cap = orders * 7 + 8;
    int64_t *okey = malloc(cap * 8), *pkey = malloc(cap * 8), *skey = malloc(cap * 8);
    int64_t *lnum = malloc(cap * 8), *qty = malloc(cap * 8), *price = malloc(cap * 8);
    int64_t *disc = malloc(cap * 8), *tax = malloc(cap * 8);
    double *discf = malloc(cap * 8), *pricef = malloc(cap * 8);
    int32_t *ship = malloc(cap * 4), *commit = malloc(cap * 4), *receipt = malloc(cap * 4);
    int *rflag = malloc(cap * sizeof(int)), *lstatus = malloc(cap * sizeof(int));
    int *instr = malloc(cap * sizeof(int)), *mode = malloc(cap * sizeof(int));
    const int64_t start = date_days(1992, 1, 1), end = date_days(1998, 12, 31);
    const int64_t current = date_days(1995, 6, 17);
    const int64_t parts = (int64_t)(200000 * sf), supps = (int64_t)(10000 * sf);
    int64_t n = 0;
    for (int64_t o = 0; o < orders; o++) {
        int64_t key = (o / 8) * 32 + (o % 8) + 1; /* dbgen: 8 of every 32 keys used */
        int64_t odate = urand(start, end - 151);
        int lines = (int)urand(1, 7);
        for (int l = 1; l <= lines; l++, n++) {
            okey[n] = key;
            int64_t pk = urand(1, parts);
            pkey[n] = pk;
            int64_t i = urand(0, 3);
            skey[n] = (pk + (i * (supps / 4 + (pk - 1) / supps))) % supps + 1;
            lnum[n] = l;
            qty[n] = urand(1, 50);
            int64_t retail = 90000 + ((pk / 10) % 20001) + 100 * (pk % 1000);
            price[n] = qty[n] * retail;
            pricef[n] = (double)price[n] / 100.0;
            disc[n] = urand(0, 10);
            discf[n] = (double)disc[n] / 100.0;
            tax[n] = urand(0, 8);
            ship[n] = (int32_t)(odate + urand(1, 121));
            commit[n] = (int32_t)(odate + urand(30, 90));
            receipt[n] = (int32_t)(ship[n] + urand(1, 30));
            rflag[n] = receipt[n] <= current ? (rnd() & 1 ? 0 : 1) : 2;
            lstatus[n] = ship[n] > current ? 0 : 1;
            instr[n] = (int)urand(0, 3);
            mode[n] = (int)urand(0, 6);
        }
    }
    static const char *flags[] = {"R", "A", "N"}, *status[] = {"O", "F"};
    static const char *instrs[] = {"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"};
    static const char *modes[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
#define COL(nm, k, v, tot) cols[ncols++] = (struct column){nm, k, n, v, NULL, tot}
    COL("l_orderkey", QV_KIND_INT64, okey, 1);
    COL("l_partkey", QV_KIND_INT64, pkey, 1);
    COL("l_suppkey", QV_KIND_INT64, skey, 1);
    COL("l_linenumber", QV_KIND_INT64, lnum, 1);
    COL("l_quantity", QV_KIND_INT64, qty, 1);
    COL("l_extendedprice", QV_KIND_INT64, price, 1);
    COL("l_discount", QV_KIND_INT64, disc, 1);
    COL("l_tax", QV_KIND_INT64, tax, 1);
    struct column *c;
    c = &cols[ncols++]; *c = (struct column){"l_returnflag", QV_KIND_BINARY, n, NULL, NULL, 1};
    strings_col(c, n, flags, rflag);
    c = &cols[ncols++]; *c = (struct column){"l_linestatus", QV_KIND_BINARY, n, NULL, NULL, 1};
    strings_col(c, n, status, lstatus);
    COL("l_shipdate", QV_KIND_INT32, ship, 1);
    COL("l_commitdate", QV_KIND_INT32, commit, 1);
    COL("l_receiptdate", QV_KIND_INT32, receipt, 1);
    c = &cols[ncols++]; *c = (struct column){"l_shipinstruct", QV_KIND_BINARY, n, NULL, NULL, 1};
    strings_col(c, n, instrs, instr);
    c = &cols[ncols++]; *c = (struct column){"l_shipmode", QV_KIND_BINARY, n, NULL, NULL, 1};
    strings_col(c, n, modes, mode);
    /* l_comment: slices of 10..43 bytes from a dbgen-like text pool. */
    size_t pool_len = 10 << 20;
    char *text = make_text(pool_len);
    c = &cols[ncols++]; *c = (struct column){"l_comment", QV_KIND_BINARY, n, NULL, NULL, 1};
    int32_t *off = malloc((size_t)(n + 1) * 4);
    c->data = malloc((size_t)n * 43 + 1);
    size_t p = 0;
    for (int64_t i = 0; i < n; i++) {
        off[i] = (int32_t)p;
        size_t l = (size_t)urand(10, 43), at = (size_t)urand(0, (int64_t)(pool_len - l));
        memcpy(c->data + p, text + at, l);
        p += l;
    }
    off[n] = (int32_t)p;
    c->values = off;
    free(text);
    /* Extra (not part of the total): the same decimals as float64, for ALP. */
    COL("discount_f64", QV_KIND_FLOAT64, discf, 0);
    COL("extprice_f64", QV_KIND_FLOAT64, pricef, 0);
    free(rflag);
    free(lstatus);
    free(instr);
    free(mode);
#undef COL
}

static size_t width_of(enum qv_value_kind k) {
    switch (k) {
    case QV_KIND_INT32:
    case QV_KIND_FLOAT32: return 4;
    case QV_KIND_BINARY: return 0;
    default: return 8;
    }
}

/* Raw bytes of rows [a, b): values (strings: data + int32 offsets). */
static const void *raw_range(const struct column *c, int64_t a, int64_t b, size_t *len, uint8_t *scratch) {
    if (c->kind != QV_KIND_BINARY) {
        *len = (size_t)(b - a) * width_of(c->kind);
        return (const uint8_t *)c->values + (size_t)a * width_of(c->kind);
    }
    const int32_t *o = c->values;
    size_t dl = (size_t)(o[b] - o[a]);
    memcpy(scratch, c->data + o[a], dl);
    memcpy(scratch + dl, o + a, (size_t)(b - a + 1) * 4);
    *len = dl + (size_t)(b - a + 1) * 4;
    return scratch;
}

static void bench_lineitem(struct qv_bench *b, double sf, int64_t chunk) {
    double t0 = qv_bench_now_s();
    make_lineitem(sf);
    int64_t rows = cols[0].n;
    printf("\nTPC-H lineitem SF %.2g: %lld rows, chunks of %lld rows (generated in %.1f s)\n", sf,
           (long long)rows, (long long)chunk, qv_bench_now_s() - t0);
    const int reps = qv_bench_quick(b) ? 2 : 3;
    printf("%-16s %-44s %7s %9s %9s | %7s %8s %8s | %7s %8s %8s | %8s\n", "column", "encoding (first chunk)",
           "ratio", "enc MB/s", "dec MB/s", "zstd-1", "enc", "dec", "lz4", "enc", "dec", "memcpy");
    uint64_t total_enc = 0, total_raw = 0, total_zstd = 0;
    size_t scratch_cap = (size_t)chunk * 48 + 64;
    uint8_t *scratch = malloc(scratch_cap), *comp = malloc(ZSTD_compressBound(scratch_cap));
    uint8_t *back = malloc(scratch_cap);
    for (int ci = 0; ci < ncols; ci++) {
        struct column *c = &cols[ci];
        int64_t nch = (rows + chunk - 1) / chunk;
        struct qv_encoded *enc = calloc((size_t)nch, sizeof *enc);
        double es[8], ds[8], zs_e[8], zs_d[8], lz_e[8], lz_d[8], mc[8];
        uint64_t raw = 0, encb = 0, zb = 0, lb = 0;
        char desc[256] = "";
        for (int r = 0; r < reps; r++) {
            raw = encb = zb = lb = 0;
            double te = 0, td = 0, tze = 0, tzd = 0, tle = 0, tld = 0, tm = 0;
            for (int64_t k = 0; k < nch; k++) {
                int64_t a = k * chunk, bnd = a + chunk < rows ? a + chunk : rows, m = bnd - a;
                struct qv_values v = {c->kind, 0, m, 0, NULL, NULL};
                if (c->kind == QV_KIND_BINARY) {
                    v.values = (const int32_t *)c->values + a;
                    v.data = c->data;
                } else {
                    v.values = (const uint8_t *)c->values + (size_t)a * width_of(c->kind);
                }
                struct qv_error err = {0};
                if (enc[k].data) qv_encoded_release(res, &enc[k]);
                double s0 = qv_bench_now_s();
                if (qv_encode(&v, NULL, res, &enc[k], &err)) die("encode", &err);
                double s1 = qv_bench_now_s();
                te += s1 - s0;
                encb += enc[k].size;
                if (k == 0 && r == 0) {
                    if (qv_enc_describe(enc[k].data, enc[k].size, res, desc, sizeof desc, &err) == EOVERFLOW)
                        strcpy(desc + sizeof desc - 5, "...");
                }
                /* decode */
                struct qv_decode_out o = {0};
                size_t w = width_of(c->kind);
                o.values = malloc((size_t)(m + 1) * (w ? w : 4));
                s0 = qv_bench_now_s();
                if (qv_decode(enc[k].data, enc[k].size, c->kind, 0, m, res, &o, &err)) die("decode", &err);
                s1 = qv_bench_now_s();
                td += s1 - s0;
                if (o.data) qv_free(res, o.data, o.data_capacity);
                free(o.values);
                /* references over the raw bytes */
                size_t rl;
                const void *rp = raw_range(c, a, bnd, &rl, scratch);
                raw += rl;
                s0 = qv_bench_now_s();
                memcpy(back, rp, rl);
                qv_bench_sink(back);
                tm += qv_bench_now_s() - s0;
                s0 = qv_bench_now_s();
                size_t zl = ZSTD_compress(comp, ZSTD_compressBound(rl), rp, rl, 1);
                s1 = qv_bench_now_s();
                ZSTD_decompress(back, scratch_cap, comp, zl);
                double s2 = qv_bench_now_s();
                tze += s1 - s0;
                tzd += s2 - s1;
                zb += zl;
                s0 = qv_bench_now_s();
                int ll = LZ4_compress_default(rp, (char *)comp, (int)rl, LZ4_compressBound((int)rl));
                s1 = qv_bench_now_s();
                LZ4_decompress_safe((const char *)comp, (char *)back, ll, (int)scratch_cap);
                s2 = qv_bench_now_s();
                tle += s1 - s0;
                tld += s2 - s1;
                lb += (uint64_t)ll;
            }
            es[r] = raw / te / 1e6;
            ds[r] = raw / td / 1e6;
            zs_e[r] = raw / tze / 1e6;
            zs_d[r] = raw / tzd / 1e6;
            lz_e[r] = raw / tle / 1e6;
            lz_d[r] = raw / tld / 1e6;
            mc[r] = raw / tm / 1e6;
        }
        double ratio = (double)raw / encb;
        double em = qv_bench_record_samples(b, c->name, "quiver", "encode_mb_per_s", es, reps, "MB/s");
        double dm = qv_bench_record_samples(b, c->name, "quiver", "decode_mb_per_s", ds, reps, "MB/s");
        double zem = qv_bench_record_samples(b, c->name, "zstd-1", "encode_mb_per_s", zs_e, reps, "MB/s");
        double zdm = qv_bench_record_samples(b, c->name, "zstd-1", "decode_mb_per_s", zs_d, reps, "MB/s");
        double lem = qv_bench_record_samples(b, c->name, "lz4", "encode_mb_per_s", lz_e, reps, "MB/s");
        double ldm = qv_bench_record_samples(b, c->name, "lz4", "decode_mb_per_s", lz_d, reps, "MB/s");
        double mm = qv_bench_record_samples(b, c->name, "memcpy", "copy_mb_per_s", mc, reps, "MB/s");
        qv_bench_record(b, c->name, "quiver", "ratio", "value", ratio, "x");
        qv_bench_record(b, c->name, "quiver", "encoded_bytes", "value", (double)encb, "B");
        qv_bench_record(b, c->name, "zstd-1", "ratio", "value", (double)raw / zb, "x");
        qv_bench_record(b, c->name, "lz4", "ratio", "value", (double)raw / lb, "x");
        if (strlen(desc) > 44) strcpy(desc + 41, "...");
        printf("%-16s %-44s %7.2f %9.0f %9.0f | %7.2f %8.0f %8.0f | %7.2f %8.0f %8.0f | %8.0f\n", c->name, desc,
               ratio, em, dm, (double)raw / zb, zem, zdm, (double)raw / lb, lem, ldm, mm);
        if (c->in_total) {
            total_enc += encb;
            total_raw += raw;
            total_zstd += zb;
        }
        for (int64_t k = 0; k < nch; k++) qv_encoded_release(res, &enc[k]);
        free(enc);
    }
    printf("%-16s %-44s %7.2f   total %.1f MB encoded (raw %.1f MB, zstd-1 %.1f MB); SF1 target <= 120 MB"
           " -> scaled %.1f MB\n",
           "lineitem", "", (double)total_raw / total_enc, total_enc / 1e6, total_raw / 1e6,
           total_zstd / 1e6, total_enc / 1e6 / sf);
    qv_bench_record(b, "lineitem", "quiver", "encoded_bytes", "value", (double)total_enc, "B");
    qv_bench_record(b, "lineitem", "quiver", "encoded_mb_at_sf1", "value", total_enc / 1e6 / sf, "MB");
    qv_bench_record(b, "lineitem", "zstd-1", "encoded_bytes", "value", (double)total_zstd, "B");
    qv_bench_record(b, "lineitem", "raw", "bytes", "value", (double)total_raw, "B");
    free(scratch);
    free(comp);
    free(back);
}

/* ---- 3. Random access ---- */

/* take() of 100 sorted random rows from one chunk: cold (open + take on a
 * fresh decoder) and warm (repeated on an open decoder); and a 1000-row
 * range decode in the middle of the chunk. */
static void bench_random_access(struct qv_bench *b, int64_t chunk) {
    static const char *names[] = {"l_orderkey", "l_partkey", "l_shipdate", "l_shipmode", "l_comment",
                                  "extprice_f64"};
    printf("\nRandom access in one chunk of %lld rows (microseconds)\n", (long long)chunk);
    printf("%-16s %-10s %14s %14s %16s\n", "column", "root", "take100 cold", "take100 warm", "range1000 warm");
    for (size_t ni = 0; ni < sizeof names / sizeof names[0]; ni++) {
        struct column *c = NULL;
        for (int i = 0; i < ncols; i++)
            if (!strcmp(cols[i].name, names[ni])) c = &cols[i];
        if (!c) continue;
        int64_t m = c->n < chunk ? c->n : chunk;
        struct qv_values v = {c->kind, 0, m, 0, c->values, c->data};
        struct qv_encoded e;
        struct qv_error err;
        if (qv_encode(&v, NULL, res, &e, &err)) die("encode", &err);
        int64_t rows[100];
        size_t w = width_of(c->kind);
        struct qv_decode_out o = {0};
        o.values = malloc((size_t)1001 * (w ? w : 4));
        const int reps = qv_bench_quick(b) ? 20 : 100;
        double cold[100], warm[100], range[100];
        for (int r = 0; r < reps; r++) {
            for (int i = 0; i < 100; i++) rows[i] = (int64_t)(rnd() % (uint64_t)m);
            for (int i = 1; i < 100; i++)
                for (int j = i; j > 0 && rows[j - 1] > rows[j]; j--) {
                    int64_t t = rows[j];
                    rows[j] = rows[j - 1];
                    rows[j - 1] = t;
                }
            double t0 = qv_bench_now_s();
            struct qv_decoder *d;
            if (qv_decoder_open(e.data, e.size, c->kind, 0, m, res, &d, &err)) die("open", &err);
            o.data_size = 0;
            if (qv_decoder_take(d, rows, 100, &o, &err)) die("take", &err);
            double t1 = qv_bench_now_s();
            o.data_size = 0;
            if (qv_decoder_take(d, rows, 100, &o, &err)) die("take", &err);
            double t2 = qv_bench_now_s();
            o.data_size = 0;
            if (qv_decoder_decode_range(d, m / 2, 1000 < m / 2 ? 1000 : m / 2, &o, &err)) die("range", &err);
            double t3 = qv_bench_now_s();
            qv_decoder_close(d);
            cold[r] = (t1 - t0) * 1e6;
            warm[r] = (t2 - t1) * 1e6;
            range[r] = (t3 - t2) * 1e6;
        }
        double a = qv_bench_record_samples(b, c->name, "take100_cold", "latency_us", cold, reps, "us");
        double w2 = qv_bench_record_samples(b, c->name, "take100_warm", "latency_us", warm, reps, "us");
        double rr = qv_bench_record_samples(b, c->name, "range1000_warm", "latency_us", range, reps, "us");
        printf("%-16s %-10s %14.1f %14.1f %16.1f\n", c->name, qv_encoding_name(e.data[0]), a, w2, rr);
        if (o.data) qv_free(res, o.data, o.data_capacity);
        free(o.values);
        qv_encoded_release(res, &e);
    }
}

/* ---- 4. Run-end and FSST decode ----
 * The two string/run decoders of issue 14 on their own, one core, through
 * the public API only (so the same source measures an older library too):
 * l_orderkey-like runs (1..7 equal keys per order, as dbgen makes them)
 * forced to run-end, and l_comment-like text and URL-like strings forced to
 * FSST, in chunks of `chunk` rows. Run-end: full decodes (open + decode +
 * close per chunk) and decodes in scan batches of 16,384 rows on an open
 * decoder and the whole chunk once more on that decoder (run ends and
 * values already decoded), in values/s; takes of 100 sorted random rows per chunk on a
 * fresh decoder, cold (with the open) and warm.
 * FSST: full decodes in GB/s of string bytes produced. Timed in thread
 * CPU time (per core). */

static const char *url_words[] = {"news", "shop", "blog", "media", "static", "cdn", "api", "docs",
                                  "forum", "mail", "maps", "video", "search", "photos", "wiki",
                                  "store", "cloud", "data", "app", "login"};
static const char *url_tlds[] = {"com", "org", "net", "de", "co.uk", "io", "fr", "jp"};
static const char *url_dirs[] = {"article", "product", "category", "user", "item", "page", "tag",
                                 "2024", "2025", "en", "de", "search", "view", "id", "images",
                                 "assets", "releases", "download", "posts", "comments"};
static const char *url_keys[] = {"id", "q", "ref", "utm_source", "page", "sort", "lang", "s"};

static size_t make_url(char *b) {
    int k = sprintf(b, "%s://%s%s.%s%s.%s", rnd() % 8 ? "https" : "http", rnd() % 3 ? "www." : "",
                    PICK(url_words), PICK(nouns), rnd() % 2 ? "-online" : "", PICK(url_tlds));
    for (int d = (int)urand(1, 4); d > 0; d--) k += sprintf(b + k, "/%s", PICK(url_dirs));
    if (rnd() % 2) k += sprintf(b + k, "/%llu", (unsigned long long)urand(1, 99999999));
    if (rnd() % 3 == 0) k += sprintf(b + k, "-%s-%s.html", PICK(adjs), PICK(nouns));
    if (rnd() % 2)
        k += sprintf(b + k, "?%s=%llx", PICK(url_keys), (unsigned long long)(rnd() & 0xFFFFFF));
    for (int i = 0; i < k; i++) /* spaces from the multi-word nouns */
        if (b[i] == ' ') b[i] = '_';
    return (size_t)k;
}

struct dcol {
    const char *name;
    enum qv_value_kind kind;
    int64_t n;
    int64_t *keys;    /* run-end column */
    int32_t *off;     /* string columns */
    char *data;
};

static void make_decode_cols(int64_t rows, struct dcol *ok, struct dcol *cm, struct dcol *url) {
    ok->name = "l_orderkey";
    ok->kind = QV_KIND_INT64;
    ok->keys = malloc((size_t)rows * 8);
    for (int64_t o = 0, n = 0; n < rows; o++) {
        int64_t key = (o / 8) * 32 + (o % 8) + 1; /* dbgen: 8 of every 32 keys used */
        for (int l = (int)urand(1, 7); l > 0 && n < rows; l--) ok->keys[n++] = key;
    }
    ok->n = rows;
    size_t pool_len = 10 << 20;
    char *text = make_text(pool_len);
    cm->name = "l_comment";
    cm->kind = QV_KIND_BINARY;
    cm->n = rows;
    cm->off = malloc((size_t)(rows + 1) * 4);
    cm->data = malloc((size_t)rows * 43 + 1);
    size_t p = 0;
    for (int64_t i = 0; i < rows; i++) {
        cm->off[i] = (int32_t)p;
        size_t l = (size_t)urand(10, 43), at = (size_t)urand(0, (int64_t)(pool_len - l));
        memcpy(cm->data + p, text + at, l);
        p += l;
    }
    cm->off[rows] = (int32_t)p;
    free(text);
    url->name = "urls";
    url->kind = QV_KIND_BINARY;
    url->n = rows;
    url->off = malloc((size_t)(rows + 1) * 4);
    url->data = malloc((size_t)rows * 256 + 256);
    p = 0;
    for (int64_t i = 0; i < rows; i++) {
        url->off[i] = (int32_t)p;
        p += make_url(url->data + p);
    }
    url->off[rows] = (int32_t)p;
}

/* Encodes c in chunks with `force` at the root; returns the chunks. */
static struct qv_encoded *encode_chunks(const struct dcol *c, int64_t chunk, int force, char *desc,
                                        size_t desc_cap, uint64_t *bytes) {
    int64_t nch = (c->n + chunk - 1) / chunk;
    struct qv_encoded *e = calloc((size_t)nch, sizeof *e);
    struct qv_encode_options opts = {0};
    opts.force = force;
    *bytes = 0;
    for (int64_t k = 0; k < nch; k++) {
        int64_t a = k * chunk, m = a + chunk < c->n ? chunk : c->n - a;
        struct qv_values v = {c->kind, 0, m, 0, NULL, NULL};
        if (c->kind == QV_KIND_BINARY) {
            v.values = c->off + a;
            v.data = (const uint8_t *)c->data;
        } else {
            v.values = c->keys + a;
        }
        struct qv_error err = {0};
        if (qv_encode(&v, &opts, res, &e[k], &err)) die("encode", &err);
        *bytes += e[k].size;
        if (k == 0 && qv_enc_describe(e[k].data, e[k].size, res, desc, desc_cap, &err) == EOVERFLOW)
            strcpy(desc + desc_cap - 5, "...");
    }
    return e;
}

/* Thread CPU time: figures per core that other processes on a shared
 * machine do not inflate (they still share its caches). */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double best(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

static void bench_decode(struct qv_bench *b, int64_t chunk) {
    const int64_t rows = qv_bench_quick(b) ? 600000 : 6000000;
    const int reps = qv_bench_quick(b) ? 3 : 7;
    struct dcol ok = {0}, cm = {0}, url = {0};
    make_decode_cols(rows, &ok, &cm, &url);
    const int64_t nch = (rows + chunk - 1) / chunk;
    struct qv_error err = {0};
    char desc[256];
    uint64_t ebytes;
    printf("\nRun-end and FSST decode, one core, %lld rows in chunks of %lld (min / median of %d)\n",
           (long long)rows, (long long)chunk, reps);

    /* Run-end. */
    struct qv_encoded *e = encode_chunks(&ok, chunk, QV_ENC_RLE, desc, sizeof desc, &ebytes);
    printf("%-12s %s (%.2f bytes/value)\n", ok.name, desc, (double)ebytes / (double)rows);
    int64_t *outv = malloc((size_t)chunk * 8);
    double full[16], batch[16], again[16], take[16], takew[16];
    const int64_t bsz = 16384;
    int64_t trows[100];
    for (int r = 0; r < reps; r++) {
        double tf = 0;
        for (int64_t k = 0; k < nch; k++) {
            int64_t m = k * chunk + chunk < rows ? chunk : rows - k * chunk;
            struct qv_decode_out o = {outv, 0, NULL, 0, 0};
            double s0 = cpu_now();
            if (qv_decode(e[k].data, e[k].size, ok.kind, 0, m, res, &o, &err)) die("decode", &err);
            tf += cpu_now() - s0;
            for (int64_t i = 0; i < m; i += 4099)
                if (outv[i] != ok.keys[k * chunk + i]) die("run-end decode differs", NULL);
        }
        double tc = 0, tw = 0, tb = 0, tr = 0;
        for (int64_t k = 0; k < nch; k++) {
            int64_t m = k * chunk + chunk < rows ? chunk : rows - k * chunk;
            struct qv_decoder *d;
            struct qv_decode_out o = {outv, 0, NULL, 0, 0};
            double s0 = cpu_now();
            if (qv_decoder_open(e[k].data, e[k].size, ok.kind, 0, m, res, &d, &err)) die("open", &err);
            for (int64_t s = 0; s < m; s += bsz) {
                o.values = outv + s;
                if (qv_decoder_decode_range(d, s, s + bsz < m ? bsz : m - s, &o, &err)) die("range", &err);
            }
            tb += cpu_now() - s0;
            /* The chunk again on the same decoder: ends and values known. */
            o.values = outv;
            s0 = cpu_now();
            if (qv_decoder_decode_range(d, 0, m, &o, &err)) die("range", &err);
            tr += cpu_now() - s0;
            for (int64_t i = 0; i < m; i += 4099)
                if (outv[i] != ok.keys[k * chunk + i]) die("run-end range decode differs", NULL);
            qv_decoder_close(d);
            /* Takes on a fresh decoder: cold (open + take), then warm. */
            for (int pass = 0; pass < 2; pass++) {
                for (int i = 0; i < 100; i++) trows[i] = (int64_t)(rnd() % (uint64_t)m);
                for (int i = 1; i < 100; i++)
                    for (int j = i; j > 0 && trows[j - 1] > trows[j]; j--) {
                        int64_t x = trows[j];
                        trows[j] = trows[j - 1];
                        trows[j - 1] = x;
                    }
                s0 = cpu_now();
                if (!pass && qv_decoder_open(e[k].data, e[k].size, ok.kind, 0, m, res, &d, &err))
                    die("open", &err);
                o.values = outv;
                if (qv_decoder_take(d, trows, 100, &o, &err)) die("take", &err);
                *(pass ? &tw : &tc) += cpu_now() - s0;
                for (int i = 0; i < 100; i++)
                    if (outv[i] != ok.keys[k * chunk + trows[i]]) die("run-end take differs", NULL);
            }
            qv_decoder_close(d);
        }
        full[r] = (double)rows / tf / 1e9;
        batch[r] = (double)rows / tb / 1e9;
        again[r] = (double)rows / tr / 1e9;
        take[r] = tc / (double)nch * 1e6;
        takew[r] = tw / (double)nch * 1e6;
    }
    printf("%-12s %-34s %8.2f / %8.2f G values/s\n", "", "full decode (open + all + close)",
           best(full, reps), qv_bench_median(full, reps));
    printf("%-12s %-34s %8.2f / %8.2f G values/s\n", "", "scan batches of 16384 rows",
           best(batch, reps), qv_bench_median(batch, reps));
    printf("%-12s %-34s %8.2f / %8.2f G values/s\n", "", "whole chunk again, same decoder",
           best(again, reps), qv_bench_median(again, reps));
    printf("%-12s %-34s %8.2f / %8.2f us\n", "", "take 100 sorted rows, cold (+open)",
           qv_bench_min(take, reps), qv_bench_median(take, reps));
    printf("%-12s %-34s %8.2f / %8.2f us\n", "", "take 100 sorted rows, warm",
           qv_bench_min(takew, reps), qv_bench_median(takew, reps));
    qv_bench_record_samples(b, ok.name, "rle_full", "gvalues_per_s", full, reps, "Gv/s");
    qv_bench_record_samples(b, ok.name, "rle_batches16k", "gvalues_per_s", batch, reps, "Gv/s");
    qv_bench_record_samples(b, ok.name, "rle_again", "gvalues_per_s", again, reps, "Gv/s");
    qv_bench_record_samples(b, ok.name, "rle_take100_cold", "latency_us", take, reps, "us");
    qv_bench_record_samples(b, ok.name, "rle_take100_warm", "latency_us", takew, reps, "us");
    for (int64_t k = 0; k < nch; k++) qv_encoded_release(res, &e[k]);
    free(e);
    free(outv);

    /* FSST. */
    struct dcol *sc[2] = {&cm, &url};
    int32_t *offs = malloc((size_t)(chunk + 1) * 4);
    for (int ci = 0; ci < 2; ci++) {
        struct dcol *c = sc[ci];
        e = encode_chunks(c, chunk, QV_ENC_FSST, desc, sizeof desc, &ebytes);
        uint64_t raw = (uint64_t)c->off[rows];
        printf("%-12s %s (ratio %.2f, %.1f bytes/string)\n", c->name, desc, (double)raw / (double)ebytes,
               (double)raw / (double)rows);
        double gbs[16];
        struct qv_decode_out o = {offs, 0, NULL, 0, 0};
        for (int r = 0; r < reps; r++) {
            double td = 0;
            for (int64_t k = 0; k < nch; k++) {
                int64_t m = k * chunk + chunk < rows ? chunk : rows - k * chunk;
                o.data_size = 0;
                double s0 = cpu_now();
                if (qv_decode(e[k].data, e[k].size, c->kind, 0, m, res, &o, &err)) die("decode", &err);
                td += cpu_now() - s0;
                const int32_t *in = c->off + k * chunk;
                if (o.data_size != (size_t)(in[m] - in[0]) ||
                    memcmp(o.data, c->data + in[0], o.data_size))
                    die("fsst decode differs", NULL);
            }
            gbs[r] = (double)raw / td / 1e9;
        }
        printf("%-12s %-34s %8.2f / %8.2f GB/s\n", "", "full decode (open + all + close)", best(gbs, reps),
               qv_bench_median(gbs, reps));
        qv_bench_record_samples(b, c->name, "fsst_full", "decode_gb_per_s", gbs, reps, "GB/s");
        if (o.data) qv_free(res, o.data, o.data_capacity);
        for (int64_t k = 0; k < nch; k++) qv_encoded_release(res, &e[k]);
        free(e);
    }
    free(offs);
    free(ok.keys);
    free(cm.off);
    free(cm.data);
    free(url.off);
    free(url.data);
}

/* ---- 5. Write-path cases (--write) ----
 * Encode time per chunk of the shapes issue 15 names as slow to write:
 * short strings with few distinct values (a dictionary wins; FSST must not
 * be trained), a small table's string chunks (1000 rows, 49 distinct: the
 * per-chunk fixed costs dominate), decimal doubles (ALP's (e, f) search)
 * and comment-like text (FSST training on every chunk). Encode time is the
 * sum over chunks of qv_encode, min and median over repeats. */

struct wcase {
    const char *name;
    struct column col;
    int64_t chunk;
};

static void bench_write_case(struct qv_bench *b, const struct wcase *w, int reps) {
    const struct column *c = &w->col;
    int64_t nch = (c->n + w->chunk - 1) / w->chunk;
    double ts[16];
    uint64_t bytes = 0;
    char desc[256] = "";
    for (int r = 0; r < reps; r++) {
        double t = 0;
        bytes = 0;
        for (int64_t k = 0; k < nch; k++) {
            int64_t a = k * w->chunk, m = a + w->chunk < c->n ? w->chunk : c->n - a;
            struct qv_values v = {c->kind, 0, m, 0, NULL, NULL};
            if (c->kind == QV_KIND_BINARY) {
                v.values = (const int32_t *)c->values + a;
                v.data = c->data;
            } else {
                v.values = (const uint8_t *)c->values + (size_t)a * width_of(c->kind);
            }
            struct qv_error err = {0};
            struct qv_encoded enc = {0};
            double s0 = qv_bench_now_s();
            if (qv_encode(&v, NULL, res, &enc, &err)) die("encode", &err);
            t += qv_bench_now_s() - s0;
            bytes += enc.size;
            if (k == 0 && r == 0 &&
                qv_enc_describe(enc.data, enc.size, res, desc, sizeof desc, &err) == EOVERFLOW)
                strcpy(desc + sizeof desc - 5, "...");
            qv_encoded_release(res, &enc);
        }
        ts[r] = t * 1e3;
    }
    double med = qv_bench_record_samples(b, w->name, "quiver", "encode_ms", ts, reps, "ms");
    double mn = ts[0];
    for (int r = 1; r < reps; r++) mn = ts[r] < mn ? ts[r] : mn;
    qv_bench_record(b, w->name, "quiver", "encoded_bytes", "value", (double)bytes, "B");
    if (strlen(desc) > 40) strcpy(desc + 37, "...");
    printf("%-22s %9lld %7lld  %-40s %11llu %9.2f %9.2f %9.1f\n", w->name, (long long)c->n,
           (long long)w->chunk, desc, (unsigned long long)bytes, mn, med,
           mn * 1e6 / (double)nch / 1e3);
}

static void bench_write(struct qv_bench *b) {
    const int reps = qv_bench_quick(b) ? 3 : 7;
    const int64_t big = qv_bench_quick(b) ? 600000 : 3000000;
    struct wcase cases[4];
    memset(cases, 0, sizeof cases);
    /* Three-letter codes, 230 distinct, skewed (weight 1 / rank). */
    static char codes[230][4];
    const char *cp[230];
    for (int i = 0; i < 230; i++) {
        for (int j = 0; j < 3; j++) codes[i][j] = (char)('A' + rnd() % 26);
        cp[i] = codes[i];
    }
    int *idx = malloc((size_t)big * sizeof *idx);
    double hsum = 0;
    for (int i = 0; i < 230; i++) hsum += 1.0 / (i + 1);
    for (int64_t i = 0; i < big; i++) {
        double u = (double)(rnd() >> 11) / 9007199254740992.0 * hsum, acc = 0;
        int k = 0;
        while (k < 229 && (acc += 1.0 / (k + 1)) < u) k++;
        idx[i] = k;
    }
    cases[0] = (struct wcase){"short_str_230", {"codes", QV_KIND_BINARY, big, NULL, NULL, 0}, 131072};
    strings_col(&cases[0].col, big, cp, idx);
    /* A small table's column: 200 chunks of 1000 rows, 49 distinct. */
    static char cats[49][16];
    const char *catp[49];
    for (int i = 0; i < 49; i++) {
        snprintf(cats[i], sizeof cats[i], "category %d", i);
        catp[i] = cats[i];
    }
    const int64_t small = 200000;
    for (int64_t i = 0; i < small; i++) idx[i] = (int)(rnd() % 49);
    cases[1] = (struct wcase){"small_str_49", {"cat", QV_KIND_BINARY, small, NULL, NULL, 0}, 1000};
    strings_col(&cases[1].col, small, catp, idx);
    /* Prices with two decimals. */
    double *pr = malloc((size_t)big * 8);
    for (int64_t i = 0; i < big; i++) pr[i] = (double)urand(100, 10000000) / 100.0;
    cases[2] = (struct wcase){"decimal_f64", {"price", QV_KIND_FLOAT64, big, pr, NULL, 0}, 131072};
    /* Comment-like text, 10 to 43 bytes. */
    const int64_t nt = big / 3;
    char *text = make_text((size_t)nt * 27 + 1024);
    int32_t *to = malloc((size_t)(nt + 1) * 4);
    int64_t at = 0;
    for (int64_t i = 0; i < nt; i++) {
        to[i] = (int32_t)at;
        at += urand(10, 43);
    }
    to[nt] = (int32_t)at;
    cases[3] = (struct wcase){"comment_text", {"comment", QV_KIND_BINARY, nt, to, (uint8_t *)text, 0}, 131072};
    free(idx);
    printf("\nWrite-path cases: qv_encode time summed over chunks (ms), min and median of %d\n", reps);
    printf("%-22s %9s %7s  %-40s %11s %9s %9s %9s\n", "case", "values", "chunk", "encoding (first chunk)",
           "bytes", "min ms", "med ms", "us/chunk");
    for (int i = 0; i < 4; i++) {
        bench_write_case(b, &cases[i], reps);
        if (cases[i].col.kind == QV_KIND_BINARY) free(cases[i].col.values);
        if (cases[i].col.data != (uint8_t *)text) free(cases[i].col.data);
    }
    free(pr);
    free(text);
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("encoding", argc, argv);
    double sf = qv_bench_quick(b) ? 0.1 : 1.0;
    int64_t chunk = 131072; /* the writer's default row group */
    int only_kernels = 0, only_lineitem = 0, only_decode = 0, only_write = 0;
    for (int i = 0; i < qv_bench_argc(b); i++) {
        const char *a = qv_bench_argv(b)[i];
        if (!strcmp(a, "--sf") && i + 1 < qv_bench_argc(b)) sf = atof(qv_bench_argv(b)[++i]);
        else if (!strcmp(a, "--chunk") && i + 1 < qv_bench_argc(b)) chunk = atoll(qv_bench_argv(b)[++i]);
        else if (!strcmp(a, "--kernels")) only_kernels = 1;
        else if (!strcmp(a, "--lineitem")) only_lineitem = 1;
        else if (!strcmp(a, "--decode")) only_decode = 1;
        else if (!strcmp(a, "--write")) only_write = 1;
    }
    struct qv_error err;
    struct qv_pool_options po = {0};
    po.name = "bench-encoding";
    if (qv_pool_create(&po, &pool, &err) || qv_reservation_create(pool, NULL, &res, &err)) die("pool", &err);
    if (only_write) {
        bench_write(b);
    } else if (only_decode) {
        bench_decode(b, chunk);
    } else {
        if (!only_lineitem) bench_kernels(b);
        if (!only_kernels) {
            bench_lineitem(b, sf, chunk);
            bench_random_access(b, chunk);
            bench_decode(b, chunk);
            bench_write(b);
        }
    }
    fflush(stdout); /* before the JSON note on stderr */
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return qv_bench_close(b);
}
