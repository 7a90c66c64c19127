/* The scan's filter, evaluated conjunct by conjunct.
 *
 * A row passes when the whole predicate is TRUE, and a top-level AND is TRUE
 * exactly when each of its operands is: so the operands (conjuncts) can be
 * evaluated one after another, each only on the rows every earlier one left
 * TRUE, in any order, and the rows that pass are the same. That is what makes
 * the order free to choose: cheap and selective conjuncts first, so the
 * expensive ones see few rows.
 *
 * A conjunct is "simple" when it compares one top-level column without
 * children with constants (CMP, IN, STARTS WITH, and BETWEEN, which binding
 * rewrote into two comparisons and which is recombined here): the column
 * reader may then evaluate it on the encoded data (qv__column_reader_filter),
 * never decoding the column to Arrow. Anything else, and a simple conjunct
 * whose encodings have no such path, decodes its columns and runs the plan's
 * own kernels (qv__expr_eval_node), for the rows still selected only: by a
 * take of those rows when they are sparse, by one range over the 1024-row
 * vectors that hold them when they are dense. Either way, vectors without a
 * selected row are never decoded.
 *
 * The order starts from estimates (the encoded path is cheaper than a
 * decode, narrow columns than wide ones, strings are dear) and is refined
 * from measurements: each conjunct's cost per row and pass rate, summed by
 * every context with atomics, rank it as cost / (1 - pass rate) every few
 * batches. Row-group statistics settle some conjuncts without any work: one
 * proven TRUE for every row of a row group is skipped there, one that cannot
 * be TRUE empties the batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/corrupt.h"
#include "base/thread.h"
#include "format/reader_internal.h"
#include "scan/expr_internal.h"
#include "scan/scan_internal.h"

/* Rows per decoding vector of the encodings: the unit a decode skips. */
#define VEC QV_ENC_VECTOR
/* Batches between two rankings of the conjuncts (over all contexts). */
#define RERANK_EVERY 8
/* Rows a conjunct must have seen before its measurements replace the
 * estimates. */
#define MEASURED_ROWS 4096

struct conj {
    const struct qv__xplan *p;
    const struct qv__xplan *p2; /* the upper bound of a recombined BETWEEN */
    int32_t n_cols, cols_cap;
    int32_t *cols;              /* indices into the filter's columns, ascending */
    /* The encoded-domain form (simple conjuncts only). */
    bool enc;
    struct qv_enc_pred pred;
    /* Copies of p / p2 whose kernels read the values a decoder hands to the
     * pred's eval callback (decimals as plain int64); vkind their kind. */
    struct qv__xplan ev, ev2;
    int vkind;
    double est_cost, est_pass; /* ns per row, fraction of rows TRUE */
    /* Measured over all contexts (atomics). */
    int64_t m_in, m_out, m_ns;
};

struct qv__filter {
    const struct qv_reader *rd;
    const struct qv__xbinding *b;
    struct qv_reservation *r;
    bool never;                 /* the predicate is constant and not TRUE */
    int32_t n_conj, conj_cap;   /* conj and order have conj_cap entries */
    struct conj *conj;
    int32_t n_cols;
    int32_t *cols;              /* schema column of each filter column */
    int32_t ncol;               /* schema columns */
    qv_mutex mu;                /* guards order */
    int32_t *order;
    double *rank;               /* scratch of rerank (under mu) */
    int32_t *sort_tmp;
    int version;                /* bumped (atomically) with every new order */
    int64_t batches;            /* atomic */
    int frozen;                 /* an order set by qv__filter_set_order: no ranking */
};

struct ccol {
    struct qv_column_reader *cr;  /* the ctx's own */
    struct qv_column_reader *use; /* the one positioned for the batch: cr or the caller's */
    int64_t rg;
    struct ArrowArray arr; /* decoded for the conjunct in progress */
    /* qv__filter_ctx_want: the column's last decode of the batch is kept
     * for the projection (arr then comes from kept.res). */
    bool want;
    struct qv__decoded kept;
};

struct qv__filter_ctx {
    struct qv__filter *f;
    struct qv_reservation *r;
    qv__filter_reader_fn readers; /* NULL: the ctx opens its own */
    void *readers_arg;
    struct ccol *cols;
    int64_t rg;
    unsigned *truth;            /* per conjunct: its truth values in row group rg */
    uint8_t *no_enc;            /* per conjunct: the encoded path said ENOTSUP in rg */
    struct qv_zone_stats *st;   /* per reference */
    int32_t *order;
    int version;
    int32_t *map;               /* schema column -> child of the view batch */
    struct ArrowArray **children;
    /* Scratch, for up to `cap` rows. */
    int64_t cap;
    uint64_t *surv, *next, *tv, *dec;
    int64_t *rows;
};

/* ---- bitmaps ---- */

static int64_t words_for(int64_t n) { return (n + 63) >> 6; }

static void ones(uint64_t *w, int64_t n) {
    int64_t nw = words_for(n);
    memset(w, 0xff, (size_t)nw * 8);
    if (n & 63) w[nw - 1] = (UINT64_C(1) << (n & 63)) - 1;
}

/* Set bits of the words holding n bits (bits past n are clear). Through
 * qv_bits_count, whose POPCNT variant is chosen at run time: built for
 * baseline x86-64, __builtin_popcountll is a library call (2.4% of the
 * decimal filter's profile). Words are little-endian bytes in bit order. */
static int64_t popcount(const uint64_t *w, int64_t n) {
    return qv_bits_count((const uint8_t *)w, 0, words_for(n) * 64);
}

static void set_range(uint64_t *w, int64_t a, int64_t b) {
    for (int64_t i = a; i < b;) {
        if ((i & 63) == 0 && b - i >= 64) {
            w[i >> 6] = ~UINT64_C(0);
            i += 64;
        } else {
            w[i >> 6] |= UINT64_C(1) << (i & 63);
            i++;
        }
    }
}

/* ---- building the conjuncts ---- */

static void collect_conjuncts(const struct qv__xplan *p, const struct qv__xplan **out, int32_t *n) {
    if (p->kind == QV__P_AND) {
        for (int32_t i = 0; i < p->n_kids; i++) collect_conjuncts(p->kids[i], out, n);
        return;
    }
    out[(*n)++] = p;
}

static int32_t count_conjuncts(const struct qv__xplan *p) {
    if (p->kind != QV__P_AND) return 1;
    int32_t n = 0;
    for (int32_t i = 0; i < p->n_kids; i++) n += count_conjuncts(p->kids[i]);
    return n;
}

/* Adds the filter columns (indices into f->cols) that plan p reads to
 * list[0..*n), each once (seen[] marks those listed). */
static void mark_one(const struct qv__filter *f, int32_t ref, const int32_t *col_index,
                     uint8_t *seen, int32_t *list, int32_t *n) {
    int32_t k = col_index[f->b->refs[ref].column];
    if (k >= 0 && !seen[k]) {
        seen[k] = 1;
        list[(*n)++] = k;
    }
}
static void mark_cols(const struct qv__filter *f, const struct qv__xplan *p,
                      const int32_t *col_index, uint8_t *seen, int32_t *list, int32_t *n) {
    switch (p->kind) {
    case QV__P_NNCONST: case QV__P_CMP: case QV__P_IN: case QV__P_STARTS: case QV__P_ISNULL:
        mark_one(f, p->ref, col_index, seen, list, n);
        return;
    case QV__P_CMPCOL:
        mark_one(f, p->ref, col_index, seen, list, n);
        mark_one(f, p->ref2, col_index, seen, list, n);
        return;
    default:
        for (int32_t i = 0; i < p->n_kids; i++) mark_cols(f, p->kids[i], col_index, seen, list, n);
        return;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int32_t plan_nodes(const struct qv__xplan *p) {
    int32_t n = 1;
    for (int32_t i = 0; i < p->n_kids; i++) n += plan_nodes(p->kids[i]);
    return n;
}

static bool int_like(int vt) {
    return (vt >= QV__VT_I8 && vt <= QV__VT_U64) || vt == QV__VT_D64;
}
static bool is_unsigned(int vt) { return vt >= QV__VT_U8 && vt <= QV__VT_U64; }

/* A comparison of a reference with a constant that can bound a range:
 * lower (>=, >) or upper (<=, <), on an integer-like column. */
static bool range_cmp(const struct qv__filter *f, const struct qv__xplan *p) {
    if (p->kind != QV__P_CMP) return false;
    const struct qv__xref *r = &f->b->refs[p->ref];
    return int_like(r->vt) && !r->ftotal && p->op >= QV_CMP_LT;
}
static bool is_lower(const struct qv__xplan *p) { return p->op == QV_CMP_GE || p->op == QV_CMP_GT; }

/* The inclusive bound of a range comparison in the pred's domain; false
 * when it cannot be made inclusive (x > max, x < min: left as they are). */
static bool inclusive_bound(int vt, const struct qv__xplan *p, int64_t *si, uint64_t *ui) {
    bool uns = is_unsigned(vt);
    *si = p->ki;
    *ui = p->ku;
    switch (p->op) {
    case QV_CMP_GT:
        if (uns ? p->ku == UINT64_MAX : p->ki == INT64_MAX) return false;
        *si = p->ki + (uns ? 0 : 1);
        *ui = p->ku + (uns ? 1 : 0);
        return true;
    case QV_CMP_LT:
        if (uns ? p->ku == 0 : p->ki == INT64_MIN) return false;
        *si = p->ki - (uns ? 0 : 1);
        *ui = p->ku - (uns ? 1 : 0);
        return true;
    default: return true;
    }
}

static int value_kind(int vt) {
    switch (vt) {
    case QV__VT_I8: return QV_KIND_INT8;
    case QV__VT_I16: return QV_KIND_INT16;
    case QV__VT_I32: return QV_KIND_INT32;
    case QV__VT_I64: case QV__VT_D64: return QV_KIND_INT64;
    case QV__VT_U8: return QV_KIND_UINT8;
    case QV__VT_U16: return QV_KIND_UINT16;
    case QV__VT_U32: return QV_KIND_UINT32;
    case QV__VT_U64: return QV_KIND_UINT64;
    case QV__VT_F32: return QV_KIND_FLOAT32;
    case QV__VT_F64: return QV_KIND_FLOAT64;
    case QV__VT_BIN32: return QV_KIND_BINARY;
    case QV__VT_BIN64: return QV_KIND_LARGE_BINARY;
    default: return 0;
    }
}

/* The kernel of plan node p over a decoder's values: the column's own
 * kernel, except that decimals come as plain int64 values. */
static qv__xkernel value_kernel(const struct qv__xref *r, const struct qv__xplan *p) {
    int vt = r->vt == QV__VT_D64 ? QV__VT_I64 : r->vt;
    if (r->vt != QV__VT_D64) return p->fn;
    return p->kind == QV__P_IN ? qv__kernel_in(vt) : qv__kernel_cmp(vt, p->op);
}

/* The pred's eval callback: the conjunct's kernels over the values a
 * dictionary, a run-end or a constant node produced. */
static int eval_values(void *ctx, const struct qv_values *vals, uint64_t *out,
                       struct qv_error *err) {
    const struct conj *cj = ctx;
    if ((int)vals->kind != cj->vkind)
        return qv_error_set(err, ENOTSUP, "filter: values of kind %s where %s was expected",
                            qv_value_kind_name(vals->kind),
                            qv_value_kind_name((enum qv_value_kind)cj->vkind));
    const void *bufs[3] = {NULL, vals->values, vals->data};
    struct ArrowArray a = {.length = vals->count, .n_buffers = 3, .buffers = bufs};
    int64_t n = vals->count;
    if (n <= 0) return 0;
    cj->ev.fn(&cj->ev, &a, 0, n, out);
    if (!cj->p2) return 0;
    /* Both bounds: the second in blocks of 64 words, slots a multiple of 64
     * so that each block lands on whole words of out. */
    uint64_t tmp[64];
    for (int64_t s = 0; s < n; s += 64 * 64) {
        int64_t m = n - s < 64 * 64 ? n - s : 64 * 64;
        cj->ev2.fn(&cj->ev2, &a, s, m, tmp);
        for (int64_t w = 0; w < words_for(m); w++) out[(s >> 6) + w] &= tmp[w];
    }
    return 0;
}

/* Fills the encoded-domain form of a simple conjunct; false when there is
 * none (the conjunct decodes). */
static bool build_pred(const struct qv__filter *f, struct conj *cj) {
    const struct qv__xplan *p = cj->p;
    if (p->kind != QV__P_CMP && p->kind != QV__P_IN && p->kind != QV__P_STARTS) return false;
    const struct qv__xref *r = &f->b->refs[p->ref];
    if (r->depth != 0 || r->field->n_children != 0) return false;
    int vk = value_kind(r->vt);
    if (!vk) return false;
    if (p->kind == QV__P_IN && p->set_null && p->n_set == 0) return false;
    struct qv_enc_pred *e = &cj->pred;
    memset(e, 0, sizeof *e);
    cj->vkind = vk;
    cj->ev = *p;
    cj->ev.fn = value_kernel(r, p);
    if (cj->p2) {
        cj->ev2 = *cj->p2;
        cj->ev2.fn = value_kernel(r, cj->p2);
    }
    if (!cj->ev.fn || (cj->p2 && !cj->ev2.fn)) return false;
    e->eval = eval_values;
    e->eval_ctx = cj;
    e->op = QV_ENC_OP_EVAL;
    bool bytes = r->vt == QV__VT_BIN32 || r->vt == QV__VT_BIN64;
    if (p->kind == QV__P_STARTS) {
        e->op = QV_ENC_OP_PREFIX;
        e->bytes = p->kb.p;
        e->len = p->kb.n;
    } else if (p->kind == QV__P_CMP && bytes) {
        if (p->op == QV_CMP_EQ || p->op == QV_CMP_NE) {
            e->op = p->op == QV_CMP_EQ ? QV_ENC_OP_EQ : QV_ENC_OP_NE;
            e->bytes = p->kb.p;
            e->len = p->kb.n;
        }
    } else if (p->kind == QV__P_CMP && int_like(r->vt) && !r->ftotal) {
        if (cj->p2) {
            int64_t s1, s2;
            uint64_t u1, u2;
            inclusive_bound(r->vt, p, &s1, &u1);
            inclusive_bound(r->vt, cj->p2, &s2, &u2);
            e->op = QV_ENC_OP_BETWEEN;
            e->lo = s1, e->hi = s2, e->ulo = u1, e->uhi = u2;
        } else {
            e->op = p->op; /* enum qv_enc_op lists the six comparisons in qv_cmp_op's order */
            e->lo = p->ki;
            e->ulo = p->ku;
        }
    }
    return true;
}

/* Estimated decode cost of a column, ns per row. */
static double decode_cost(const struct qv_field *f) {
    switch (f->type) {
    case QV_TYPE_BOOL: case QV_TYPE_INT8: case QV_TYPE_UINT8: return 0.6;
    case QV_TYPE_INT16: case QV_TYPE_UINT16: case QV_TYPE_FLOAT16: return 0.8;
    case QV_TYPE_INT32: case QV_TYPE_UINT32: case QV_TYPE_FLOAT32: case QV_TYPE_DATE32: return 1.0;
    case QV_TYPE_INT64: case QV_TYPE_UINT64: case QV_TYPE_FLOAT64: case QV_TYPE_TIMESTAMP: return 1.5;
    case QV_TYPE_DECIMAL128: return f->precision <= 18 ? 1.5 : 3.0;
    case QV_TYPE_FIXED_BINARY: return 4.0;
    case QV_TYPE_UTF8: case QV_TYPE_LARGE_UTF8: case QV_TYPE_BINARY: case QV_TYPE_LARGE_BINARY:
        return 8.0;
    default: {
        double c = 2.0;
        for (int64_t i = 0; i < f->n_children; i++) c += decode_cost(&f->children[i]);
        return c;
    }
    }
}

static double guess_pass(const struct qv__xplan *p, bool between) {
    if (between) return 0.25;
    switch (p->kind) {
    case QV__P_CMP: case QV__P_CMPCOL:
        return p->op == QV_CMP_EQ ? 0.1 : p->op == QV_CMP_NE ? 0.9 : 0.5;
    case QV__P_IN: return 0.2;
    case QV__P_STARTS: return 0.2;
    case QV__P_ISNULL: return p->negate ? 0.9 : 0.1;
    case QV__P_NOT: return 1.0 - guess_pass(p->kids[0], false);
    default: return 0.5;
    }
}

static void estimate(const struct qv__filter *f, struct conj *cj) {
    const struct qv_schema *s = qv_reader_schema(f->rd);
    double c = 0;
    for (int32_t i = 0; i < cj->n_cols; i++)
        c += decode_cost(&s->root.children[f->cols[cj->cols[i]]]);
    /* The encoded path compares packed integers without writing Arrow
     * buffers, strings without assembling offsets. */
    if (cj->enc) c *= cj->pred.op == QV_ENC_OP_EVAL ? 0.7 : 0.3;
    cj->est_cost = c + 0.2 * plan_nodes(cj->p);
    cj->est_pass = guess_pass(cj->p, cj->p2 != NULL);
}

static double rank_of(struct conj *cj) {
    int64_t in = __atomic_load_n(&cj->m_in, __ATOMIC_RELAXED);
    double cost = cj->est_cost, pass = cj->est_pass;
    if (in >= MEASURED_ROWS) {
        cost = (double)__atomic_load_n(&cj->m_ns, __ATOMIC_RELAXED) / (double)in;
        pass = (double)__atomic_load_n(&cj->m_out, __ATOMIC_RELAXED) / (double)in;
    }
    double drop = 1.0 - pass;
    return cost / (drop < 1e-3 ? 1e-3 : drop);
}

/* Orders the conjuncts by rank, equal ranks in plan order: each rank is
 * computed once, then a bottom-up merge sort (n log n: a filter may hold
 * tens of thousands of conjuncts, and this runs every few batches). */
static void rerank(struct qv__filter *f) {
    qv_mutex_lock(&f->mu);
    const int32_t n = f->n_conj;
    double *rk = f->rank;
    int32_t *o = f->order, *t = f->sort_tmp;
    for (int32_t i = 0; i < n; i++) {
        rk[i] = rank_of(&f->conj[i]);
        o[i] = i;
    }
    for (int32_t w = 1; w < n; w *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * w) {
            int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int32_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) t[k++] = rk[o[b]] < rk[o[a]] ? o[b++] : o[a++];
            while (a < mid) t[k++] = o[a++];
            while (b < hi) t[k++] = o[b++];
        }
        memcpy(o, t, (size_t)n * 4);
    }
    __atomic_store_n(&f->version, f->version + 1, __ATOMIC_RELEASE);
    qv_mutex_unlock(&f->mu);
}

void qv__filter_destroy(struct qv__filter *f) {
    if (!f) return;
    struct qv_reservation *r = f->r;
    for (int32_t i = 0; f->conj && i < f->n_conj; i++)
        if (f->conj[i].cols)
            qv_free(r, f->conj[i].cols, (size_t)(f->conj[i].cols_cap ? f->conj[i].cols_cap : 1) * 4);
    if (f->conj) qv_free(r, f->conj, (size_t)f->conj_cap * sizeof *f->conj);
    if (f->order) qv_free(r, f->order, (size_t)f->conj_cap * 4);
    if (f->rank) qv_free(r, f->rank, (size_t)f->conj_cap * sizeof *f->rank);
    if (f->sort_tmp) qv_free(r, f->sort_tmp, (size_t)f->conj_cap * 4);
    if (f->cols) qv_free(r, f->cols, (size_t)(f->ncol ? f->ncol : 1) * 4);
    qv_mutex_destroy(&f->mu);
    qv_free(r, f, sizeof *f);
}

int qv__filter_create(const struct qv_reader *rd, struct qv_expr *filter, struct qv_pool *pool,
                      struct qv_reservation *r, struct qv__filter **out, struct qv_error *err) {
    (void)pool;
    *out = NULL;
    if (!rd || !filter || !filter->binding || !r)
        return qv_error_set(err, EINVAL, "filter: no reader, bound filter or reservation given");
    const struct qv__xbinding *b = filter->binding;
    struct qv__filter *f = qv_calloc(r, sizeof *f, err);
    if (!f) return ENOMEM;
    qv_mutex_init(&f->mu);
    f->rd = rd;
    f->b = b;
    f->r = r;
    f->ncol = (int32_t)qv_reader_schema(rd)->root.n_children;
    int rc = 0;
    int32_t nc = count_conjuncts(b->plan);
    const size_t nref2 = (size_t)(b->n_refs ? b->n_refs : 1) * 2, ncl = (size_t)(f->ncol ? f->ncol : 1);
    const struct qv__xplan **ps = qv_calloc(r, (size_t)nc * sizeof *ps, err);
    int32_t *partner = ps ? qv_alloc(r, (size_t)nc * 4, err) : NULL;
    int32_t *pend = partner ? qv_alloc(r, nref2 * 4, err) : NULL;
    uint8_t *seen = pend ? qv_calloc(r, ncl, err) : NULL;
    int32_t *scratch_cols = seen ? qv_alloc(r, ncl * 4, err) : NULL;
    int32_t *col_index = scratch_cols ? qv_calloc(r, ncl * 4, err) : NULL;
    f->cols = col_index ? qv_calloc(r, ncl * 4, err) : NULL;
    if (!f->cols) {
        rc = ENOMEM;
        goto done;
    }
    int32_t np = 0;
    collect_conjuncts(b->plan, ps, &np);
    /* Constants: TRUE ones drop out, any other empties every batch. */
    int32_t k = 0;
    for (int32_t i = 0; i < np; i++) {
        if (ps[i]->kind == QV__P_CONST) {
            if (ps[i]->truth != QV__TV_T) f->never = true;
            continue;
        }
        ps[k++] = ps[i];
    }
    np = k;
    for (int32_t i = 0; i < np; i++) partner[i] = -1;
    for (int32_t c = 0; c < f->ncol; c++) col_index[c] = -1;
    for (int32_t i = 0; i < b->n_columns; i++) {
        int32_t c = b->columns[i];
        if (c < 0 || c >= f->ncol) {
            rc = qv_error_set(err, EINVAL, "filter: column %d is not in the file's schema", (int)c);
            goto done;
        }
        col_index[c] = f->n_cols;
        f->cols[f->n_cols++] = c;
    }
    f->conj_cap = np ? np : 1;
    f->conj = qv_calloc(r, (size_t)f->conj_cap * sizeof *f->conj, err);
    f->order = f->conj ? qv_calloc(r, (size_t)f->conj_cap * 4, err) : NULL;
    f->rank = f->order ? qv_calloc(r, (size_t)f->conj_cap * sizeof *f->rank, err) : NULL;
    f->sort_tmp = f->rank ? qv_calloc(r, (size_t)f->conj_cap * 4, err) : NULL;
    if (!f->sort_tmp) {
        rc = ENOMEM;
        goto done;
    }
    /* BETWEEN (a lower and an upper bound on one column) becomes one range
     * comparison again: each bound pairs with the first opposite bound of
     * its reference that is still unpaired when it comes, found through a
     * pending slot per reference and side, so that pairing is linear in the
     * conjuncts (filters of tens of thousands of ranges are generated). */
    for (int32_t x = 0; x < 2 * (b->n_refs ? b->n_refs : 1); x++) pend[x] = -1;
    for (int32_t i = 0; i < np; i++) {
        int64_t s;
        uint64_t u;
        if (!range_cmp(f, ps[i]) ||
            !inclusive_bound(f->b->refs[ps[i]->ref].vt, ps[i], &s, &u))
            continue;
        int32_t *mine = &pend[2 * ps[i]->ref + is_lower(ps[i])];
        int32_t *other = &pend[2 * ps[i]->ref + !is_lower(ps[i])];
        if (*other >= 0) {
            partner[*other] = i;
            partner[i] = -2; /* absorbed by an earlier conjunct */
            *other = -1;
        } else if (*mine < 0) {
            *mine = i;
        }
    }
    for (int32_t i = 0; i < np; i++) {
        if (partner[i] == -2) continue; /* paired into a BETWEEN */
        struct conj *cj = &f->conj[f->n_conj++];
        cj->p = ps[i];
        if (partner[i] >= 0) {
            const struct qv__xplan *q = ps[partner[i]];
            cj->p = is_lower(ps[i]) ? ps[i] : q;
            cj->p2 = is_lower(ps[i]) ? q : ps[i];
        }
        /* The filter columns the conjunct reads, ascending: marked while
         * walking its plan, so the cost is its own size (not that of the
         * whole filter's references). */
        int32_t ncols = 0;
        mark_cols(f, cj->p, col_index, seen, scratch_cols, &ncols);
        if (cj->p2) mark_cols(f, cj->p2, col_index, seen, scratch_cols, &ncols);
        qsort(scratch_cols, (size_t)ncols, sizeof *scratch_cols, cmp_i32);
        for (int32_t c = 0; c < ncols; c++) seen[scratch_cols[c]] = 0;
        cj->cols_cap = ncols;
        cj->cols = qv_calloc(r, (size_t)(ncols ? ncols : 1) * 4, err);
        if (!cj->cols) {
            rc = ENOMEM;
            goto done;
        }
        memcpy(cj->cols, scratch_cols, (size_t)ncols * 4);
        cj->n_cols = ncols;
        cj->enc = cj->n_cols == 1 && build_pred(f, cj);
        estimate(f, cj);
    }
    rerank(f);
done:
    if (ps) qv_free(r, ps, (size_t)nc * sizeof *ps);
    if (partner) qv_free(r, partner, (size_t)nc * 4);
    if (pend) qv_free(r, pend, nref2 * 4);
    if (seen) qv_free(r, seen, ncl);
    if (scratch_cols) qv_free(r, scratch_cols, ncl * 4);
    if (col_index) qv_free(r, col_index, ncl * 4);
    if (rc) {
        qv__filter_destroy(f);
        return rc;
    }
    *out = f;
    return 0;
}

/* ---- contexts ---- */

static void free_scratch(struct qv__filter_ctx *c) {
    if (!c->cap) return;
    size_t wb = (size_t)words_for(c->cap) * 8;
    qv_free(c->r, c->surv, wb);
    qv_free(c->r, c->next, wb);
    qv_free(c->r, c->tv, wb);
    qv_free(c->r, c->dec, wb);
    qv_free(c->r, c->rows, (size_t)c->cap * 8);
    c->cap = 0;
}

static int grow_scratch(struct qv__filter_ctx *c, int64_t n, struct qv_error *err) {
    if (n <= c->cap) return 0;
    free_scratch(c);
    int64_t cap = n < 1024 ? 1024 : n;
    size_t wb = (size_t)words_for(cap) * 8;
    c->surv = qv_alloc(c->r, wb, err);
    c->next = c->surv ? qv_alloc(c->r, wb, err) : NULL;
    c->tv = c->next ? qv_alloc(c->r, wb, err) : NULL;
    c->dec = c->tv ? qv_alloc(c->r, wb, err) : NULL;
    c->rows = c->dec ? qv_alloc(c->r, (size_t)cap * 8, err) : NULL;
    if (!c->rows) {
        if (c->dec) qv_free(c->r, c->dec, wb);
        if (c->tv) qv_free(c->r, c->tv, wb);
        if (c->next) qv_free(c->r, c->next, wb);
        if (c->surv) qv_free(c->r, c->surv, wb);
        return ENOMEM;
    }
    c->cap = cap;
    return 0;
}

void qv__filter_ctx_destroy(struct qv__filter_ctx *c) {
    if (!c) return;
    const struct qv__filter *f = c->f;
    struct qv_reservation *r = c->r;
    free_scratch(c);
    size_t nc = (size_t)(f->n_conj ? f->n_conj : 1), nf = (size_t)(f->n_cols ? f->n_cols : 1);
    if (c->cols) {
        for (int32_t i = 0; i < f->n_cols; i++) {
            if (c->cols[i].arr.release) c->cols[i].arr.release(&c->cols[i].arr);
            qv__decoded_free(&c->cols[i].kept);
            qv_column_reader_close(c->cols[i].cr);
        }
        qv_free(r, c->cols, nf * sizeof *c->cols);
    }
    if (c->truth) qv_free(r, c->truth, nc * sizeof *c->truth);
    if (c->no_enc) qv_free(r, c->no_enc, nc);
    if (c->order) qv_free(r, c->order, nc * 4);
    if (c->st) qv_free(r, c->st, (size_t)(f->b->n_refs ? f->b->n_refs : 1) * sizeof *c->st);
    if (c->map) qv_free(r, c->map, (size_t)(f->ncol ? f->ncol : 1) * 4);
    if (c->children) qv_free(r, c->children, nf * sizeof *c->children);
    qv_free(r, c, sizeof *c);
    qv_reservation_destroy(r);
}

int qv__filter_ctx_create(struct qv__filter *f, struct qv_pool *pool, struct qv__filter_ctx **out,
                          struct qv_error *err) {
    *out = NULL;
    struct qv_reservation *r;
    struct qv_reservation_options ro = {.name = "scan filter"};
    int rc = qv_reservation_create(pool, &ro, &r, err);
    if (rc) return rc;
    struct qv__filter_ctx *c = qv_calloc(r, sizeof *c, err);
    if (!c) {
        qv_reservation_destroy(r);
        return ENOMEM;
    }
    c->f = f;
    c->r = r;
    c->rg = -1;
    c->version = -1;
    size_t nc = (size_t)(f->n_conj ? f->n_conj : 1), nf = (size_t)(f->n_cols ? f->n_cols : 1);
    c->cols = qv_calloc(r, nf * sizeof *c->cols, err);
    c->truth = c->cols ? qv_calloc(r, nc * sizeof *c->truth, err) : NULL;
    c->no_enc = c->truth ? qv_calloc(r, nc, err) : NULL;
    c->order = c->no_enc ? qv_calloc(r, nc * 4, err) : NULL;
    c->st = c->order ? qv_calloc(r, (size_t)(f->b->n_refs ? f->b->n_refs : 1) * sizeof *c->st, err)
                     : NULL;
    c->map = c->st ? qv_calloc(r, (size_t)(f->ncol ? f->ncol : 1) * 4, err) : NULL;
    c->children = c->map ? qv_calloc(r, nf * sizeof *c->children, err) : NULL;
    if (!c->children) {
        qv__filter_ctx_destroy(c);
        return ENOMEM;
    }
    for (int32_t i = 0; i < f->n_cols; i++) c->cols[i].rg = -1;
    *out = c;
    return 0;
}

/* ---- one batch ---- */

/* Positions the reader of filter column i on row group rg: the caller's
 * (qv__filter_ctx_set_readers), or the ctx's own. */
static int ensure_reader(struct qv__filter_ctx *c, int32_t i, int64_t rg,
                         struct qv__filter_counts *counts, struct qv_error *err) {
    struct ccol *cc = &c->cols[i];
    if (c->readers) return c->readers(c->readers_arg, c->f->cols[i], rg, &cc->use, err);
    if (cc->cr && cc->rg == rg) return 0;
    /* Moving keeps the column's read buffer from one row group to the next. */
    int rc = cc->cr ? qv_column_reader_move(&cc->cr, rg, err)
                    : qv_column_reader_open(c->f->rd, rg, c->f->cols[i], c->r, &cc->cr, err);
    cc->rg = rc ? -1 : rg;
    cc->use = cc->cr;
    if (!rc && counts) counts->bytes_loaded += (int64_t)qv__column_reader_loaded_bytes(cc->cr);
    return rc;
}

int qv__filter_ctx_loaded(const struct qv__filter_ctx *c, int64_t rg) {
    if (c->readers) return 0;
    for (int32_t i = 0; i < c->f->n_cols; i++)
        if (!c->cols[i].cr || c->cols[i].rg != rg) return 0;
    return 1;
}

void qv__filter_ctx_set_readers(struct qv__filter_ctx *c, qv__filter_reader_fn fn, void *arg) {
    c->readers = fn;
    c->readers_arg = arg;
}

void qv__decoded_free(struct qv__decoded *d) {
    if (d->arr.release) d->arr.release(&d->arr);
    if (d->rows) qv_free(d->res, d->rows, (size_t)(d->n ? d->n : 1) * 8);
    qv_reservation_destroy(d->res);
    memset(d, 0, sizeof *d);
}

void qv__filter_ctx_want(struct qv__filter_ctx *c, int32_t column) {
    for (int32_t i = 0; i < c->f->n_cols; i++)
        if (c->f->cols[i] == column) c->cols[i].want = true;
}

int qv__filter_ctx_take_decoded(struct qv__filter_ctx *c, int32_t column, struct qv__decoded *out) {
    for (int32_t i = 0; i < c->f->n_cols; i++) {
        struct ccol *cc = &c->cols[i];
        if (c->f->cols[i] != column || !cc->want || !cc->kept.arr.release) continue;
        *out = cc->kept;
        memset(&cc->kept, 0, sizeof cc->kept);
        return 1;
    }
    return 0;
}

/* Frees what the previous batch kept and nobody took. */
static void drop_kept(struct qv__filter_ctx *c) {
    for (int32_t i = 0; i < c->f->n_cols; i++)
        if (c->cols[i].want) qv__decoded_free(&c->cols[i].kept);
}

/* What the statistics of row group rg say about each conjunct. */
static int enter_row_group(struct qv__filter_ctx *c, int64_t rg, struct qv_error *err) {
    const struct qv__filter *f = c->f;
    int rc = qv__prune_zone_stats(f->b, f->rd, rg, c->st, err);
    if (rc) return rc;
    int64_t rows = qv_reader_row_group_rows(f->rd, rg);
    for (int32_t i = 0; i < f->n_conj; i++) {
        const struct conj *cj = &f->conj[i];
        unsigned t = qv__prune_truth(f->b, cj->p, c->st, rows);
        if (cj->p2) {
            unsigned t2 = qv__prune_truth(f->b, cj->p2, c->st, rows);
            /* Both TRUE everywhere, or possibly TRUE only if both may be. */
            t = (t == QV__TV_T && t2 == QV__TV_T) ? QV__TV_T
                : ((t & QV__TV_T) && (t2 & QV__TV_T)) ? (QV__TV_T | QV__TV_F | QV__TV_N)
                                                     : QV__TV_F;
        }
        c->truth[i] = t;
        c->no_enc[i] = 0;
    }
    c->rg = rg;
    return 0;
}

static void release_cols(struct qv__filter_ctx *c, const struct conj *cj) {
    for (int32_t i = 0; i < cj->n_cols; i++) {
        struct ArrowArray *a = &c->cols[cj->cols[i]].arr;
        if (a->release) a->release(a);
    }
}

/* Moves the arrays of the conjunct's wanted columns into their kept slot:
 * they hold rows[0..m) (a copy is kept), or [first, first + m) when rows is
 * NULL. The copy is best effort: without memory for it the array is
 * released and the projection decodes the column itself. */
static void keep_cols(struct qv__filter_ctx *c, const struct conj *cj, const int64_t *rows,
                      int64_t first, int64_t m) {
    for (int32_t i = 0; i < cj->n_cols; i++) {
        struct ccol *cc = &c->cols[cj->cols[i]];
        if (!cc->want || !cc->arr.release) continue;
        struct qv__decoded *d = &cc->kept;
        d->first = first;
        d->n = m;
        if (rows) {
            d->rows = qv_alloc(d->res, (size_t)(m ? m : 1) * 8, NULL);
            if (!d->rows) continue; /* release_cols frees the array */
            memcpy(d->rows, rows, (size_t)m * 8);
        }
        d->arr = cc->arr;
        cc->arr.release = NULL;
    }
}

static int decode_conj(struct qv__filter_ctx *c, const struct conj *cj, int64_t rg, int64_t lo,
                       const int64_t *rows, int64_t n, int64_t cnt,
                       struct qv__filter_counts *counts, struct qv_error *err) {
    const struct qv__filter *f = c->f;
    const struct qv_schema *schema = qv_reader_schema(f->rd);
    /* Take the selected rows when they are sparse (or come as a list);
     * otherwise decode one range over the vectors that hold them. */
    int64_t vs = 0, ve = n;
    bool take = rows != NULL && cnt < n;
    if (!rows && cnt < n) {
        int64_t first = -1, last = -1;
        for (int64_t w = 0; w < words_for(n); w++)
            if (c->surv[w]) {
                if (first < 0) first = w * 64 + __builtin_ctzll(c->surv[w]);
                last = w * 64 + 63 - __builtin_clzll(c->surv[w]);
            }
        vs = (lo + first) / VEC * VEC - lo;
        ve = (lo + last) / VEC * VEC + VEC - lo;
        if (vs < 0) vs = 0;
        if (ve > n) ve = n;
        take = cnt * 4 < ve - vs;
    }
    int64_t m = take ? cnt : ve - vs;
    if (take) {
        int64_t j = 0;
        for (int64_t w = 0; w < words_for(n); w++)
            for (uint64_t x = c->surv[w]; x; x &= x - 1) {
                int64_t i = w * 64 + __builtin_ctzll(x);
                c->rows[j++] = rows ? rows[i] : lo + i;
            }
    }
    int rc = 0;
    for (int32_t i = 0; i < cj->n_cols && !rc; i++) {
        int32_t k = cj->cols[i];
        const struct qv_field *fld = &schema->root.children[f->cols[k]];
        rc = ensure_reader(c, k, rg, counts, err);
        if (rc) break;
        struct ccol *cc = &c->cols[k];
        struct ArrowArray *a = &cc->arr;
        struct qv_reservation *ar = c->r;
        if (cc->want) {
            /* An earlier conjunct's decode of this batch covered more rows:
             * this one replaces it. The array gets a reservation of its
             * own, which the projection (maybe another thread) frees. */
            qv__decoded_free(&cc->kept);
            struct qv_reservation_options ro = {.name = "scan filter values"};
            rc = qv_reservation_create(qv_reservation_pool(c->r), &ro, &cc->kept.res, err);
            if (rc) break;
            ar = cc->kept.res;
        }
        rc = qv_owned_array_create(a, fld, ar, err);
        if (rc) break;
        rc = take ? qv_column_reader_take_into(cc->use, c->rows, m, a, ar, err)
             : rows ? qv_column_reader_take_into(cc->use, rows, n, a, ar, err)
                    : qv_column_reader_read_into(cc->use, lo + vs, m, a, ar, err);
        if (!rc) {
            if (counts) counts->values_decoded += m;
            /* The kernels trust offsets and lengths that the cheap tier checks. */
            rc = qv_arrow_array_validate(a, fld, QV_VALIDATE_CHEAP, err);
            if (rc) {
                if (err) qv__corrupt_mark(err); /* the file is at fault, not an argument */
                qv_error_wrap(err, EIO,
                              "file '%.300s': column '%.200s', row group %lld is corrupt: it "
                              "decoded to an invalid array: ",
                              qv_reader_path(f->rd), fld->name ? fld->name : "", (long long)rg);
                rc = EIO;
            }
        }
        c->map[f->cols[k]] = i;
        c->children[i] = a;
    }
    if (rc) {
        release_cols(c, cj);
        return rc;
    }
    const void *no_validity = NULL;
    struct ArrowArray view = {.length = m, .n_buffers = 1, .buffers = &no_validity,
                              .n_children = cj->n_cols, .children = c->children};
    rc = qv__expr_eval_node(f->b, cj->p, &view, c->map, c->tv, c->r, err);
    if (!rc && cj->p2) {
        rc = qv__expr_eval_node(f->b, cj->p2, &view, c->map, c->next, c->r, err);
        for (int64_t w = 0; !rc && w < words_for(m); w++) c->tv[w] &= c->next[w];
    }
    if (!rc) keep_cols(c, cj, take ? c->rows : rows, take || rows ? 0 : lo + vs, m);
    release_cols(c, cj);
    if (rc) return rc;
    /* Back to batch positions: the j-th decoded row is the j-th selected
     * one (take), or position vs + j (range: rows not selected drop out). */
    memset(c->next, 0, (size_t)words_for(n) * 8);
    if (take || (rows && cnt == n)) {
        int64_t j = 0;
        for (int64_t w = 0; w < words_for(n); w++)
            for (uint64_t x = c->surv[w]; x; x &= x - 1, j++)
                if ((c->tv[j >> 6] >> (j & 63)) & 1)
                    c->next[w] |= UINT64_C(1) << __builtin_ctzll(x);
        for (int64_t w = 0; w < words_for(n); w++) c->dec[w] |= c->surv[w];
    } else {
        for (int64_t w = 0; w < words_for(m); w++)
            for (uint64_t x = c->tv[w]; x; x &= x - 1) {
                int64_t i = vs + w * 64 + __builtin_ctzll(x);
                c->next[i >> 6] |= UINT64_C(1) << (i & 63);
            }
        for (int64_t w = 0; w < words_for(n); w++) c->next[w] &= c->surv[w];
        set_range(c->dec, vs, ve);
    }
    return 0;
}

/* The encoded path for a batch given as a list of rows: the column reader
 * answers over the span from the first row to the last, with only the
 * selected rows of the list selected. ENOTSUP when it cannot. */
static int eval_enc_rows(struct qv__filter_ctx *c, int32_t ci, int64_t rg, const int64_t *rows,
                         int64_t n, struct qv__filter_counts *counts, struct qv_error *err) {
    const struct conj *cj = &c->f->conj[ci];
    int32_t k = cj->cols[0];
    int rc = ensure_reader(c, k, rg, counts, err);
    if (rc) return rc;
    int64_t base = rows[0], span = rows[n - 1] - base + 1;
    size_t wb = (size_t)words_for(span) * 8;
    uint64_t *in = qv_calloc(c->r, wb, err);
    uint64_t *out = in ? qv_alloc(c->r, wb, err) : NULL;
    if (!out) {
        if (in) qv_free(c->r, in, wb);
        return ENOMEM;
    }
    for (int64_t w = 0; w < words_for(n); w++)
        for (uint64_t x = c->surv[w]; x; x &= x - 1) {
            int64_t b = rows[w * 64 + __builtin_ctzll(x)] - base;
            in[b >> 6] |= UINT64_C(1) << (b & 63);
        }
    struct qv_error e2;
    qv_error_clear(&e2);
    rc = qv__column_reader_filter(c->cols[k].use, base, span, &cj->pred, in, out, &e2);
    if (!rc) {
        memset(c->next, 0, (size_t)words_for(n) * 8);
        for (int64_t w = 0; w < words_for(n); w++)
            for (uint64_t x = c->surv[w]; x; x &= x - 1) {
                int64_t i = w * 64 + __builtin_ctzll(x), b = rows[i] - base;
                if ((out[b >> 6] >> (b & 63)) & 1) c->next[w] |= UINT64_C(1) << (i & 63);
            }
        uint64_t *t = c->surv;
        c->surv = c->next;
        c->next = t;
    } else if (rc != ENOTSUP && err) {
        *err = e2;
    }
    qv_free(c->r, out, wb);
    qv_free(c->r, in, wb);
    return rc;
}

/* Evaluates one conjunct on the selected rows (c->surv): the result, a
 * subset of them, goes back to c->surv. */
static int eval_conj(struct qv__filter_ctx *c, int32_t ci, int64_t rg, int64_t lo,
                     const int64_t *rows, int64_t n, int64_t cnt,
                     struct qv__filter_counts *counts, struct qv_error *err) {
    const struct conj *cj = &c->f->conj[ci];
    int rc;
    if (cj->enc && rows && !c->no_enc[ci] && rows[n - 1] - rows[0] < 16 * n) {
        rc = eval_enc_rows(c, ci, rg, rows, n, counts, err);
        if (rc != ENOTSUP) return rc;
        c->no_enc[ci] = 1;
    }
    if (cj->enc && !rows && !c->no_enc[ci]) {
        int32_t k = cj->cols[0];
        rc = ensure_reader(c, k, rg, counts, err);
        if (rc) return rc;
        struct qv_error e2;
        qv_error_clear(&e2);
        rc = qv__column_reader_filter(c->cols[k].use, lo, n, &cj->pred, cnt == n ? NULL : c->surv,
                                      c->next, &e2);
        if (!rc) {
            /* Bits past n are not the kernels' to define. */
            if (n & 63) c->next[words_for(n) - 1] &= (UINT64_C(1) << (n & 63)) - 1;
            uint64_t *t = c->surv;
            c->surv = c->next;
            c->next = t;
            return 0;
        }
        if (rc != ENOTSUP) {
            if (err) *err = e2;
            return rc;
        }
        /* This row group's encodings have no such path: decode from now on. */
        c->no_enc[ci] = 1;
    }
    rc = decode_conj(c, cj, rg, lo, rows, n, cnt, counts, err);
    if (rc) return rc;
    uint64_t *t = c->surv;
    c->surv = c->next;
    c->next = t;
    return 0;
}

int qv__filter_batch(struct qv__filter_ctx *c, int64_t rg, int64_t lo, const int64_t *rows,
                     int64_t n, int64_t *sel, int64_t *k, struct qv__filter_counts *counts,
                     const int *cancel, struct qv_error *err) {
    struct qv__filter *f = c->f;
    *k = 0;
    if (n < 0 || (!rows && lo < 0) || rg < 0 || rg >= qv_reader_num_row_groups(f->rd))
        return qv_error_set(err, EINVAL, "filter: row group %lld, rows %lld+%lld out of range",
                            (long long)rg, (long long)lo, (long long)n);
    if (counts) counts->rows_in += n;
    drop_kept(c);
    if (n == 0 || f->never) return 0;
    int rc = grow_scratch(c, n, err);
    if (rc) return rc;
    if (c->rg != rg && (rc = enter_row_group(c, rg, err))) return rc;
    if (__atomic_load_n(&f->version, __ATOMIC_ACQUIRE) != c->version) {
        qv_mutex_lock(&f->mu);
        memcpy(c->order, f->order, (size_t)f->n_conj * 4);
        c->version = f->version;
        qv_mutex_unlock(&f->mu);
    }
    ones(c->surv, n);
    memset(c->dec, 0, (size_t)words_for(n) * 8);
    int64_t cnt = n;
    for (int32_t o = 0; o < f->n_conj && cnt > 0; o++) {
        if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE))
            return qv_error_set(err, ECANCELED, "scan cancelled");
        int32_t ci = c->order[o];
        unsigned t = c->truth[ci];
        if (t == QV__TV_T) continue; /* TRUE for every row of the row group */
        if (!(t & QV__TV_T)) {       /* TRUE for none */
            cnt = 0;
            break;
        }
        uint64_t t0 = qv_now_ns();
        rc = eval_conj(c, ci, rg, lo, rows, n, cnt, counts, err);
        if (rc) return rc;
        int64_t out = popcount(c->surv, n);
        struct conj *cj = &f->conj[ci];
        __atomic_fetch_add(&cj->m_in, cnt, __ATOMIC_RELAXED);
        __atomic_fetch_add(&cj->m_out, out, __ATOMIC_RELAXED);
        __atomic_fetch_add(&cj->m_ns, (int64_t)(qv_now_ns() - t0), __ATOMIC_RELAXED);
        cnt = out;
    }
    if (cnt > 0) {
        int64_t j = 0;
        for (int64_t w = 0; w < words_for(n); w++)
            for (uint64_t x = c->surv[w]; x; x &= x - 1) {
                int64_t i = w * 64 + __builtin_ctzll(x);
                sel[j++] = rows ? rows[i] : lo + i;
            }
    }
    *k = cnt;
    if (counts) {
        counts->rows_out += cnt;
        counts->rows_decoded += popcount(c->dec, n);
    }
    if (f->n_conj > 1 && !__atomic_load_n(&f->frozen, __ATOMIC_RELAXED) &&
        __atomic_add_fetch(&f->batches, 1, __ATOMIC_RELAXED) % RERANK_EVERY == 0)
        rerank(f);
    return 0;
}

int32_t qv__filter_conjuncts(const struct qv__filter *f) { return f->n_conj; }

void qv__filter_set_order(struct qv__filter *f, const int32_t *order) {
    qv_mutex_lock(&f->mu);
    memcpy(f->order, order, (size_t)f->n_conj * 4);
    __atomic_store_n(&f->version, f->version + 1, __ATOMIC_RELEASE);
    /* No ranking until the order is set again: a test runs this order. */
    __atomic_store_n(&f->frozen, 1, __ATOMIC_RELAXED);
    qv_mutex_unlock(&f->mu);
}
