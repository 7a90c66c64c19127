/* Random predicates over rb_all_types_schema batches and an independent,
 * row-at-a-time reference evaluator (SQL three-valued logic), shared by the
 * predicate evaluation and pruning tests.
 *
 * The reference evaluator deliberately shares no code with the library: it
 * reads values straight from the Arrow buffers (honouring offsets and every
 * validity bitmap on the path), and compares exactly with its own
 * arithmetic: numbers as (unscaled integer, scale) pairs widened to a common
 * scale, floats with IEEE comparisons on doubles parsed by strtod, dates and
 * timestamps in nanoseconds, strings bytewise. */
#ifndef QV_TEST_EXPR_GEN_H
#define QV_TEST_EXPR_GEN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quiver/scan.h"
#include "random_batch.h"

__extension__ typedef __int128 g_i128;
__extension__ typedef unsigned __int128 g_u128;

enum { TV_F = 0, TV_T = 1, TV_N = 2 };

enum gcls { G_INT, G_UINT, G_DEC, G_FLOAT, G_F16, G_BOOL, G_DATE, G_TS, G_BYTES, G_NULLT, G_OTHER };

struct gcol {
    char text[64];   /* as written in a filter */
    int depth;       /* 0 top-level, 1 struct field */
    int comp[2];     /* column index, field index */
    const struct qv_field *field;
    int cls;
    int scale;       /* G_DEC */
    g_i128 npu;      /* G_DATE / G_TS: nanoseconds per unit */
};

struct gcat {
    struct gcol cols[64];
    int n;
};

static int g_cls_of(const struct qv_field *f, int *scale, g_i128 *npu) {
    *scale = 0;
    *npu = 0;
    switch (f->type) {
    case QV_TYPE_INT8: case QV_TYPE_INT16: case QV_TYPE_INT32: case QV_TYPE_INT64: return G_INT;
    case QV_TYPE_UINT8: case QV_TYPE_UINT16: case QV_TYPE_UINT32: case QV_TYPE_UINT64: return G_UINT;
    case QV_TYPE_DECIMAL128: *scale = f->scale; return G_DEC;
    case QV_TYPE_FLOAT32: case QV_TYPE_FLOAT64: return G_FLOAT;
    case QV_TYPE_FLOAT16: return G_F16;
    case QV_TYPE_BOOL: return G_BOOL;
    case QV_TYPE_DATE32: *npu = (g_i128)86400 * 1000000000; return G_DATE;
    case QV_TYPE_TIMESTAMP: {
        static const int64_t per[] = {1000000000, 1000000, 1000, 1};
        *npu = per[f->unit];
        return G_TS;
    }
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY:
    case QV_TYPE_FIXED_BINARY: return G_BYTES;
    case QV_TYPE_NULL: return G_NULLT;
    default: return G_OTHER;
    }
}

/* Every top-level column and every field of top-level structs. */
static void g_catalog(const struct qv_schema *s, struct gcat *cat) {
    cat->n = 0;
    for (int64_t c = 0; c < s->root.n_children; c++) {
        const struct qv_field *f = &s->root.children[c];
        struct gcol *g = &cat->cols[cat->n++];
        memset(g, 0, sizeof *g);
        snprintf(g->text, sizeof g->text, "%s", f->name);
        g->comp[0] = (int)c;
        g->field = f;
        g->cls = g_cls_of(f, &g->scale, &g->npu);
        if (f->type == QV_TYPE_STRUCT)
            for (int64_t k = 0; k < f->n_children; k++) {
                g = &cat->cols[cat->n++];
                memset(g, 0, sizeof *g);
                snprintf(g->text, sizeof g->text, "%s.\"%s\"", f->name, f->children[k].name);
                g->depth = 1;
                g->comp[0] = (int)c;
                g->comp[1] = (int)k;
                g->field = &f->children[k];
                g->cls = g_cls_of(g->field, &g->scale, &g->npu);
            }
    }
}

/* ---- Values ---- */

struct gval {
    int null;
    g_i128 i;   /* ints (unscaled decimals), bool 0/1, date days, ts units */
    double f;
    const uint8_t *p;
    size_t n;
};

static int g_valid(const struct ArrowArray *a, int64_t phys) {
    if (a->n_buffers == 0) return 0; /* the null type */
    const uint8_t *v = a->buffers[0];
    return !v || ((v[phys >> 3] >> (phys & 7)) & 1);
}

static double g_half(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? m * pow(2, -24) : e == 31 ? (m ? NAN : INFINITY) : (1024 + m) * pow(2, e - 25);
    return s ? -v : v;
}

/* The value of column g at batch row `row`; batch->children[map[column]]. */
static void g_read(const struct ArrowArray *batch, const int *map, const struct gcol *g,
                   int64_t row, struct gval *v) {
    memset(v, 0, sizeof *v);
    const struct ArrowArray *a = batch->children[map ? map[g->comp[0]] : g->comp[0]];
    int64_t phys = a->offset + batch->offset + row;
    if (!g_valid(a, phys)) {
        v->null = 1;
        return;
    }
    if (g->depth == 1) {
        a = a->children[g->comp[1]];
        phys = a->offset + phys;
        if (!g_valid(a, phys)) {
            v->null = 1;
            return;
        }
    }
    const struct qv_field *f = g->field;
    const void *b = a->n_buffers > 1 ? a->buffers[1] : NULL;
    switch (f->type) {
    case QV_TYPE_BOOL: v->i = (((const uint8_t *)b)[phys >> 3] >> (phys & 7)) & 1; break;
    case QV_TYPE_INT8: v->i = ((const int8_t *)b)[phys]; break;
    case QV_TYPE_INT16: v->i = ((const int16_t *)b)[phys]; break;
    case QV_TYPE_INT32: case QV_TYPE_DATE32: v->i = ((const int32_t *)b)[phys]; break;
    case QV_TYPE_INT64: case QV_TYPE_TIMESTAMP: v->i = ((const int64_t *)b)[phys]; break;
    case QV_TYPE_UINT8: v->i = ((const uint8_t *)b)[phys]; break;
    case QV_TYPE_UINT16: v->i = ((const uint16_t *)b)[phys]; break;
    case QV_TYPE_UINT32: v->i = ((const uint32_t *)b)[phys]; break;
    case QV_TYPE_UINT64: v->i = ((const uint64_t *)b)[phys]; break;
    case QV_TYPE_DECIMAL128: memcpy(&v->i, (const uint8_t *)b + phys * 16, 16); break;
    case QV_TYPE_FLOAT16: v->f = g_half(((const uint16_t *)b)[phys]); break;
    case QV_TYPE_FLOAT32: v->f = ((const float *)b)[phys]; break;
    case QV_TYPE_FLOAT64: v->f = ((const double *)b)[phys]; break;
    case QV_TYPE_UTF8: case QV_TYPE_BINARY: {
        const int32_t *o = b;
        v->p = (const uint8_t *)a->buffers[2] + o[phys];
        v->n = (size_t)(o[phys + 1] - o[phys]);
        break;
    }
    case QV_TYPE_LARGE_UTF8: case QV_TYPE_LARGE_BINARY: {
        const int64_t *o = b;
        v->p = (const uint8_t *)a->buffers[2] + o[phys];
        v->n = (size_t)(o[phys + 1] - o[phys]);
        break;
    }
    case QV_TYPE_FIXED_BINARY:
        v->p = (const uint8_t *)b + phys * f->byte_width;
        v->n = (size_t)f->byte_width;
        break;
    default: break; /* nested: only nullness matters */
    }
}

/* ---- Literals ---- */

enum { GL_NULL, GL_NUM, GL_DBL, GL_STR, GL_BOOL, GL_DATE, GL_TS };

struct glit {
    int kind;
    g_i128 m;       /* GL_NUM: m * 10^-s */
    int s;
    double d;       /* GL_DBL, and GL_NUM as a double (strtod of the text) */
    uint8_t bytes[160];
    size_t n;
    int b;
    int32_t days;
    g_i128 ns;
    char text[400];
};

static void g_i128_text(g_i128 v, char *out) {
    char tmp[64];
    int k = 0, neg = v < 0;
    g_u128 u = neg ? (g_u128)0 - (g_u128)v : (g_u128)v;
    do {
        tmp[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    int j = 0;
    if (neg) out[j++] = '-';
    while (k) out[j++] = tmp[--k];
    out[j] = 0;
}

/* Renders m * 10^-s in one of several equivalent spellings. */
static void g_num_text(struct glit *l, uint64_t *seed) {
    char digits[64];
    g_i128_text(l->m, digits);
    int neg = digits[0] == '-';
    const char *d = digits + neg;
    int nd = (int)strlen(d);
    const char *sg = neg ? "-" : "";
    char *t = l->text;
    switch (rb_next(seed) % 3) {
    case 0: sprintf(t, "%s%se%s%d", sg, d, l->s ? "-" : "+", l->s); break;
    default:
        if (l->s == 0) sprintf(t, "%s%s%s", sg, d, rb_next(seed) & 1 ? ".0" : "");
        else if (nd > l->s) sprintf(t, "%s%.*s.%s", sg, nd - l->s, d, d + nd - l->s);
        else {
            t += sprintf(t, "%s%s", sg, rb_next(seed) & 1 ? "0." : ".");
            for (int i = 0; i < l->s - nd; i++) *t++ = '0';
            strcpy(t, d);
        }
        break;
    }
    l->d = strtod(l->text, NULL);
}

static void g_bytes_text(struct glit *l) {
    int plain = 1;
    for (size_t i = 0; i < l->n; i++)
        if (l->bytes[i] < 0x20 || l->bytes[i] >= 0x7f) plain = 0;
    char *t = l->text;
    if (plain) {
        *t++ = '\'';
        for (size_t i = 0; i < l->n; i++) {
            if (l->bytes[i] == '\'') *t++ = '\'';
            *t++ = (char)l->bytes[i];
        }
        *t++ = '\'';
        *t = 0;
    } else {
        t += sprintf(t, "X'");
        for (size_t i = 0; i < l->n; i++) t += sprintf(t, "%02x", l->bytes[i]);
        sprintf(t, "'");
    }
}

static void g_date_text(int32_t days, char *out) {
    time_t secs = (time_t)days * 86400;
    struct tm tm;
    gmtime_r(&secs, &tm);
    sprintf(out, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

static void g_ts_text(g_i128 ns, char *out) {
    g_i128 q = 1000000000;
    g_i128 secs = ns / q, frac = ns % q;
    if (frac < 0) {
        frac += q;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    sprintf(out, "TIMESTAMP '%04d-%02d-%02d %02d:%02d:%02d.%09d'", tm.tm_year + 1900, tm.tm_mon + 1,
            tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
}

static g_i128 g_pow10(int k) {
    g_i128 v = 1;
    while (k-- > 0) v *= 10;
    return v;
}

/* A literal for column g near value v (a random one when v is null);
 * r (0..99) picks special values for small r. */
static void g_lit_near(const struct gcol *g, const struct gval *vp, uint64_t *seed, uint64_t r,
                       struct glit *l) {
    struct gval v = *vp;
    memset(l, 0, sizeof *l);
    if (r < 3) {
        l->kind = GL_NULL;
        strcpy(l->text, "NULL");
        return;
    }
    switch (g->cls) {
    case G_INT: case G_UINT: case G_DEC: {
        l->kind = GL_NUM;
        if (r < 6) {
            l->kind = GL_DBL;
            static const char *sp[] = {"NaN", "Infinity", "-Infinity", "-inf"};
            int k = (int)(rb_next(seed) % 4);
            strcpy(l->text, sp[k]);
            l->d = k == 0 ? NAN : k == 1 ? INFINITY : -INFINITY;
            return;
        }
        int cs = g->scale < 0 ? 0 : g->scale;
        g_i128 base = v.null ? (g_i128)(int64_t)rb_next(seed) % 1000 : v.i;
        int extra = (int)(rb_next(seed) % 4); /* fractional digits beyond the column's */
        l->s = cs + extra;
        l->m = base * g_pow10(extra);
        switch (rb_next(seed) % 8) {
        case 0: l->m += 1; break;
        case 1: l->m -= 1; break;
        case 2: l->m += g_pow10(extra) / 2; break;
        case 3: /* far outside any domain */
            if (r < 50) {
                l->m = g_pow10(25) * (rb_next(seed) & 1 ? 1 : -1);
                l->s = 0;
            }
            break;
        default: break;
        }
        g_num_text(l, seed);
        return;
    }
    case G_FLOAT: case G_F16: {
        l->kind = GL_DBL;
        if (r < 20) {
            static const char *sp[] = {"NaN", "Infinity", "-Infinity", "0", "-0.0", "1e308", "0.25"};
            int k = (int)(rb_next(seed) % 7);
            strcpy(l->text, sp[k]);
            l->d = k == 0 ? NAN : strtod(k == 1 ? "inf" : k == 2 ? "-inf" : sp[k], NULL);
            return;
        }
        double d = v.null || isnan(v.f) ? (double)(int64_t)(rb_next(seed) % 2000) - 1000 : v.f;
        if (isinf(d)) {
            strcpy(l->text, d > 0 ? "Infinity" : "-Infinity");
            l->d = d;
            return;
        }
        if (rb_next(seed) % 3 == 0) d = nextafter(d, rb_next(seed) & 1 ? INFINITY : -INFINITY);
        snprintf(l->text, sizeof l->text, "%.17g", d);
        l->d = strtod(l->text, NULL);
        if (isinf(l->d)) strcpy(l->text, l->d > 0 ? "Infinity" : "-Infinity");
        return;
    }
    case G_BOOL:
        l->kind = GL_BOOL;
        l->b = v.null ? (int)(rb_next(seed) & 1) : (int)v.i;
        strcpy(l->text, l->b ? "TRUE" : "false");
        return;
    case G_DATE: case G_TS: {
        g_i128 ns = v.null ? (g_i128)((int64_t)(rb_next(seed) % 20000) - 10000) * 86400 * 1000000000
                           : v.i * g->npu;
        int k = (int)(rb_next(seed) % 5);
        if (k == 0) ns += 1;
        if (k == 1) ns -= g->npu;
        if (k == 2 || g->cls == G_DATE) {
            /* a DATE literal: the day of ns */
            g_i128 day = (g_i128)86400 * 1000000000;
            g_i128 dd = ns / day - (ns % day < 0);
            if (k == 2 || rb_next(seed) % 2) {
                l->kind = GL_DATE;
                l->days = (int32_t)dd;
                char tmp[32];
                g_date_text(l->days, tmp);
                sprintf(l->text, rb_next(seed) % 4 ? "DATE '%s'" : "'%s'", tmp);
                return;
            }
        }
        l->kind = GL_TS;
        l->ns = ns;
        g_ts_text(ns, l->text);
        return;
    }
    case G_BYTES: {
        l->kind = GL_STR;
        size_t n = v.null ? 0 : v.n;
        if (n > 120) n = 120;
        if (!v.null && n) memcpy(l->bytes, v.p, n);
        switch (rb_next(seed) % 5) {
        case 0: if (n) n = (size_t)(rb_next(seed) % n); break;   /* a prefix */
        case 1: l->bytes[n++] = (uint8_t)('a' + rb_next(seed) % 26); break;
        case 2: if (n) l->bytes[n - 1] ^= 1; break;
        default: break;
        }
        l->n = n;
        g_bytes_text(l);
        return;
    }
    default:
        l->kind = GL_NUM;
        l->m = 1;
        strcpy(l->text, "1");
        return;
    }
}

/* A literal for column g, usually near a value of the batch. */
static void g_make_lit(const struct gcol *g, const struct ArrowArray *batch, const int *map,
                       uint64_t *seed, struct glit *l) {
    struct gval v = {.null = 1};
    int64_t rows = batch->length;
    for (int tries = 0; tries < 4 && v.null && rows > 0; tries++)
        g_read(batch, map, g, (int64_t)(rb_next(seed) % (uint64_t)rows), &v);
    g_lit_near(g, &v, seed, rb_next(seed) % 100, l);
}

/* Replaces the validity bitmap of a struct column (a copy the caller owns)
 * by random bits, so that the struct is null in rows where its fields are
 * not: nested nullness must come from both levels. `bits` needs
 * (offset + length + 7) / 8 bytes. */
static void g_scramble_validity(struct ArrowArray *copy, const void **bufs, uint8_t *bits,
                                uint64_t *seed) {
    int64_t nbytes = (copy->offset + copy->length + 7) / 8;
    for (int64_t i = 0; i < nbytes; i++) bits[i] = (uint8_t)(rb_next(seed) | rb_next(seed));
    bufs[0] = bits;
    copy->buffers = bufs;
    copy->null_count = -1;
}

/* ---- Exact comparison: returns -1/0/1, or 2 when unordered (NaN) ---- */

static int g_cmp3(g_i128 a, g_i128 b) { return (a > b) - (a < b); }

static int g_cmp_dbl(double a, double b) {
    if (isnan(a) || isnan(b)) return 2;
    return (a > b) - (a < b);
}

static int g_bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    if (c) return c < 0 ? -1 : 1;
    return (an > bn) - (an < bn);
}

/* value (of column g, non-null) versus literal (non-null). */
static int g_cmp_val_lit(const struct gcol *g, const struct gval *v, const struct glit *l) {
    switch (g->cls) {
    case G_INT: case G_UINT: case G_DEC: case G_BOOL: {
        if (l->kind == GL_BOOL) return g_cmp3(v->i, l->b);
        if (l->kind == GL_DBL) {
            if (isnan(l->d)) return 2;
            return l->d > 0 ? -1 : 1; /* only infinities reach here */
        }
        int cs = g->cls == G_DEC ? g->scale : 0;
        int S = cs > l->s ? cs : l->s;
        return g_cmp3(v->i * g_pow10(S - cs), l->m * g_pow10(S - l->s));
    }
    case G_FLOAT: case G_F16: return g_cmp_dbl(v->f, l->kind == GL_NUM ? strtod(l->text, NULL) : l->d);
    case G_DATE: case G_TS: {
        g_i128 lv;
        if (l->kind == GL_DATE) lv = (g_i128)l->days * 86400 * 1000000000;
        else lv = l->ns;
        return g_cmp3(v->i * g->npu, lv);
    }
    case G_BYTES: return g_bytes_cmp(v->p, v->n, l->bytes, l->n);
    default: return 2;
    }
}

static int g_cmp_val_val(const struct gcol *a, const struct gval *x, const struct gcol *b,
                         const struct gval *y) {
    switch (a->cls) {
    case G_FLOAT: case G_F16: return g_cmp_dbl(x->f, y->f);
    case G_BYTES: return g_bytes_cmp(x->p, x->n, y->p, y->n);
    default: {
        g_i128 xs = x->i * (a->npu ? a->npu : 1), ys = y->i * (b->npu ? b->npu : 1);
        return g_cmp3(xs, ys);
    }
    }
}

static int g_op_holds(int c, int op) {
    if (c == 2) return op == QV_CMP_NE;
    switch (op) {
    case QV_CMP_EQ: return c == 0;
    case QV_CMP_NE: return c != 0;
    case QV_CMP_LT: return c < 0;
    case QV_CMP_LE: return c <= 0;
    case QV_CMP_GT: return c > 0;
    default: return c >= 0;
    }
}

/* ---- Predicate trees ---- */

enum { GN_AND, GN_OR, GN_NOT, GN_CMP, GN_CMPCOL, GN_ISNULL, GN_IN, GN_BETWEEN, GN_STARTS,
       GN_BARE, GN_CONST };

struct gnode {
    int kind;
    int op;
    int neg;
    int flip;       /* literal written on the left */
    int col, col2;  /* catalogue indices */
    int truth;      /* GN_CONST */
    struct glit lits[6];
    int nlits;
    struct gnode *kids[4];
    int nkids;
};

static int g_and3(int a, int b) {
    if (a == TV_F || b == TV_F) return TV_F;
    if (a == TV_N || b == TV_N) return TV_N;
    return TV_T;
}
static int g_or3(int a, int b) {
    if (a == TV_T || b == TV_T) return TV_T;
    if (a == TV_N || b == TV_N) return TV_N;
    return TV_F;
}
static int g_not3(int a) { return a == TV_N ? TV_N : a == TV_T ? TV_F : TV_T; }

static int g_cmp_lit_tv(const struct gcat *cat, const struct ArrowArray *batch, const int *map,
                        int64_t row, int col, int op, const struct glit *l) {
    struct gval v;
    g_read(batch, map, &cat->cols[col], row, &v);
    if (v.null || l->kind == GL_NULL) return TV_N;
    return g_op_holds(g_cmp_val_lit(&cat->cols[col], &v, l), op) ? TV_T : TV_F;
}

static int g_eval(const struct gcat *cat, const struct gnode *n, const struct ArrowArray *batch,
                  const int *map, int64_t row) {
    switch (n->kind) {
    case GN_AND: {
        int r = TV_T;
        for (int i = 0; i < n->nkids; i++) r = g_and3(r, g_eval(cat, n->kids[i], batch, map, row));
        return r;
    }
    case GN_OR: {
        int r = TV_F;
        for (int i = 0; i < n->nkids; i++) r = g_or3(r, g_eval(cat, n->kids[i], batch, map, row));
        return r;
    }
    case GN_NOT: return g_not3(g_eval(cat, n->kids[0], batch, map, row));
    case GN_CONST: return n->truth;
    case GN_CMP: return g_cmp_lit_tv(cat, batch, map, row, n->col, n->op, &n->lits[0]);
    case GN_CMPCOL: {
        struct gval x, y;
        g_read(batch, map, &cat->cols[n->col], row, &x);
        g_read(batch, map, &cat->cols[n->col2], row, &y);
        if (x.null || y.null) return TV_N;
        return g_op_holds(g_cmp_val_val(&cat->cols[n->col], &x, &cat->cols[n->col2], &y), n->op)
                   ? TV_T : TV_F;
    }
    case GN_BARE: {
        struct gval v;
        g_read(batch, map, &cat->cols[n->col], row, &v);
        return v.null ? TV_N : v.i ? TV_T : TV_F;
    }
    case GN_ISNULL: {
        struct gval v;
        g_read(batch, map, &cat->cols[n->col], row, &v);
        return (v.null != n->neg) ? TV_T : TV_F;
    }
    case GN_IN: {
        struct gval v;
        g_read(batch, map, &cat->cols[n->col], row, &v);
        int r;
        if (v.null) {
            r = TV_N;
        } else {
            int match = 0, has_null = 0;
            for (int i = 0; i < n->nlits; i++) {
                if (n->lits[i].kind == GL_NULL) has_null = 1;
                else if (g_cmp_val_lit(&cat->cols[n->col], &v, &n->lits[i]) == 0) match = 1;
            }
            r = match ? TV_T : has_null ? TV_N : TV_F;
        }
        return n->neg ? g_not3(r) : r;
    }
    case GN_BETWEEN: {
        int r = g_and3(g_cmp_lit_tv(cat, batch, map, row, n->col, QV_CMP_GE, &n->lits[0]),
                       g_cmp_lit_tv(cat, batch, map, row, n->col, QV_CMP_LE, &n->lits[1]));
        return n->neg ? g_not3(r) : r;
    }
    case GN_STARTS: {
        struct gval v;
        g_read(batch, map, &cat->cols[n->col], row, &v);
        if (v.null || n->lits[0].kind == GL_NULL) return TV_N;
        const struct glit *l = &n->lits[0];
        return v.n >= l->n && (l->n == 0 || memcmp(v.p, l->bytes, l->n) == 0) ? TV_T : TV_F;
    }
    default: return TV_N;
    }
}

static const char *const g_ops[] = {"=", "!=", "<", "<=", ">", ">="};
static const char *const g_ops_alt[] = {"==", "<>", "<", "<=", ">", ">="};
static int g_flip(int op) {
    return op == QV_CMP_LT ? QV_CMP_GT : op == QV_CMP_GT ? QV_CMP_LT
         : op == QV_CMP_LE ? QV_CMP_GE : op == QV_CMP_GE ? QV_CMP_LE : op;
}

/* Text of a tree, fully parenthesized, keywords in random case. */
static void g_kw(char **t, const char *w, uint64_t *seed) {
    uint64_t r = rb_next(seed);
    for (const char *c = w; *c; c++) {
        char ch = *c;
        if (ch >= 'A' && ch <= 'Z' && ((r >>= 1) & 1)) ch = (char)(ch + 32);
        *(*t)++ = ch;
    }
    **t = 0;
}

static void g_text(const struct gcat *cat, const struct gnode *n, char **t, uint64_t *seed) {
    switch (n->kind) {
    case GN_AND: case GN_OR:
        for (int i = 0; i < n->nkids; i++) {
            if (i) g_kw(t, n->kind == GN_AND ? " AND " : " OR ", seed);
            *(*t)++ = '(';
            g_text(cat, n->kids[i], t, seed);
            *(*t)++ = ')';
        }
        **t = 0;
        return;
    case GN_NOT:
        g_kw(t, "NOT (", seed);
        g_text(cat, n->kids[0], t, seed);
        *(*t)++ = ')';
        **t = 0;
        return;
    case GN_CONST:
        *t += sprintf(*t, "%s", n->truth == TV_T ? "TRUE" : n->truth == TV_F ? "FALSE" : "NULL");
        return;
    case GN_CMP: {
        const char *op = (rb_next(seed) & 1) ? g_ops[n->op] : g_ops_alt[n->op];
        if (n->flip) *t += sprintf(*t, "%s %s %s", n->lits[0].text, g_ops[g_flip(n->op)], cat->cols[n->col].text);
        else *t += sprintf(*t, "%s %s %s", cat->cols[n->col].text, op, n->lits[0].text);
        return;
    }
    case GN_CMPCOL:
        *t += sprintf(*t, "%s %s %s", cat->cols[n->col].text, g_ops[n->op], cat->cols[n->col2].text);
        return;
    case GN_BARE: *t += sprintf(*t, "%s", cat->cols[n->col].text); return;
    case GN_ISNULL:
        *t += sprintf(*t, "%s", cat->cols[n->col].text);
        g_kw(t, n->neg ? " IS NOT NULL" : " IS NULL", seed);
        return;
    case GN_IN:
        *t += sprintf(*t, "%s", cat->cols[n->col].text);
        g_kw(t, n->neg ? " NOT IN (" : " IN (", seed);
        for (int i = 0; i < n->nlits; i++) *t += sprintf(*t, "%s%s", i ? ", " : "", n->lits[i].text);
        *t += sprintf(*t, ")");
        return;
    case GN_BETWEEN:
        *t += sprintf(*t, "%s", cat->cols[n->col].text);
        g_kw(t, n->neg ? " NOT BETWEEN " : " BETWEEN ", seed);
        *t += sprintf(*t, "%s", n->lits[0].text);
        g_kw(t, " AND ", seed);
        *t += sprintf(*t, "%s", n->lits[1].text);
        return;
    case GN_STARTS:
        *t += sprintf(*t, "%s", cat->cols[n->col].text);
        g_kw(t, " STARTS WITH ", seed);
        *t += sprintf(*t, "%s", n->lits[0].text);
        return;
    default: return;
    }
}

static int g_comparable(int cls) { return cls != G_OTHER && cls != G_NULLT; }

/* Column pairs the language compares directly. */
static int g_pair_ok(const struct gcol *a, const struct gcol *b) {
    int ia = a->cls == G_INT || a->cls == G_UINT || (a->cls == G_DEC && a->scale == 0);
    int ib = b->cls == G_INT || b->cls == G_UINT || (b->cls == G_DEC && b->scale == 0);
    if (ia && ib) return 1;
    if (a->cls == G_DEC && b->cls == G_DEC) return a->scale == b->scale;
    if ((a->cls == G_FLOAT || a->cls == G_F16) && (b->cls == G_FLOAT || b->cls == G_F16)) return 1;
    if (a->cls == G_BYTES && b->cls == G_BYTES) return 1;
    if (a->cls == G_BOOL && b->cls == G_BOOL) return 1;
    if (a->cls == G_DATE && b->cls == G_DATE) return 1;
    if (a->cls == G_TS && b->cls == G_TS) return a->npu == b->npu;
    return 0;
}

static int g_pick_col(const struct gcat *cat, uint64_t *seed, int want_cls) {
    int cand[64], n = 0;
    for (int c = 0; c < cat->n; c++)
        if (want_cls < 0 ? g_comparable(cat->cols[c].cls) : cat->cols[c].cls == want_cls) cand[n++] = c;
    return n ? cand[rb_next(seed) % (uint64_t)n] : -1;
}

/* A random tree; nodes come from `pool` (capacity cap). */
static struct gnode *g_gen(const struct gcat *cat, const struct ArrowArray *batch, const int *map,
                           uint64_t *seed, int depth, struct gnode *pool, int *used, int cap) {
    if (*used >= cap) return NULL;
    struct gnode *n = &pool[(*used)++];
    memset(n, 0, sizeof *n);
    uint64_t r = rb_next(seed) % 100;
    if (depth > 0 && r < 35) {
        n->kind = r < 15 ? GN_AND : r < 28 ? GN_OR : GN_NOT;
        n->nkids = n->kind == GN_NOT ? 1 : 2 + (int)(rb_next(seed) % 3);
        for (int i = 0; i < n->nkids; i++) {
            n->kids[i] = g_gen(cat, batch, map, seed, depth - 1, pool, used, cap);
            if (!n->kids[i]) {
                n->kind = GN_CONST;
                n->truth = TV_T;
                n->nkids = 0;
                break;
            }
        }
        return n;
    }
    r = rb_next(seed) % 100;
    n->col = g_pick_col(cat, seed, -1);
    const struct gcol *g = &cat->cols[n->col];
    if (r < 40) {
        n->kind = GN_CMP;
        n->op = (int)(rb_next(seed) % 6);
        n->flip = rb_next(seed) % 4 == 0;
        n->nlits = 1;
        g_make_lit(g, batch, map, seed, &n->lits[0]);
    } else if (r < 50) {
        n->kind = GN_ISNULL;
        n->neg = (int)(rb_next(seed) & 1);
        n->col = (int)(rb_next(seed) % (uint64_t)cat->n); /* any column, nested ones too */
    } else if (r < 65) {
        n->kind = GN_IN;
        n->neg = rb_next(seed) % 3 == 0;
        n->nlits = 1 + (int)(rb_next(seed) % 5);
        for (int i = 0; i < n->nlits; i++) g_make_lit(g, batch, map, seed, &n->lits[i]);
    } else if (r < 75) {
        n->kind = GN_BETWEEN;
        n->neg = rb_next(seed) % 3 == 0;
        n->nlits = 2;
        g_make_lit(g, batch, map, seed, &n->lits[0]);
        g_make_lit(g, batch, map, seed, &n->lits[1]);
    } else if (r < 83) {
        int c = g_pick_col(cat, seed, G_BYTES);
        if (c < 0) { /* a schema without strings */
            n->kind = GN_CONST;
            n->truth = TV_T;
            return n;
        }
        n->kind = GN_STARTS;
        n->col = c;
        n->nlits = 1;
        g_make_lit(&cat->cols[c], batch, map, seed, &n->lits[0]);
        if (n->lits[0].kind != GL_STR && n->lits[0].kind != GL_NULL) n->lits[0].kind = GL_NULL;
        if (n->lits[0].kind == GL_NULL) strcpy(n->lits[0].text, "NULL");
    } else if (r < 90) {
        n->kind = GN_CMPCOL;
        n->op = (int)(rb_next(seed) % 6);
        for (int tries = 0; tries < 400; tries++) {
            int c2 = g_pick_col(cat, seed, -1);
            if (c2 >= 0 && g_pair_ok(g, &cat->cols[c2])) {
                n->col2 = c2;
                return n;
            }
        }
        n->col2 = n->col;
    } else if (r < 95) {
        n->kind = GN_BARE;
        n->col = g_pick_col(cat, seed, G_BOOL);
        if (n->col < 0) { /* a schema without booleans */
            n->kind = GN_CONST;
            n->truth = TV_N;
        }
    } else {
        n->kind = GN_CONST;
        n->truth = (int)(rb_next(seed) % 3);
    }
    return n;
}

#endif
