/*
 * bench/run nulls [--quick] [--json FILE] [--rows N]
 *
 * What the writer's fill of null slots (core/src/format/null_fill.c) buys,
 * per column shape with nulls: the encoded bytes of the values segment with
 * the producer's bytes kept under the nulls (what format 2.0 writers
 * stored), with each fill forced (zero / empty, previous non-null value,
 * most frequent value) and with the writer's automatic choice; next to it
 * the validity segment, and the non-null values alone encoded as a chunk of
 * their own: what a values segment without null slots (a format change)
 * would take. "dup" = auto - non-null-only = what the null positions cost a
 * second time inside the values segment (sparse positions, run ends,
 * dictionary codes of the fill). Chunks of 131,072 rows, the writer's
 * default row group; sizes summed over the chunks. Also the fill's own time
 * (min and median of repeats, ns per row).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "format/null_fill.h"
#include "quiver/encoding.h"

#define CHUNK 131072

static struct qv_reservation *res;

static void die(const char *what, const struct qv_error *err) {
    fprintf(stderr, "bench_nulls: %s: %s\n", what, err ? err->message : "");
    exit(1);
}

static uint64_t rs = 7;
static uint64_t rnd(void) {
    uint64_t z = (rs += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static int64_t urand(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* One column: n values of `kind` with a validity bitmap. */
struct col {
    const char *name;
    enum qv_value_kind kind;
    int64_t n, nulls;
    uint8_t *values; /* n * width, a bitmap, or int32 offsets */
    uint8_t *data;   /* binary bytes */
    uint8_t *validity;
};

static const char *words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
                              "hotel", "india", "juliett", "kilo", "lima", "mike", "november",
                              "oscar", "papa", "quebec", "romeo", "sierra", "tango"};

static void set_valid(struct col *c, int64_t i, int valid) {
    if (valid) c->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
    else c->nulls++;
}

static struct col make(const char *name, enum qv_value_kind kind, int64_t n) {
    struct col c = {.name = name, .kind = kind, .n = n};
    c.validity = calloc((size_t)(n + 7) / 8 + 8, 1);
    return c;
}

/* Integer shapes; garbage: what the producer left under nulls. */
enum shape { SPARSE_SMALL, LOW_CARD, RANGE, SORTED, MOSTLY_CONST, RUNS };
static struct col make_int(const char *name, int64_t n, double null_p, enum shape sh, int garbage) {
    struct col c = make(name, sh == RANGE ? QV_KIND_INT32 : QV_KIND_INT64, n);
    size_t w = sh == RANGE ? 4 : 8;
    c.values = malloc((size_t)n * w);
    int64_t ts = 1700000000000000, run_v = 0;
    for (int64_t i = 0; i < n; i++) {
        int valid = unif() >= null_p;
        int64_t x = 0;
        switch (sh) {
        case SPARSE_SMALL: x = urand(-1000, 1000); break;
        case LOW_CARD: {
            double u = unif();
            x = u < 0.5 ? 3 : u < 0.75 ? 17 : u < 0.875 ? 42 : urand(100, 104);
            break;
        }
        case RANGE: x = urand(1000, 2000); break;
        case SORTED: ts += urand(0, 2000000); x = ts; break;
        case MOSTLY_CONST: x = unif() < 0.98 ? 7 : urand(0, 1 << 20); break;
        case RUNS:
            if (i % 100 == 0) run_v = urand(0, 1 << 16);
            x = run_v;
            break;
        }
        if (!valid) x = garbage == 0 ? 0 : garbage == 1 ? (int64_t)rnd() : x;
        set_valid(&c, i, valid);
        if (w == 4) {
            int32_t y = (int32_t)x;
            memcpy(c.values + (size_t)i * 4, &y, 4);
        } else {
            memcpy(c.values + (size_t)i * 8, &x, 8);
        }
    }
    return c;
}

static struct col make_prices(const char *name, int64_t n, double null_p) {
    struct col c = make(name, QV_KIND_FLOAT64, n);
    c.values = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        int valid = unif() >= null_p;
        double x = (double)urand(100, 1000000) / 100.0;
        if (!valid) {
            uint64_t bits = rnd();
            memcpy(&x, &bits, 8);
        }
        set_valid(&c, i, valid);
        memcpy(c.values + (size_t)i * 8, &x, 8);
    }
    return c;
}

static struct col make_bool(const char *name, int64_t n, double null_p, double true_p) {
    struct col c = make(name, QV_KIND_BOOL, n);
    c.values = calloc((size_t)(n + 7) / 8 + 8, 1);
    for (int64_t i = 0; i < n; i++) {
        int valid = unif() >= null_p;
        int b = valid ? unif() < true_p : (int)(rnd() & 1);
        if (b) c.values[i >> 3] |= (uint8_t)(1u << (i & 7));
        set_valid(&c, i, valid);
    }
    return c;
}

/* Strings: words (k distinct, k <= 20), sentences of words (text), or one
 * value; null slots hold random letters when `garbage`, else nothing. */
static struct col make_str(const char *name, int64_t n, double null_p, int k, int text,
                           int garbage) {
    struct col c = make(name, QV_KIND_BINARY, n);
    c.values = malloc((size_t)(n + 1) * 4);
    size_t cap = (size_t)n * 80 + 64, at = 0;
    c.data = malloc(cap);
    for (int64_t i = 0; i < n; i++) {
        int valid = unif() >= null_p;
        ((int32_t *)c.values)[i] = (int32_t)at;
        if (valid) {
            int nw = text ? (int)urand(3, 9) : 1;
            for (int j = 0; j < nw; j++) {
                const char *wd = words[urand(0, k - 1)];
                size_t l = strlen(wd);
                memcpy(c.data + at, wd, l);
                at += l;
                if (j + 1 < nw) c.data[at++] = ' ';
            }
        } else if (garbage) {
            int l = (int)urand(1, 12);
            for (int j = 0; j < l; j++) c.data[at++] = (uint8_t)('a' + urand(0, 25));
        }
        set_valid(&c, i, valid);
    }
    ((int32_t *)c.values)[n] = (int32_t)at;
    return c;
}

static size_t width_of(enum qv_value_kind k) {
    return k == QV_KIND_INT32 || k == QV_KIND_FLOAT32 ? 4 : k == QV_KIND_BOOL || k == QV_KIND_BINARY ? 0 : 8;
}

/* The view of rows [s, s + m) of the column and a validity copy at bit 0. */
static struct qv_values chunk_view(const struct col *c, int64_t s, int64_t m, uint8_t *vbits,
                                   uint8_t *bbits, int64_t *nulls) {
    memset(vbits, 0, (size_t)(m + 7) / 8 + 8);
    qv_bits_copy(vbits, 0, c->validity, s, m);
    *nulls = m - qv_bits_count(vbits, 0, m);
    struct qv_values v = {.kind = c->kind, .count = m};
    if (c->kind == QV_KIND_BOOL) {
        memset(bbits, 0, (size_t)(m + 7) / 8 + 8);
        qv_bits_copy(bbits, 0, c->values, s, m);
        v.values = bbits;
    } else if (c->kind == QV_KIND_BINARY) {
        v.values = (const int32_t *)c->values + s;
        v.data = c->data;
    } else {
        v.values = c->values + (size_t)s * width_of(c->kind);
    }
    return v;
}

static uint64_t enc_size(const struct qv_values *v, char *desc, size_t cap) {
    struct qv_encoded e;
    struct qv_error err;
    if (qv_encode(v, NULL, res, &e, &err)) die("encode", &err);
    uint64_t s = e.size;
    if (desc && qv_enc_describe(e.data, e.size, res, desc, cap, &err) == EOVERFLOW && cap > 4)
        strcpy(desc + cap - 4, "...");
    qv_encoded_release(res, &e);
    return s;
}

/* The non-null values alone, compacted. */
static uint64_t nonnull_size(const struct qv_values *v, const uint8_t *vbits) {
    int64_t m = v->count, k = 0;
    struct qv_values o = *v;
    void *buf = NULL;
    uint8_t *data = NULL;
    if (v->kind == QV_KIND_BOOL) {
        uint8_t *b = calloc((size_t)(m + 7) / 8 + 8, 1);
        for (int64_t i = 0; i < m; i++)
            if (qv_bit_get(vbits, i)) qv_bit_put(b, k++, qv_bit_get(v->values, i));
        buf = b;
    } else if (v->kind == QV_KIND_BINARY) {
        const int32_t *off = v->values;
        int32_t *no = malloc((size_t)(m + 1) * 4);
        data = malloc((size_t)(off[m] - off[0]) + 1);
        int32_t at = 0;
        for (int64_t i = 0; i < m; i++) {
            if (!qv_bit_get(vbits, i)) continue;
            no[k++] = at;
            memcpy(data + at, v->data + off[i], (size_t)(off[i + 1] - off[i]));
            at += off[i + 1] - off[i];
        }
        no[k] = at;
        buf = no;
        o.data = data;
    } else {
        size_t w = width_of(v->kind);
        uint8_t *b = malloc((size_t)m * w + 1);
        for (int64_t i = 0; i < m; i++)
            if (qv_bit_get(vbits, i)) memcpy(b + (size_t)(k++) * w, (const uint8_t *)v->values + (size_t)i * w, w);
        buf = b;
    }
    o.count = k;
    o.values = buf;
    uint64_t s = enc_size(&o, NULL, 0);
    free(buf);
    free(data);
    return s;
}

static const char *mode_names[] = {"auto", "keep", "zero", "previous", "frequent"};

static void run_col(struct qv_bench *b, struct col *c) {
    uint64_t sizes[QV__FILL_MODES] = {0}, validity = 0, nonnull = 0;
    int auto_modes[QV__FILL_MODES] = {0};
    char desc[160] = "";
    uint8_t *vbits = malloc((size_t)CHUNK / 8 + 16), *bbits = malloc((size_t)CHUNK / 8 + 16);
    double fill_ns[7];
    for (int rep = 0; rep < 7; rep++) {
        double t = 0;
        for (int64_t s = 0; s < c->n; s += CHUNK) {
            int64_t m = c->n - s < CHUNK ? c->n - s : CHUNK, nulls;
            struct qv_values v = chunk_view(c, s, m, vbits, bbits, &nulls);
            struct qv__filled f;
            struct qv_error err;
            double t0 = qv_bench_now_s();
            if (qv__null_fill(&v, vbits, nulls, QV__FILL_AUTO, res, &f, &err)) die("fill", &err);
            t += qv_bench_now_s() - t0;
            qv__null_fill_release(res, &f);
        }
        fill_ns[rep] = t * 1e9 / (double)c->n;
    }
    for (int64_t s = 0; s < c->n; s += CHUNK) {
        int64_t m = c->n - s < CHUNK ? c->n - s : CHUNK, nulls;
        struct qv_values v = chunk_view(c, s, m, vbits, bbits, &nulls);
        struct qv_values vb = {.kind = QV_KIND_BOOL, .count = m, .values = vbits};
        validity += nulls ? enc_size(&vb, NULL, 0) : 0;
        nonnull += nonnull_size(&v, vbits);
        for (int mode = 0; mode < QV__FILL_MODES; mode++) {
            struct qv__filled f;
            struct qv_error err;
            if (qv__null_fill(&v, vbits, nulls, mode, res, &f, &err)) die("fill", &err);
            sizes[mode] += enc_size(&f.v, mode == QV__FILL_AUTO && s == 0 ? desc : NULL, sizeof desc);
            if (mode == QV__FILL_AUTO) auto_modes[f.mode]++;
            qv__null_fill_release(res, &f);
        }
    }
    char chosen[64] = "";
    for (int mode = 1; mode < QV__FILL_MODES; mode++)
        if (auto_modes[mode])
            snprintf(chosen + strlen(chosen), sizeof chosen - strlen(chosen), "%s%s",
                     chosen[0] ? "+" : "", mode_names[mode]);
    printf("%-26s %5.1f%% %9llu %10llu %10llu %10llu %10llu %10llu %10llu %8lld  %-9s %5.2f/%5.2f\n",
           c->name, 100.0 * (double)c->nulls / (double)c->n, (unsigned long long)validity,
           (unsigned long long)sizes[QV__FILL_KEEP], (unsigned long long)sizes[QV__FILL_ZERO],
           (unsigned long long)sizes[QV__FILL_PREVIOUS], (unsigned long long)sizes[QV__FILL_FREQUENT],
           (unsigned long long)sizes[QV__FILL_AUTO], (unsigned long long)nonnull,
           (long long)sizes[QV__FILL_AUTO] - (long long)nonnull, chosen,
           qv_bench_min(fill_ns, 7), qv_bench_median(fill_ns, 7));
    printf("%26s first chunk, auto: %s\n", "", desc);
    for (int mode = 0; mode < QV__FILL_MODES; mode++)
        qv_bench_record(b, c->name, mode_names[mode], "values_bytes", "value", (double)sizes[mode], "B");
    qv_bench_record(b, c->name, "validity", "bytes", "value", (double)validity, "B");
    qv_bench_record(b, c->name, "nonnull_only", "values_bytes", "value", (double)nonnull, "B");
    qv_bench_record_samples(b, c->name, "auto", "fill_ns_per_row", fill_ns, 7, "ns");
    free(vbits);
    free(bbits);
    free(c->values);
    free(c->data);
    free(c->validity);
}

int main(int argc, char **argv) {
    struct qv_bench *b = qv_bench_open("nulls", argc, argv);
    int64_t n = qv_bench_quick(b) ? 4 * CHUNK : 16 * CHUNK;
    for (int i = 0; i + 1 < qv_bench_argc(b); i++)
        if (!strcmp(qv_bench_argv(b)[i], "--rows")) n = atoll(qv_bench_argv(b)[i + 1]);
    struct qv_pool *pool;
    if (qv_pool_create(NULL, &pool, NULL) || qv_reservation_create(pool, NULL, &res, NULL))
        die("pool", NULL);
    printf("Null fills: encoded bytes of the values segment, %lld rows in chunks of %d\n",
           (long long)n, CHUNK);
    printf("%-26s %6s %9s %10s %10s %10s %10s %10s %10s %8s  %-9s %s\n", "column", "nulls",
           "validity", "keep", "zero", "previous", "frequent", "auto", "non-null", "dup",
           "chose", "fill ns/row min/med");
    /* Built one at a time, so only one column is in memory. */
    for (int i = 0;; i++) {
        struct col c;
        switch (i) {
        case 0: c = make_int("int64 95% null, random", n, 0.95, SPARSE_SMALL, 1); break;
        case 1: c = make_int("int64 95% null, same-dist", n, 0.95, SPARSE_SMALL, 2); break;
        case 2: c = make_int("int64 80% null, skewed", n, 0.80, LOW_CARD, 1); break;
        case 3: c = make_int("int32 20% null, 1000-2000", n, 0.20, RANGE, 0); break;
        case 4: c = make_int("int64 30% null, sorted ts", n, 0.30, SORTED, 1); break;
        case 5: c = make_int("int64 50% null, mostly 7", n, 0.50, MOSTLY_CONST, 1); break;
        case 6: c = make_int("int64 50% null, runs", n, 0.50, RUNS, 1); break;
        case 7: c = make_int("int64 2% null, sorted ts", n, 0.02, SORTED, 1); break;
        case 8: c = make_prices("float64 40% null, prices", n, 0.40); break;
        case 9: c = make_bool("bool 60% null, 90% true", n, 0.60, 0.9); break;
        case 10: c = make_str("string 90% null, 20 words", n, 0.90, 20, 0, 1); break;
        case 11: c = make_str("string 30% null, text", n, 0.30, 20, 1, 0); break;
        case 12: c = make_str("string 30% null, text, junk", n, 0.30, 20, 1, 1); break;
        case 13: c = make_str("string 70% null, one value", n, 0.70, 1, 0, 1); break;
        default: goto done;
        }
        run_col(b, &c);
    }
done:
    qv_reservation_destroy(res);
    qv_pool_destroy(pool);
    return qv_bench_close(b);
}
