/* Pruning: can any row of a zone make the predicate TRUE?
 *
 * For every plan node we compute the set of truth values ({TRUE, FALSE,
 * NULL}) that the zone's rows may produce, from what the statistics allow:
 * a leaf looks at whether nulls and non-null values may occur and where the
 * values may lie; NOT maps the set, AND / OR combine their operands' sets
 * pairwise. Each set is a superset of what really occurs (correlations
 * between operands are ignored), so "TRUE is not in the root's set" proves
 * that no row is selected, and only then is a zone skipped. Comparisons use
 * the evaluator's exact rules (IEEE for floats, or the total order of
 * QV_NAN_LARGEST on qv__fkey keys; bytewise for strings). */
#include <math.h>
#include <string.h>

#include "scan/expr_internal.h"

#define T QV__TV_T
#define F QV__TV_F
#define N QV__TV_N

/* A bound on the values: a 128-bit integer, a double or bytes. A byte
 * bound with `sup` set is the supremum of everything starting with p (a
 * truncated max): it is above every string that starts with p. */
struct bnd {
    qv__xi128 q;
    double f;
    const uint8_t *p;
    size_t n;
    bool sup;
};

enum { C_INT, C_FLOAT, C_BYTES, C_NONE };

static int cls_of(const struct qv__xref *r) {
    /* A float in the total order is bounded by its keys, as an integer. */
    if (r->ftotal) return C_INT;
    switch (r->mode) {
    case QV__LM_NUM: case QV__LM_TIME: case QV__LM_BOOL: return C_INT;
    case QV__LM_FLOAT: return C_FLOAT;
    case QV__LM_BYTES: return C_BYTES;
    default: return C_NONE;
    }
}

static bool starts_with(const uint8_t *s, size_t sn, const uint8_t *p, size_t pn) {
    return sn >= pn && (pn == 0 || memcmp(s, p, pn) == 0);
}

static int cmp3(qv__xi128 a, qv__xi128 b) { return (a > b) - (a < b); }

/* Order of two bounds of one class. Floats never reach here with NaN. */
static int bcmp_(int cls, const struct bnd *a, const struct bnd *b) {
    if (cls == C_INT) return cmp3(a->q, b->q);
    if (cls == C_FLOAT) return (a->f > b->f) - (a->f < b->f);
    if (!a->sup && !b->sup) return qv__bytes_cmp(a->p, a->n, b->p, b->n);
    if (a->sup && b->sup) {
        bool ab = starts_with(a->p, a->n, b->p, b->n), ba = starts_with(b->p, b->n, a->p, a->n);
        if (ab && ba) return 0;
        if (ab) return -1; /* a extends b: a's supremum is at most b's */
        if (ba) return 1;
        return qv__bytes_cmp(a->p, a->n, b->p, b->n);
    }
    if (a->sup) {
        /* Everything starting with a's prefix is below a; anything else
         * differs from the prefix within it (or is a proper prefix of it). */
        if (starts_with(b->p, b->n, a->p, a->n)) return 1;
        return qv__bytes_cmp(a->p, a->n, b->p, b->n);
    }
    return -bcmp_(cls, b, a);
}

/* What a zone's statistics say about one reference. */
struct zone {
    bool null_possible, value_possible, nan_possible;
    bool other_possible;   /* ftotal: a non-NaN value may occur */
    bool bounded;          /* lo and hi hold */
    bool lo_exact, hi_exact; /* lo / hi are values that occur (not truncated) */
    struct bnd lo, hi;
};

static int64_t rd_i64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return (int64_t)v;
}

/* A float zone in the total order of QV_NAN_LARGEST, in key space (class
 * C_INT): the bounds are the keys of the non-NaN values (other_possible says
 * whether there may be any), and nan_possible whether the NaN key may
 * occur. ftotal_parts splits such a zone into its two parts, which the
 * leaves evaluate separately. */
static void ftotal_zone(const struct qv_zone_stats *st, int64_t rows, struct zone *z) {
    z->nan_possible = !st->has_nan_count || st->nan_count > 0;
    /* Only exact counts prove that every row is NULL or NaN. */
    z->other_possible = !(st->nan_count_exact && st->has_nan_count && st->has_null_count &&
                          rows >= 0 && st->nan_count >= rows - st->null_count_min);
    if (!z->nan_possible && !z->other_possible) {
        z->value_possible = false;
        return;
    }
    if (!z->other_possible || !st->has_min_max || !st->min || !st->max || st->min_len != 8 ||
        st->max_len != 8)
        return;
    double lo, hi;
    uint64_t a = (uint64_t)rd_i64(st->min), b = (uint64_t)rd_i64(st->max);
    memcpy(&lo, &a, 8);
    memcpy(&hi, &b, 8);
    if (isnan(lo) || isnan(hi) || lo > hi) return; /* inconsistent: ignore */
    z->lo.q = qv__fkey(lo);
    z->hi.q = qv__fkey(hi);
    z->lo_exact = z->hi_exact = true;
    z->bounded = true;
}

/* The parts of an ftotal zone, each holding values only (no NULL): the
 * non-NaN values and the NaN point. Returns how many there are. */
static int ftotal_parts(const struct zone *z, struct zone part[2]) {
    int n = 0;
    if (!z->value_possible) return 0;
    if (z->other_possible) {
        part[n] = *z;
        part[n].nan_possible = false;
        part[n].null_possible = false;
        part[n].value_possible = true;
        n++;
    }
    if (z->nan_possible) {
        memset(&part[n], 0, sizeof part[n]);
        part[n].value_possible = part[n].lo_exact = part[n].hi_exact = part[n].bounded = true;
        part[n].lo.q = part[n].hi.q = INT64_MAX; /* qv__fkey(NaN) */
        n++;
    }
    return n;
}

static void zone_of(const struct qv__xref *r, const struct qv_zone_stats *st, int64_t rows,
                    struct zone *z) {
    memset(z, 0, sizeof *z);
    z->null_possible = z->value_possible = z->nan_possible = z->other_possible = true;
    if (r->vt == QV__VT_NULL) {
        z->value_possible = false;
        return;
    }
    if (!st) return;
    if (st->has_null_count) {
        z->null_possible = st->null_count_max > 0;
        z->value_possible = rows < 0 || st->null_count_min < rows;
    }
    int cls = cls_of(r);
    if (r->ftotal) {
        ftotal_zone(st, rows, z);
        return;
    }
    if (cls == C_FLOAT && st->has_nan_count) z->nan_possible = st->nan_count > 0;
    if (cls != C_FLOAT) z->nan_possible = false;
    if (!st->has_min_max || !st->min || !st->max) return;
    z->lo_exact = z->hi_exact = true;
    switch (cls) {
    case C_INT:
        if (r->vt == QV__VT_BOOL) {
            if (st->min_len != 1 || st->max_len != 1) return;
            z->lo.q = st->min[0] != 0;
            z->hi.q = st->max[0] != 0;
        } else if (r->vt == QV__VT_D128) {
            if (st->min_len != 16 || st->max_len != 16) return;
            qv__xu128 lo = 0, hi = 0;
            for (int i = 15; i >= 0; i--) {
                lo = (lo << 8) | st->min[i];
                hi = (hi << 8) | st->max[i];
            }
            z->lo.q = (qv__xi128)lo;
            z->hi.q = (qv__xi128)hi;
        } else {
            if (st->min_len != 8 || st->max_len != 8) return;
            int64_t lo = rd_i64(st->min), hi = rd_i64(st->max);
            bool uns = r->vt >= QV__VT_U8 && r->vt <= QV__VT_U64;
            z->lo.q = uns ? (qv__xi128)(uint64_t)lo : lo;
            z->hi.q = uns ? (qv__xi128)(uint64_t)hi : hi;
        }
        if (z->lo.q > z->hi.q) return; /* inconsistent: ignore */
        break;
    case C_FLOAT: {
        if (st->min_len != 8 || st->max_len != 8) return;
        uint64_t a = (uint64_t)rd_i64(st->min), b = (uint64_t)rd_i64(st->max);
        memcpy(&z->lo.f, &a, 8);
        memcpy(&z->hi.f, &b, 8);
        if (isnan(z->lo.f) || isnan(z->hi.f) || z->lo.f > z->hi.f) return;
        break;
    }
    case C_BYTES:
        z->lo.p = st->min;
        z->lo.n = st->min_len;
        z->hi.p = st->max;
        z->hi.n = st->max_len;
        z->hi.sup = st->max_truncated != 0;
        z->lo_exact = !st->min_truncated;
        z->hi_exact = !st->max_truncated;
        break;
    default: return;
    }
    z->bounded = true;
}

/* Truth values `v op k` can take for v within the zone's bounds. */
static unsigned range_vs(int cls, const struct zone *z, int op, const struct bnd *k) {
    if (!z->bounded) return T | F;
    int clo = bcmp_(cls, &z->lo, k), chi = bcmp_(cls, &z->hi, k);
    bool all_eq = z->lo_exact && z->hi_exact && clo == 0 && chi == 0;
    bool some_eq = clo <= 0 && chi >= 0;
    switch (op) {
    case QV_CMP_EQ: return (some_eq ? T : 0) | (all_eq ? 0 : F);
    case QV_CMP_NE: return (all_eq ? 0 : T) | (some_eq ? F : 0);
    case QV_CMP_LT: return (clo < 0 ? T : 0) | (chi >= 0 ? F : 0);
    case QV_CMP_LE: return (clo <= 0 ? T : 0) | (chi > 0 ? F : 0);
    case QV_CMP_GT: return (chi > 0 ? T : 0) | (clo <= 0 ? F : 0);
    default: return (chi >= 0 ? T : 0) | (clo < 0 ? F : 0);
    }
}

/* The constant of a comparison node as a bound of its class. */
static struct bnd const_of(int cls, const struct qv__xplan *p) {
    struct bnd k = {0};
    if (cls == C_INT) k.q = p->kq;
    else if (cls == C_FLOAT) k.f = p->kf;
    else {
        k.p = p->kb.p;
        k.n = p->kb.n;
    }
    return k;
}

/* Adds NULL when the reference may be null, and restricts to it when no
 * value may occur. */
static unsigned with_nulls(const struct zone *z, unsigned values) {
    return (z->value_possible ? values : 0) | (z->null_possible ? N : 0);
}

static unsigned prune_cmp(const struct qv__xref *r, const struct zone *z, const struct qv__xplan *p) {
    int cls = cls_of(r);
    unsigned v;
    if (cls == C_FLOAT && isnan(p->kf)) {
        v = p->op == QV_CMP_NE ? T : F;
    } else {
        struct bnd k = const_of(cls, p);
        v = range_vs(cls, z, p->op, &k);
        if (z->nan_possible) v |= p->op == QV_CMP_NE ? T : F;
    }
    return with_nulls(z, v);
}

/* Index of the first set element >= lo (binary search on the class). */
static bool set_meets(const struct qv__xref *r, const struct qv__xplan *p, const struct zone *z) {
    int cls = cls_of(r);
    if (r->vt == QV__VT_BOOL) {
        if (!z->bounded) return true;
        return (p->t0 && z->lo.q <= 0) || (p->t1 && z->hi.q >= 1);
    }
    if (!z->bounded) return p->n_set > 0;
    int64_t lo = 0, hi = p->n_set;
    struct bnd e;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        struct bnd m = {0};
        if (cls == C_INT) {
            if (r->vt == QV__VT_D128) memcpy(&m.q, (const char *)p->set + (size_t)mid * sizeof(qv__xi128), sizeof m.q);
            else if (r->vt >= QV__VT_U8 && r->vt <= QV__VT_U64) m.q = ((const uint64_t *)p->set)[mid];
            else m.q = ((const int64_t *)p->set)[mid];
        } else if (cls == C_FLOAT) {
            m.f = ((const double *)p->set)[mid];
        } else {
            m.p = ((const struct qv__bytes *)p->set)[mid].p;
            m.n = ((const struct qv__bytes *)p->set)[mid].n;
        }
        if (bcmp_(cls, &m, &z->lo) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo >= p->n_set) return false;
    memset(&e, 0, sizeof e);
    if (cls == C_INT) {
        if (r->vt == QV__VT_D128) memcpy(&e.q, (const char *)p->set + (size_t)lo * sizeof(qv__xi128), sizeof e.q);
        else if (r->vt >= QV__VT_U8 && r->vt <= QV__VT_U64) e.q = ((const uint64_t *)p->set)[lo];
        else e.q = ((const int64_t *)p->set)[lo];
    } else if (cls == C_FLOAT) {
        e.f = ((const double *)p->set)[lo];
    } else {
        e.p = ((const struct qv__bytes *)p->set)[lo].p;
        e.n = ((const struct qv__bytes *)p->set)[lo].n;
    }
    return bcmp_(cls, &e, &z->hi) <= 0;
}

/* Whether the zone may hold a value not in the set. */
static bool set_misses(const struct qv__xref *r, const struct qv__xplan *p, const struct zone *z) {
    if (z->nan_possible) return true;
    if (!z->bounded || !z->lo_exact || !z->hi_exact) return true;
    int cls = cls_of(r);
    if (r->vt == QV__VT_BOOL) return (z->lo.q <= 0 && !p->t0) || (z->hi.q >= 1 && !p->t1);
    if (bcmp_(cls, &z->lo, &z->hi) != 0) return true;
    /* Every value equals lo: it misses unless lo is listed. */
    struct zone one = *z;
    return !set_meets(r, p, &one);
}

static unsigned prune_in(const struct qv__xref *r, const struct zone *z, const struct qv__xplan *p) {
    unsigned v = 0;
    if (set_meets(r, p, z)) v |= T;
    if (set_misses(r, p, z)) v |= p->set_null ? N : F;
    return with_nulls(z, v);
}

static unsigned prune_starts(const struct zone *z, const struct qv__xplan *p) {
    unsigned v = T | F;
    if (z->bounded) {
        const struct bnd pre = {.p = p->kb.p, .n = p->kb.n};
        bool lo_in = starts_with(z->lo.p, z->lo.n, pre.p, pre.n);
        bool hi_in = starts_with(z->hi.p, z->hi.n, pre.p, pre.n);
        /* Values starting with the prefix form [prefix, sup(prefix)). */
        bool lo_below = lo_in || qv__bytes_cmp(z->lo.p, z->lo.n, pre.p, pre.n) < 0;
        bool hi_above = bcmp_(C_BYTES, &z->hi, &pre) >= 0;
        v = ((lo_below && hi_above) ? T : 0) | ((lo_in && hi_in) ? 0 : F);
    }
    return with_nulls(z, v);
}

static unsigned prune_cmpcol(const struct qv__xref *ra, const struct zone *x,
                             const struct zone *y, int op) {
    int cls = cls_of(ra);
    unsigned v = T | F;
    if (x->bounded && y->bounded) {
        int lo_hi = bcmp_(cls, &x->lo, &y->hi); /* x.lo vs y.hi */
        int hi_lo = bcmp_(cls, &x->hi, &y->lo); /* x.hi vs y.lo */
        bool overlap = lo_hi <= 0 && hi_lo >= 0;
        bool single_eq = x->lo_exact && x->hi_exact && y->lo_exact && y->hi_exact &&
                         bcmp_(cls, &x->lo, &x->hi) == 0 && bcmp_(cls, &y->lo, &y->hi) == 0 &&
                         bcmp_(cls, &x->lo, &y->lo) == 0;
        switch (op) {
        case QV_CMP_EQ: v = (overlap ? T : 0) | (single_eq ? 0 : F); break;
        case QV_CMP_NE: v = (single_eq ? 0 : T) | (overlap ? F : 0); break;
        case QV_CMP_LT: v = (lo_hi < 0 ? T : 0) | (hi_lo >= 0 ? F : 0); break;
        case QV_CMP_LE: v = (lo_hi <= 0 ? T : 0) | (hi_lo > 0 ? F : 0); break;
        case QV_CMP_GT: v = (hi_lo > 0 ? T : 0) | (lo_hi <= 0 ? F : 0); break;
        default: v = (hi_lo >= 0 ? T : 0) | (lo_hi < 0 ? F : 0); break;
        }
    }
    if (x->nan_possible || y->nan_possible) v |= op == QV_CMP_NE ? T : F;
    unsigned out = (x->value_possible && y->value_possible) ? v : 0;
    if (x->null_possible || y->null_possible) out |= N;
    return out;
}

/* The outcomes of a three-valued operator over every pair of possible
 * operand values. */
static unsigned and1(unsigned x, unsigned y) {
    if (x == F || y == F) return F;
    if (x == N || y == N) return N;
    return T;
}
static unsigned or1(unsigned x, unsigned y) {
    if (x == T || y == T) return T;
    if (x == N || y == N) return N;
    return F;
}
static unsigned combine(unsigned a, unsigned b, unsigned (*op)(unsigned, unsigned)) {
    unsigned r = 0;
    for (unsigned x = 1; x <= N; x <<= 1)
        for (unsigned y = 1; y <= N; y <<= 1)
            if ((a & x) && (b & y)) r |= op(x, y);
    return r;
}

static unsigned not3(unsigned a) {
    return ((a & T) ? F : 0) | ((a & F) ? T : 0) | (a & N);
}

static unsigned prune_node(const struct qv__xbinding *b, const struct qv__xplan *p,
                           const struct qv_zone_stats *st, int64_t rows) {
    struct zone z, z2;
    switch (p->kind) {
    case QV__P_CONST: return p->truth;
    case QV__P_NNCONST:
        zone_of(&b->refs[p->ref], st ? &st[p->ref] : NULL, rows, &z);
        return with_nulls(&z, p->truth);
    case QV__P_ISNULL: {
        zone_of(&b->refs[p->ref], st ? &st[p->ref] : NULL, rows, &z);
        unsigned isnull = z.null_possible ? T : 0, notnull = z.value_possible ? F : 0;
        unsigned v = isnull | notnull;
        return p->negate ? not3(v) : v;
    }
    case QV__P_CMP:
    case QV__P_IN: {
        const struct qv__xref *r = &b->refs[p->ref];
        zone_of(r, st ? &st[p->ref] : NULL, rows, &z);
        unsigned (*leaf)(const struct qv__xref *, const struct zone *, const struct qv__xplan *) =
            p->kind == QV__P_CMP ? prune_cmp : prune_in;
        if (!r->ftotal) return leaf(r, &z, p);
        /* The non-NaN values and NaN, separately: a range up to NaN's key
         * would take in every value above the max. */
        struct zone part[2];
        int np = ftotal_parts(&z, part);
        unsigned v = 0;
        for (int i = 0; i < np; i++) v |= leaf(r, &part[i], p);
        return with_nulls(&z, v);
    }
    case QV__P_STARTS:
        zone_of(&b->refs[p->ref], st ? &st[p->ref] : NULL, rows, &z);
        return prune_starts(&z, p);
    case QV__P_CMPCOL:
        zone_of(&b->refs[p->ref], st ? &st[p->ref] : NULL, rows, &z);
        zone_of(&b->refs[p->ref2], st ? &st[p->ref2] : NULL, rows, &z2);
        if (b->refs[p->ref].ftotal) {
            struct zone px[2], py[2];
            int nx = ftotal_parts(&z, px), ny = ftotal_parts(&z2, py);
            unsigned v = 0;
            for (int i = 0; i < nx; i++)
                for (int j = 0; j < ny; j++) v |= prune_cmpcol(&b->refs[p->ref], &px[i], &py[j], p->op);
            return v | ((z.null_possible || z2.null_possible) ? N : 0);
        }
        return prune_cmpcol(&b->refs[p->ref], &z, &z2, p->op);
    case QV__P_NOT: return not3(prune_node(b, p->kids[0], st, rows));
    case QV__P_AND:
    case QV__P_OR: {
        unsigned acc = prune_node(b, p->kids[0], st, rows);
        for (int32_t i = 1; i < p->n_kids; i++) {
            /* Only an operand that is surely FALSE (AND) or surely TRUE (OR)
             * decides the rest; anything else could still change. */
            if (acc == (p->kind == QV__P_AND ? F : T)) break;
            unsigned k = prune_node(b, p->kids[i], st, rows);
            acc = combine(acc, k, p->kind == QV__P_AND ? and1 : or1);
        }
        return acc;
    }
    default: return T | F | N;
    }
}

int qv_expr_prune(const struct qv_expr *e, const struct qv_zone_stats *per_ref, int64_t rows) {
    if (!e || !e->binding) return 1;
    if (rows == 0) return 0;
    return (prune_node(e->binding, e->binding->plan, per_ref, rows) & T) ? 1 : 0;
}

/* ---- From a reader's footer ---- */

static int64_t subtree_nodes(const struct qv_field *f) {
    int64_t n = 1;
    for (int64_t i = 0; i < f->n_children; i++) n += subtree_nodes(&f->children[i]);
    return n;
}

unsigned qv__prune_truth(const struct qv__xbinding *b, const struct qv__xplan *p,
                         const struct qv_zone_stats *per_ref, int64_t rows) {
    if (rows == 0) return 0;
    return prune_node(b, p, per_ref, rows);
}

int qv__prune_zone_stats(const struct qv__xbinding *b, const struct qv_reader *reader, int64_t rg,
                         struct qv_zone_stats *st, struct qv_error *err) {
    const struct qv_schema *schema = qv_reader_schema(reader);
    int rc = 0;
    int64_t rows = qv_reader_row_group_rows(reader, rg);
    for (int32_t i = 0; i < b->n_refs && !rc; i++) {
        const struct qv__xref *r = &b->refs[i];
        memset(&st[i], 0, sizeof st[i]);
        if (r->column >= schema->root.n_children) {
            rc = qv_error_set(err, EINVAL, "filter: column '%s' is not in the file's schema", r->name);
            break;
        }
        const struct qv_field *f = &schema->root.children[r->column];
        int32_t node = qv_reader_column_node(reader, r->column);
        int64_t nmin = 0, nsum = 0;
        for (int32_t level = 0;; level++) {
            struct qv_chunk_info ci;
            if ((rc = qv_reader_chunk_info(reader, rg, node, &ci, err))) break;
            if (ci.null_count > nmin) nmin = ci.null_count;
            nsum += ci.null_count;
            if (level == r->depth) {
                if (!qv_field_equal(f, r->field, QV_EQUAL_IGNORE_NAMES | QV_EQUAL_IGNORE_METADATA |
                                                       QV_EQUAL_IGNORE_NULLABILITY)) {
                    rc = qv_error_set(err, EINVAL,
                                      "filter: column '%s' has another type in the file", r->name);
                    break;
                }
                st[i].has_min_max = ci.has_min_max;
                st[i].min = ci.min;
                st[i].max = ci.max;
                st[i].min_len = ci.min_len;
                st[i].max_len = ci.max_len;
                st[i].min_truncated = ci.min_truncated;
                st[i].max_truncated = ci.max_truncated;
                st[i].has_nan_count = ci.has_nan_count;
                st[i].nan_count = ci.nan_count;
                /* The file's counts are exact, but a nested field's NaNs may
                 * sit under null structs, so only a column's count is exact
                 * with respect to the reference's nulls. */
                st[i].nan_count_exact = r->depth == 0;
                break;
            }
            int32_t k = r->path[level];
            if (f->type != QV_TYPE_STRUCT || k >= f->n_children) {
                rc = qv_error_set(err, EINVAL, "filter: field '%s' is not in the file's schema",
                                  r->name);
                break;
            }
            int32_t child = node + 1;
            for (int32_t j = 0; j < k; j++) child += (int32_t)subtree_nodes(&f->children[j]);
            node = child;
            f = &f->children[k];
        }
        st[i].has_null_count = 1;
        st[i].null_count_min = nmin;
        st[i].null_count_max = nsum < rows ? nsum : rows;
    }
    return rc;
}

int qv_expr_prune_row_group(const struct qv_expr *e, const struct qv_reader *reader, int64_t rg,
                            int *may_match, struct qv_reservation *scratch,
                            struct qv_error *err) {
    if (may_match) *may_match = 1;
    if (!e || !e->binding) return qv_error_set(err, EINVAL, "filter: pruning with an unbound filter");
    if (!reader || !may_match) return qv_error_set(err, EINVAL, "filter: no reader or output given");
    if (rg < 0 || rg >= qv_reader_num_row_groups(reader))
        return qv_error_set(err, EINVAL, "filter: row group %lld out of range", (long long)rg);
    const struct qv__xbinding *b = e->binding;
    struct qv_zone_stats local[32];
    struct qv_zone_stats *st = local;
    size_t bytes = 0;
    if (b->n_refs > 32) {
        if (!scratch)
            return qv_error_set(err, EINVAL, "filter: %d references need a scratch reservation",
                                (int)b->n_refs);
        bytes = (size_t)b->n_refs * sizeof *st;
        st = qv_alloc(scratch, bytes, err);
        if (!st) return ENOMEM;
    }
    int rc = qv__prune_zone_stats(b, reader, rg, st, err);
    if (!rc) *may_match = qv_expr_prune(e, st, qv_reader_row_group_rows(reader, rg));
    if (bytes) qv_free(scratch, st, bytes);
    return rc;
}
