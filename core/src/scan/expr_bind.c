/* Binding: resolves column paths against a schema, type-checks, and turns
 * every comparison with a literal into a comparison with a constant of the
 * column's own type (or into a constant truth value when no value of the
 * column can satisfy it). All coercion is exact: a literal is an exact
 * number, date or instant, and `col op literal` is rewritten into an
 * equivalent `col op' k` with k an integer inside the column's domain. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "scan/expr_internal.h"

/* ---- Binding memory ---- */

void *qv__xalloc(struct qv__xbinding *b, size_t size, struct qv_error *err) {
    size = (size + 15) & ~(size_t)15; /* 16: room for __int128 values */
    struct qv__xchunk *c = b->chunks;
    if (!c || c->size - c->used < size) {
        size_t hdr = (sizeof(struct qv__xchunk) + 15) & ~(size_t)15;
        size_t want = c ? c->size * 2 : 1024;
        if (want > 65536) want = 65536;
        if (want < hdr + size) want = hdr + size;
        struct qv__xchunk *nc = qv_alloc(b->r, want, err);
        if (!nc) return NULL;
        nc->next = c;
        nc->size = want;
        nc->used = hdr;
        b->chunks = c = nc;
    }
    void *p = (char *)c + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

void qv__binding_free(struct qv__xbinding *b) {
    if (!b) return;
    struct qv__xchunk *c = b->chunks;
    while (c) {
        struct qv__xchunk *nx = c->next;
        qv_free(b->r, c, c->size);
        c = nx;
    }
    qv_free(b->r, b, sizeof *b);
}

/* ---- Lookup tables ----
 * Binding must stay linear in the size of the tree however wide the schema
 * and however often a column is named (generated filters name one column
 * 100,000 times, or thousands of columns once each). So a column's text is
 * resolved once (memo by text), a resolved path finds its reference in a
 * hash (not a scan of the references), and wide structs are searched
 * through sorted name indexes instead of child by child. */

struct hslot {
    uint64_t h;
    const void *key; /* what the slot stands for (see each table) */
    int32_t v;       /* -1: empty */
};

struct htab {
    struct hslot *s;
    uint32_t cap, n; /* cap: a power of two, or 0 */
};

/* A struct's children sorted by name (exactly, and ignoring ASCII case),
 * ties by index, so duplicates sit together in index order. */
struct nent {
    const char *name;
    int32_t idx;
};
struct name_index {
    struct nent *exact, *folded; /* one block of 2 * n entries (binder's memory) */
    size_t n;
};

/* Structs with at least this many children are searched through an index. */
#define INDEX_MIN_CHILDREN 32

struct binder {
    struct qv__xbinding *b;
    struct qv_error *err;
    struct qv_reservation *r;
    struct htab texts;   /* key: a COLUMN node; v: its reference */
    struct htab paths;   /* key: NULL; v: a reference (compared by path) */
    struct htab structs; /* key: a STRUCT field; v: its entry in idx */
    struct name_index *idx;
    int32_t n_idx, cap_idx;
};

static void ht_free(struct binder *B, struct htab *t) {
    if (t->s) qv_free(B->r, t->s, (size_t)t->cap * sizeof *t->s);
    t->s = NULL;
    t->cap = t->n = 0;
}

typedef bool (*ht_eq)(const struct binder *B, const struct hslot *s, const void *probe);

static struct hslot *ht_find(const struct binder *B, const struct htab *t, uint64_t h,
                             ht_eq eq, const void *probe) {
    if (!t->cap) return NULL;
    for (uint32_t i = (uint32_t)h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        struct hslot *s = &t->s[i];
        if (s->v < 0) return NULL;
        if (s->h == h && eq(B, s, probe)) return s;
    }
}

/* Adds an entry known to be absent; grows at half load. */
static int ht_add(struct binder *B, struct htab *t, uint64_t h, const void *key, int32_t v) {
    if ((t->n + 1) * 2 > t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        if (cap > (1u << 30)) return qv_error_set(B->err, ENOMEM, "filter: too many columns");
        struct hslot *ns = qv_alloc(B->r, (size_t)cap * sizeof *ns, B->err);
        if (!ns) return ENOMEM;
        for (uint32_t i = 0; i < cap; i++) ns[i].v = -1;
        for (uint32_t i = 0; i < t->cap; i++) {
            if (t->s[i].v < 0) continue;
            uint32_t j = (uint32_t)t->s[i].h & (cap - 1);
            while (ns[j].v >= 0) j = (j + 1) & (cap - 1);
            ns[j] = t->s[i];
        }
        ht_free(B, t);
        t->s = ns;
        t->cap = cap;
    }
    uint32_t j = (uint32_t)h & (t->cap - 1);
    while (t->s[j].v >= 0) j = (j + 1) & (t->cap - 1);
    t->s[j] = (struct hslot){.h = h, .key = key, .v = v};
    t->n++;
    return 0;
}

static int cmp_exact(const void *a, const void *b) {
    const struct nent *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_folded(const void *a, const void *b) {
    const struct nent *x = a, *y = b;
    int c = strcasecmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static bool eq_struct(const struct binder *B, const struct hslot *s, const void *probe) {
    (void)B;
    return s->key == probe;
}

/* The name index of a wide struct, built on first use; NULL with the error
 * set when memory runs out. */
static const struct name_index *struct_index(struct binder *B, const struct qv_field *f) {
    uint64_t h = qv_hash64(&f, sizeof f, 0);
    struct hslot *s = ht_find(B, &B->structs, h, eq_struct, f);
    if (s) return &B->idx[s->v];
    /* Indexes live only while binding: they come from the reservation and
     * are freed by binder_free, not kept in the binding. */
    if (B->n_idx == B->cap_idx) {
        int32_t cap = B->cap_idx ? B->cap_idx * 2 : 4;
        struct name_index *ni = qv_realloc(B->r, B->idx, (size_t)B->cap_idx * sizeof *ni,
                                           (size_t)cap * sizeof *ni, B->err);
        if (!ni) return NULL;
        B->idx = ni;
        B->cap_idx = cap;
    }
    size_t n = (size_t)f->n_children;
    struct name_index *x = &B->idx[B->n_idx];
    x->exact = qv_alloc(B->r, 2 * n * sizeof *x->exact, B->err);
    if (!x->exact) return NULL;
    x->folded = x->exact + n;
    x->n = n;
    for (size_t i = 0; i < n; i++) {
        const char *name = f->children[i].name ? f->children[i].name : "";
        x->exact[i] = x->folded[i] = (struct nent){name, (int32_t)i};
    }
    qsort(x->exact, n, sizeof *x->exact, cmp_exact);
    qsort(x->folded, n, sizeof *x->folded, cmp_folded);
    B->n_idx++;
    if (ht_add(B, &B->structs, h, f, B->n_idx - 1)) return NULL;
    return &B->idx[B->n_idx - 1];
}

static void binder_free(struct binder *B) {
    ht_free(B, &B->texts);
    ht_free(B, &B->paths);
    ht_free(B, &B->structs);
    for (int32_t i = 0; i < B->n_idx; i++)
        qv_free(B->r, B->idx[i].exact, 2 * B->idx[i].n * sizeof *B->idx[i].exact);
    if (B->idx) qv_free(B->r, B->idx, (size_t)B->cap_idx * sizeof *B->idx);
}

/* The first two entries of a sorted index matching `name` (-1: none). */
static void index_matches(const struct nent *v, int64_t n, const char *name,
                          int (*cmp)(const char *, const char *), int64_t hits[2]) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + ((hi - lo) >> 1);
        if (cmp(v[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    hits[0] = hits[1] = -1;
    for (int k = 0; k < 2 && lo + k < n && cmp(v[lo + k].name, name) == 0; k++)
        hits[k] = v[lo + k].idx;
}

/* ---- Messages ---- */

static const char *pos_text(int32_t pos, char *buf, size_t cap) {
    if (pos > 0) snprintf(buf, cap, " at position %d", (int)pos);
    else buf[0] = 0;
    return buf;
}

static const char *type_text(const struct qv_field *f, char *buf, size_t cap) {
    qv_type_to_string(f, buf, cap);
    return buf;
}

static const char *lit_text(const struct qv__lit *lit, char *buf, size_t cap) {
    static const char *const kinds[] = {"NULL", "boolean", "number", "number", "string",
                                        "DATE",  "TIMESTAMP"};
    char tmp[72];
    struct qv__sbuf sb = {.buf = tmp, .cap = sizeof tmp};
    tmp[0] = 0;
    qv__lit_print(&sb, lit);
    snprintf(buf, cap, "%s literal %s%s", kinds[lit->kind], tmp, sb.len >= sizeof tmp ? "..." : "");
    return buf;
}

/* ---- References ---- */

/* The name rule's lookup (qv_field_find_child, arrow.h) through a sorted
 * index for wide structs, with exactly its answers: an exact match wins; an
 * unquoted name without one may match one field ignoring case; several
 * matches are ambiguous (-2). -3 when building an index ran out of memory
 * (error set). */
static int64_t find_child(void *ctx, const struct qv_field *f, const char *name, bool quoted,
                          int64_t hits[2], bool *folded) {
    struct binder *B = ctx;
    if (f->n_children < INDEX_MIN_CHILDREN) return qv_field_find_child(f, name, quoted, hits, folded);
    *folded = false;
    const struct name_index *x = struct_index(B, f);
    if (!x) return -3;
    index_matches(x->exact, f->n_children, name, strcmp, hits);
    if (hits[0] < 0 && !quoted) {
        index_matches(x->folded, f->n_children, name, strcasecmp, hits);
        *folded = true;
    }
    if (hits[0] >= 0 && hits[1] < 0) return hits[0];
    return hits[0] >= 0 ? -2 : -1;
}

static qv__xi128 pow10q(int k) {
    qv__xi128 v = 1;
    while (k-- > 0) v *= 10;
    return v;
}

static void classify(struct qv__xref *ref) {
    const struct qv_field *f = ref->field;
    ref->mode = QV__LM_NUM;
    ref->scale = 0;
    switch (f->type) {
    case QV_TYPE_BOOL:
        ref->vt = QV__VT_BOOL;
        ref->mode = QV__LM_BOOL;
        ref->dmin = 0;
        ref->dmax = 1;
        return;
    case QV_TYPE_INT8: ref->vt = QV__VT_I8; ref->dmin = INT8_MIN; ref->dmax = INT8_MAX; return;
    case QV_TYPE_INT16: ref->vt = QV__VT_I16; ref->dmin = INT16_MIN; ref->dmax = INT16_MAX; return;
    case QV_TYPE_INT32: ref->vt = QV__VT_I32; ref->dmin = INT32_MIN; ref->dmax = INT32_MAX; return;
    case QV_TYPE_INT64: ref->vt = QV__VT_I64; ref->dmin = INT64_MIN; ref->dmax = INT64_MAX; return;
    case QV_TYPE_UINT8: ref->vt = QV__VT_U8; ref->dmin = 0; ref->dmax = UINT8_MAX; return;
    case QV_TYPE_UINT16: ref->vt = QV__VT_U16; ref->dmin = 0; ref->dmax = UINT16_MAX; return;
    case QV_TYPE_UINT32: ref->vt = QV__VT_U32; ref->dmin = 0; ref->dmax = UINT32_MAX; return;
    case QV_TYPE_UINT64: ref->vt = QV__VT_U64; ref->dmin = 0; ref->dmax = UINT64_MAX; return;
    case QV_TYPE_DECIMAL128: {
        int p = f->precision < 1 ? 1 : f->precision > 38 ? 38 : f->precision;
        ref->vt = p <= 18 ? QV__VT_D64 : QV__VT_D128;
        ref->scale = f->scale;
        ref->dmax = pow10q(p) - 1;
        ref->dmin = -ref->dmax;
        return;
    }
    case QV_TYPE_DATE32:
        ref->vt = QV__VT_I32;
        ref->mode = QV__LM_TIME;
        ref->ns_per_unit = (qv__xi128)86400 * 1000000000;
        ref->dmin = INT32_MIN;
        ref->dmax = INT32_MAX;
        return;
    case QV_TYPE_TIMESTAMP: {
        static const int64_t ns_per[] = {1000000000, 1000000, 1000, 1};
        ref->vt = QV__VT_I64;
        ref->mode = QV__LM_TIME;
        ref->ns_per_unit = ns_per[(unsigned)f->unit <= QV_TIME_NS ? f->unit : QV_TIME_NS];
        ref->dmin = INT64_MIN;
        ref->dmax = INT64_MAX;
        return;
    }
    case QV_TYPE_FLOAT16: ref->vt = QV__VT_F16; ref->mode = QV__LM_FLOAT; return;
    case QV_TYPE_FLOAT32: ref->vt = QV__VT_F32; ref->mode = QV__LM_FLOAT; return;
    case QV_TYPE_FLOAT64: ref->vt = QV__VT_F64; ref->mode = QV__LM_FLOAT; return;
    case QV_TYPE_UTF8: case QV_TYPE_BINARY: ref->vt = QV__VT_BIN32; ref->mode = QV__LM_BYTES; return;
    case QV_TYPE_LARGE_UTF8: case QV_TYPE_LARGE_BINARY:
        ref->vt = QV__VT_BIN64;
        ref->mode = QV__LM_BYTES;
        return;
    case QV_TYPE_FIXED_BINARY: ref->vt = QV__VT_FIXBIN; ref->mode = QV__LM_BYTES; return;
    case QV_TYPE_NULL: ref->vt = QV__VT_NULL; ref->mode = QV__LM_NONE; return;
    default: ref->vt = QV__VT_OTHER; ref->mode = QV__LM_NONE; return;
    }
}

static uint64_t text_hash(const struct qv_expr *col) {
    uint64_t h = (uint64_t)col->n_names;
    for (int32_t i = 0; i < col->n_names; i++)
        h = qv_hash64(col->names[i], strlen(col->names[i]), h * 2 + col->quoted[i]);
    return h;
}

static bool eq_text(const struct binder *B, const struct hslot *s, const void *probe) {
    (void)B;
    const struct qv_expr *a = s->key, *b = probe;
    if (a->n_names != b->n_names) return false;
    for (int32_t i = 0; i < a->n_names; i++)
        if (a->quoted[i] != b->quoted[i] || strcmp(a->names[i], b->names[i]) != 0) return false;
    return true;
}

/* A resolved path, as the probe of the paths table. */
struct path_key {
    int32_t column, depth;
    const int32_t *path;
};

static uint64_t path_hash(const struct path_key *k) {
    uint64_t h = qv_hash64(&k->column, sizeof k->column, (uint64_t)k->depth);
    return k->depth ? qv_hash64(k->path, (size_t)k->depth * sizeof *k->path, h) : h;
}

static bool eq_path(const struct binder *B, const struct hslot *s, const void *probe) {
    const struct path_key *k = probe;
    const struct qv__xref *r = &B->b->refs[s->v];
    return r->column == k->column && r->depth == k->depth &&
           (k->depth == 0 || memcmp(r->path, k->path, (size_t)k->depth * sizeof *k->path) == 0);
}

/* Resolves a column node to a reference index (shared by equal paths). */
static int resolve(struct binder *B, const struct qv_expr *col, int32_t *out) {
    uint64_t th = text_hash(col);
    const struct hslot *memo = ht_find(B, &B->texts, th, eq_text, col);
    if (memo) {
        *out = memo->v;
        return 0;
    }
    struct qv__xbinding *b = B->b;
    char pb[32];
    /* The one name rule (arrow.h), struct steps only: a predicate compares
     * scalars, which lists and maps are not. */
    struct qv_field_ref ref;
    struct qv_field_lookup lk = {find_child, B};
    const struct qv_field *fields[QV_FIELD_PATH_MAX + 1];
    struct qv_error e;
    qv_error_clear(&e);
    int rc = col->n_names > QV_FIELD_PATH_MAX + 1
                 ? qv_error_set(&e, EINVAL, "column path of %d names is deeper than any schema",
                                (int)col->n_names)
                 : qv_field_resolve_names(&b->schema->root, (const char *const *)col->names,
                                          col->quoted, col->n_names, QV_PATH_STRUCTS_ONLY, &lk,
                                          &ref, &e);
    if (rc == ENOMEM && !e.message[0]) return B->err && B->err->code ? B->err->code : ENOMEM;
    if (rc) {
        /* A filter naming what is not there is a bad argument (EINVAL), as
         * it always was; projection by name reports ENOENT. */
        return qv_error_set(B->err, rc == ENOMEM ? ENOMEM : EINVAL, "filter: %s%s", e.message,
                            pos_text(col->pos, pb, sizeof pb));
    }
    int32_t column = ref.column;
    const int32_t *path = ref.path;
    const struct qv_field *f = &b->schema->root.children[column];
    fields[0] = f;
    for (int32_t i = 0; i < ref.depth; i++) fields[i + 1] = f = &f->children[path[i]];
    int32_t depth = ref.depth;
    struct path_key key = {column, depth, path};
    uint64_t ph = path_hash(&key);
    const struct hslot *same = ht_find(B, &B->paths, ph, eq_path, &key);
    if (same) {
        *out = same->v;
        return ht_add(B, &B->texts, th, col, same->v);
    }
    if (b->n_refs == b->cap_refs) {
        int32_t cap = b->cap_refs ? b->cap_refs * 2 : 8;
        struct qv__xref *nr = qv__xalloc(b, (size_t)cap * sizeof *nr, B->err);
        if (!nr) return ENOMEM;
        if (b->n_refs) memcpy(nr, b->refs, (size_t)b->n_refs * sizeof *nr);
        b->refs = nr;
        b->cap_refs = cap;
    }
    struct qv__xref *r = &b->refs[b->n_refs];
    memset(r, 0, sizeof *r);
    r->column = column;
    r->depth = depth;
    r->path = qv__xalloc(b, (size_t)(depth ? depth : 1) * sizeof *path, B->err);
    r->fields = qv__xalloc(b, (size_t)(depth + 1) * sizeof *fields, B->err);
    size_t nlen = 0;
    for (int32_t i = 0; i <= depth; i++) nlen += strlen(fields[i]->name) + 1;
    r->name = qv__xalloc(b, nlen, B->err);
    if (!r->path || !r->fields || !r->name) return ENOMEM;
    if (depth) memcpy(r->path, path, (size_t)depth * sizeof *path);
    memcpy(r->fields, fields, (size_t)(depth + 1) * sizeof *fields);
    char *p = r->name;
    for (int32_t i = 0; i <= depth; i++) {
        size_t l = strlen(fields[i]->name);
        memcpy(p, fields[i]->name, l);
        p += l;
        *p++ = i < depth ? '.' : 0;
    }
    r->field = fields[depth];
    classify(r);
    r->ftotal = r->mode == QV__LM_FLOAT && b->nan_order == QV_NAN_LARGEST;
    int32_t id = b->n_refs++;
    *out = id;
    rc = ht_add(B, &B->paths, ph, NULL, id);
    return rc ? rc : ht_add(B, &B->texts, th, col, id);
}

/* ---- Plan nodes ---- */

static struct qv__xplan *pnode(struct binder *B, int kind) {
    struct qv__xplan *p = qv__xalloc(B->b, sizeof *p, B->err);
    if (p) {
        p->kind = kind;
        p->ref = p->ref2 = -1;
    }
    return p;
}

static struct qv__xplan *pconst(struct binder *B, unsigned truth) {
    struct qv__xplan *p = pnode(B, QV__P_CONST);
    if (p) p->truth = truth;
    return p;
}

static struct qv__xplan *pnnconst(struct binder *B, int32_t ref, unsigned truth) {
    struct qv__xplan *p = pnode(B, QV__P_NNCONST);
    if (p) {
        p->ref = ref;
        p->truth = truth;
    }
    return p;
}

static struct qv__xplan *pjoin(struct binder *B, int kind, struct qv__xplan *a,
                               struct qv__xplan *c) {
    if (!a || !c) return NULL;
    struct qv__xplan *p = pnode(B, kind);
    struct qv__xplan **k = p ? qv__xalloc(B->b, 2 * sizeof *k, B->err) : NULL;
    if (!k) return NULL;
    k[0] = a;
    k[1] = c;
    p->kids = k;
    p->n_kids = 2;
    return p;
}

static struct qv__xplan *pnot(struct binder *B, struct qv__xplan *a) {
    if (!a) return NULL;
    struct qv__xplan *p = pnode(B, QV__P_NOT);
    struct qv__xplan **k = p ? qv__xalloc(B->b, sizeof *k, B->err) : NULL;
    if (!k) return NULL;
    k[0] = a;
    p->kids = k;
    p->n_kids = 1;
    return p;
}

static bool cmp_i(qv__xi128 a, int op, qv__xi128 b) {
    switch (op) {
    case QV_CMP_EQ: return a == b;
    case QV_CMP_NE: return a != b;
    case QV_CMP_LT: return a < b;
    case QV_CMP_LE: return a <= b;
    case QV_CMP_GT: return a > b;
    default: return a >= b;
    }
}

/* `ref op L` for an int-like reference, where L is a literal whose floor
 * (in the column's units) is `fl`, exact when L is an integer there. */
static struct qv__xplan *int_cmp(struct binder *B, int32_t ref, int op, qv__xi128 fl, bool exact) {
    const struct qv__xref *r = &B->b->refs[ref];
    qv__xi128 k = fl;
    /* Rewrite against the integer k: x < L is x <= floor(L) when L is not
     * an integer; x >= L is x > floor(L) then. */
    switch (op) {
    case QV_CMP_EQ:
        if (!exact || k < r->dmin || k > r->dmax) return pnnconst(B, ref, QV__TV_F);
        break;
    case QV_CMP_NE:
        if (!exact || k < r->dmin || k > r->dmax) return pnnconst(B, ref, QV__TV_T);
        break;
    case QV_CMP_LT:
        if (!exact) op = QV_CMP_LE;
        break;
    case QV_CMP_GE:
        if (!exact) op = QV_CMP_GT;
        break;
    default: break;
    }
    /* Constants outside the domain decide the comparison for every value. */
    switch (op) {
    case QV_CMP_LT:
        if (k <= r->dmin) return pnnconst(B, ref, QV__TV_F);
        if (k > r->dmax) return pnnconst(B, ref, QV__TV_T);
        break;
    case QV_CMP_LE:
        if (k < r->dmin) return pnnconst(B, ref, QV__TV_F);
        if (k >= r->dmax) return pnnconst(B, ref, QV__TV_T);
        break;
    case QV_CMP_GT:
        if (k >= r->dmax) return pnnconst(B, ref, QV__TV_F);
        if (k < r->dmin) return pnnconst(B, ref, QV__TV_T);
        break;
    case QV_CMP_GE:
        if (k > r->dmax) return pnnconst(B, ref, QV__TV_F);
        if (k <= r->dmin) return pnnconst(B, ref, QV__TV_T);
        break;
    default: break;
    }
    struct qv__xplan *p = pnode(B, QV__P_CMP);
    if (!p) return NULL;
    p->ref = ref;
    p->op = op;
    p->kq = k;
    p->ki = (int64_t)k;
    p->ku = (uint64_t)k;
    p->t0 = cmp_i(0, op, k);
    p->t1 = cmp_i(1, op, k);
    p->fn = qv__kernel_cmp(r->vt, op);
    return p;
}

/* Floor of a finite double at `scale`, through the shortest decimal that
 * reads back as the same double. */
static void dbl_floor(double d, int32_t scale, qv__xi128 *fl, bool *exact) {
    char digits[24];
    struct qv__lit lit;
    qv__dbl_shortest(d, digits, &lit);
    qv__lit_num_floor(&lit, scale, fl, exact);
}

static qv__xi128 floor_div(qv__xi128 a, qv__xi128 b, bool *exact) {
    qv__xi128 q = a / b, rem = a % b;
    *exact = rem == 0;
    if (rem != 0 && (rem < 0) != (b < 0)) q -= 1;
    return q;
}

static int flip(int op) {
    switch (op) {
    case QV_CMP_LT: return QV_CMP_GT;
    case QV_CMP_LE: return QV_CMP_GE;
    case QV_CMP_GT: return QV_CMP_LT;
    case QV_CMP_GE: return QV_CMP_LE;
    default: return op;
    }
}

static const char *const op_names[] = {"=", "!=", "<", "<=", ">", ">="};


static struct qv__xplan *mismatch(struct binder *B, const struct qv__xref *r, const struct qv__lit *lit,
                                  int32_t pos, const char *what) {
    char tb[96], lb[160], pb[32];
    qv_error_set(B->err, EINVAL, "filter: column '%s' (%s) cannot %s %s%s", r->name,
                 type_text(r->field, tb, sizeof tb), what, lit_text(lit, lb, sizeof lb),
                 pos_text(pos, pb, sizeof pb));
    return NULL;
}

/* An int-like literal in the column's units: its floor and whether it is
 * an integer there; *nan for a NaN double (which equals nothing). Returns 0,
 * or EINVAL with a message when the literal does not fit the column. */
static int lit_to_int(struct binder *B, const struct qv__xref *r, const struct qv__lit *lit,
                      int32_t pos, qv__xi128 *fl, bool *exact, bool *nan) {
    *nan = false;
    switch (r->mode) {
    case QV__LM_NUM:
        if (lit->kind == QV__LIT_NUM) {
            qv__lit_num_floor(lit, r->scale, fl, exact);
        } else if (lit->kind == QV__LIT_DBL) {
            if (isnan(lit->d)) {
                *nan = true;
            } else if (isinf(lit->d)) {
                *fl = lit->d > 0 ? QV__X_I128_MAX : QV__X_I128_MIN;
                *exact = false;
            } else {
                dbl_floor(lit->d, r->scale, fl, exact);
            }
        } else {
            mismatch(B, r, lit, pos, "be compared with");
            return EINVAL;
        }
        return 0;
    case QV__LM_TIME: {
        qv__xi128 ns;
        if (lit->kind == QV__LIT_DATE) {
            ns = (qv__xi128)lit->days * 86400 * 1000000000;
        } else if (lit->kind == QV__LIT_TS) {
            ns = lit->ns;
        } else if (lit->kind == QV__LIT_STR) {
            if (memchr(lit->bytes, 0, lit->len) ||
                qv__lit_parse_timestamp((const char *)lit->bytes, lit->len, &ns, NULL)) {
                mismatch(B, r, lit, pos,
                         "be compared with (not a date 'YYYY-MM-DD' or timestamp "
                         "'YYYY-MM-DD HH:MM:SS')");
                return EINVAL;
            }
        } else {
            mismatch(B, r, lit, pos, "be compared with");
            return EINVAL;
        }
        *fl = floor_div(ns, r->ns_per_unit, exact);
        return 0;
    }
    case QV__LM_BOOL:
        if (lit->kind != QV__LIT_BOOL) {
            mismatch(B, r, lit, pos, "be compared with");
            return EINVAL;
        }
        *fl = lit->b ? 1 : 0;
        *exact = true;
        return 0;
    default: return EINVAL;
    }
}

static bool int_like(const struct qv__xref *r) {
    return r->mode == QV__LM_NUM || r->mode == QV__LM_TIME || r->mode == QV__LM_BOOL;
}

/* `ref op lit`; pos locates the literal for messages. */
static struct qv__xplan *cmp_lit(struct binder *B, int32_t ref, int op, const struct qv__lit *lit,
                                 int32_t pos) {
    const struct qv__xref *r = &B->b->refs[ref];
    char tb[96], pb[32];
    if (lit->kind == QV__LIT_NULL) return pconst(B, QV__TV_N);
    if (int_like(r)) {
        qv__xi128 fl = 0;
        bool exact = false, nan;
        if (lit_to_int(B, r, lit, pos, &fl, &exact, &nan)) return NULL;
        /* IEEE: NaN is unequal to everything and unordered. In the total
         * order it is above every number. */
        if (nan && B->b->nan_order == QV_NAN_LARGEST)
            return pnnconst(B, ref, (op == QV_CMP_NE || op == QV_CMP_LT || op == QV_CMP_LE)
                                        ? QV__TV_T : QV__TV_F);
        if (nan) return pnnconst(B, ref, op == QV_CMP_NE ? QV__TV_T : QV__TV_F);
        return int_cmp(B, ref, op, fl, exact);
    }
    switch (r->mode) {
    case QV__LM_NONE:
        if (r->vt == QV__VT_NULL) return pconst(B, QV__TV_N);
        qv_error_set(B->err, EINVAL,
                     "filter: column '%s' (%s) cannot be compared (only IS [NOT] NULL applies "
                     "to it)%s",
                     r->name, type_text(r->field, tb, sizeof tb), pos_text(pos, pb, sizeof pb));
        return NULL;
    case QV__LM_FLOAT: {
        if (lit->kind != QV__LIT_NUM && lit->kind != QV__LIT_DBL)
            return mismatch(B, r, lit, pos, "be compared with");
        struct qv__xplan *p = pnode(B, QV__P_CMP);
        if (!p) return NULL;
        p->ref = ref;
        p->op = op;
        p->kf = qv__lit_num_double(lit);
        if (r->ftotal) {
            p->ki = qv__fkey(p->kf);
            p->kq = p->ki; /* the pruner's bound in key space */
            p->fn = qv__kernel_cmp_total(r->vt, op);
        } else {
            p->fn = qv__kernel_cmp(r->vt, op);
        }
        return p;
    }
    case QV__LM_BYTES: {
        if (lit->kind != QV__LIT_STR) return mismatch(B, r, lit, pos, "be compared with");
        struct qv__xplan *p = pnode(B, QV__P_CMP);
        uint8_t *copy = p ? qv__xalloc(B->b, lit->len + 1, B->err) : NULL;
        if (!copy) return NULL;
        if (lit->len) memcpy(copy, lit->bytes, lit->len);
        p->ref = ref;
        p->op = op;
        p->kb.p = copy;
        p->kb.n = lit->len;
        p->fn = qv__kernel_cmp(r->vt, op);
        return p;
    }
    default: return NULL;
    }
}

static int32_t pos_of(const struct qv_expr *e, int32_t fallback) { return e->pos ? e->pos : fallback; }

static struct qv__xplan *bind_cmp(struct binder *B, int op, const struct qv_expr *a,
                                  const struct qv_expr *c, int32_t pos) {
    char pb[32], tb[96], tb2[96];
    int32_t ra, rc;
    if (a->kind == QV__E_LITERAL && c->kind == QV__E_LITERAL) {
        if (a->lit.kind == QV__LIT_NULL || c->lit.kind == QV__LIT_NULL) return pconst(B, QV__TV_N);
        qv_error_set(B->err, EINVAL,
                     "filter: comparison %s needs a column on at least one side%s", op_names[op],
                     pos_text(pos, pb, sizeof pb));
        return NULL;
    }
    if (a->kind == QV__E_LITERAL) return bind_cmp(B, flip(op), c, a, pos);
    if (resolve(B, a, &ra)) return NULL;
    if (c->kind == QV__E_LITERAL) return cmp_lit(B, ra, op, &c->lit, pos_of(c, pos));
    if (resolve(B, c, &rc)) return NULL;
    const struct qv__xref *x = &B->b->refs[ra], *y = &B->b->refs[rc];
    if (x->vt == QV__VT_NULL || y->vt == QV__VT_NULL) {
        if (x->vt != QV__VT_OTHER && y->vt != QV__VT_OTHER) return pconst(B, QV__TV_N);
    }
    if (!qv__cmpcol_supported(x, y)) {
        qv_error_set(B->err, EINVAL, "filter: cannot compare column '%s' (%s) with column '%s' (%s)%s",
                     x->name, type_text(x->field, tb, sizeof tb), y->name,
                     type_text(y->field, tb2, sizeof tb2), pos_text(pos, pb, sizeof pb));
        return NULL;
    }
    struct qv__xplan *p = pnode(B, QV__P_CMPCOL);
    if (!p) return NULL;
    p->ref = ra;
    p->ref2 = rc;
    p->op = op;
    return p;
}

/* Appends v (of the set's element type) to a growable set. */
static int set_push(struct binder *B, struct qv__xplan *p, size_t elem, int64_t *cap,
                    const void *v) {
    if (p->n_set == *cap) {
        int64_t nc = *cap ? *cap * 2 : 8;
        void *ns = qv__xalloc(B->b, (size_t)nc * elem, B->err);
        if (!ns) return ENOMEM;
        if (p->n_set) memcpy(ns, p->set, (size_t)p->n_set * elem);
        p->set = ns;
        *cap = nc;
    }
    memcpy((char *)p->set + (size_t)p->n_set * elem, v, elem);
    p->n_set++;
    return 0;
}

static size_t set_elem_size(int vt) {
    switch (vt) {
    case QV__VT_U8: case QV__VT_U16: case QV__VT_U32: case QV__VT_U64: return sizeof(uint64_t);
    case QV__VT_D128: return sizeof(qv__xi128);
    case QV__VT_F16: case QV__VT_F32: case QV__VT_F64: return sizeof(double);
    case QV__VT_BIN32: case QV__VT_BIN64: case QV__VT_FIXBIN: return sizeof(struct qv__bytes);
    default: return sizeof(int64_t);
    }
}

/* The element type an IN set of reference r is sorted as: keys (int64) for
 * a float in the total order. */
static int set_vt(const struct qv__xref *r) { return r->ftotal ? QV__VT_I64 : r->vt; }

static struct qv__xplan *bind_in(struct binder *B, const struct qv_expr *e) {
    char pb[32], tb[96];
    const struct qv_expr *x = e->kids[0];
    int32_t ref;
    if (x->kind != QV__E_COLUMN) {
        qv_error_set(B->err, EINVAL, "filter: the subject of IN must be a column%s",
                     pos_text(pos_of(x, e->pos), pb, sizeof pb));
        return NULL;
    }
    if (resolve(B, x, &ref)) return NULL;
    const struct qv__xref *r = &B->b->refs[ref];
    if (r->vt == QV__VT_OTHER) {
        qv_error_set(B->err, EINVAL,
                     "filter: column '%s' (%s) cannot be used with IN (only IS [NOT] NULL "
                     "applies to it)%s",
                     r->name, type_text(r->field, tb, sizeof tb), pos_text(pos_of(x, e->pos), pb, sizeof pb));
        return NULL;
    }
    struct qv__xplan *p = pnode(B, QV__P_IN);
    if (!p) return NULL;
    p->ref = ref;
    size_t elem = set_elem_size(r->vt);
    int64_t cap = 0;
    for (int32_t i = 1; i < e->n_kids; i++) {
        const struct qv__lit *lit = &e->kids[i]->lit;
        if (lit->kind == QV__LIT_NULL) {
            p->set_null = true;
            continue;
        }
        /* Each value is coerced as `x = value` would be; values no x can
         * equal drop out. */
        int32_t vpos = pos_of(e->kids[i], e->pos);
        int rc = 0;
        if (r->vt == QV__VT_NULL) continue;
        if (int_like(r)) {
            qv__xi128 fl = 0;
            bool exact = false, nan;
            if (lit_to_int(B, r, lit, vpos, &fl, &exact, &nan)) return NULL;
            if (nan || !exact || fl < r->dmin || fl > r->dmax) continue;
            if (r->vt == QV__VT_BOOL) {
                if (fl) p->t1 = true;
                else p->t0 = true;
            } else if (r->vt == QV__VT_D128) {
                rc = set_push(B, p, elem, &cap, &fl);
            } else if (r->vt >= QV__VT_U8 && r->vt <= QV__VT_U64) {
                uint64_t u = (uint64_t)fl;
                rc = set_push(B, p, elem, &cap, &u);
            } else {
                int64_t v = (int64_t)fl;
                rc = set_push(B, p, elem, &cap, &v);
            }
        } else if (r->mode == QV__LM_FLOAT) {
            if (lit->kind != QV__LIT_NUM && lit->kind != QV__LIT_DBL) {
                mismatch(B, r, lit, vpos, "be compared with");
                return NULL;
            }
            double d = qv__lit_num_double(lit);
            if (r->ftotal) {
                int64_t key = qv__fkey(d); /* NaN is a value like any other */
                rc = set_push(B, p, elem, &cap, &key);
            } else if (!isnan(d)) {
                rc = set_push(B, p, elem, &cap, &d);
            }
        } else {
            if (lit->kind != QV__LIT_STR) {
                mismatch(B, r, lit, vpos, "be compared with");
                return NULL;
            }
            struct qv__bytes kb = {.p = NULL, .n = lit->len};
            uint8_t *copy = qv__xalloc(B->b, lit->len + 1, B->err);
            if (!copy) return NULL;
            if (lit->len) memcpy(copy, lit->bytes, lit->len);
            kb.p = copy;
            rc = set_push(B, p, elem, &cap, &kb);
        }
        if (rc) return NULL;
    }
    if (r->vt == QV__VT_NULL) return pconst(B, QV__TV_N);
    bool empty = r->vt == QV__VT_BOOL ? !(p->t0 || p->t1) : p->n_set == 0;
    if (empty) return p->set_null ? pconst(B, QV__TV_N) : pnnconst(B, ref, QV__TV_F);
    if (r->vt != QV__VT_BOOL) p->n_set = qv__set_sort(set_vt(r), p->set, p->n_set);
    p->fn = r->ftotal ? qv__kernel_in_total(r->vt) : qv__kernel_in(r->vt);
    return p;
}

/* Whether plan node k is `ref op constant` that a set can stand for:
 * equalities under OR, inequalities under AND. */
static bool set_candidate(const struct binder *B, const struct qv__xplan *k, int op) {
    if (k->kind != QV__P_CMP || k->op != op || k->ref < 0) return false;
    int vt = B->b->refs[k->ref].vt;
    return vt != QV__VT_OTHER && vt != QV__VT_NULL && qv__kernel_in(vt) != NULL;
}

/* Adds the constant of comparison k to the IN node `in` (whose set has room),
 * stored as bind_in stores a listed value. */
static void set_add(const struct binder *B, struct qv__xplan *in, const struct qv__xplan *k) {
    int vt = B->b->refs[k->ref].vt;
    size_t elem = set_elem_size(vt);
    char *slot = (char *)in->set + (size_t)in->n_set * elem;
    if (vt == QV__VT_BOOL) {
        if (k->kq) in->t1 = true;
        else in->t0 = true;
        return;
    }
    switch (B->b->refs[k->ref].mode) {
    case QV__LM_FLOAT:
        if (B->b->refs[k->ref].ftotal) {
            memcpy(slot, &k->ki, elem); /* a key, NaN included */
            break;
        }
        if (isnan(k->kf)) return; /* equals nothing, as in bind_in */
        memcpy(slot, &k->kf, elem);
        break;
    case QV__LM_BYTES: memcpy(slot, &k->kb, elem); break;
    default:
        if (vt == QV__VT_D128) memcpy(slot, &k->kq, elem);
        else if (vt >= QV__VT_U8 && vt <= QV__VT_U64) {
            uint64_t u = k->ku;
            memcpy(slot, &u, elem);
        } else {
            int64_t v = k->ki;
            memcpy(slot, &v, elem);
        }
        break;
    }
    in->n_set++;
}

/* Rewrites an AND / OR whose operands repeat one column: `x = 1 OR x = 2
 * OR ...` becomes `x IN (1, 2, ...)` and `x != 1 AND x != 2 AND ...`
 * becomes `NOT x IN (1, 2, ...)` (the same truth values in three-valued
 * logic), so generated filters with 100,000 such operands evaluate with one
 * binary search per row instead of 100,000 passes over the batch. Repeated
 * constant operands (NULL-where-null constants of one reference, constant
 * truth values) are kept once. The result may be a single operand. */
/* Per reference state of merge_junction, in a hash sized by what the node
 * can reference (a tree of many small ANDs stays linear). */
struct rslot {
    int32_t ref1; /* reference + 1; 0 = empty */
    int32_t count;
    struct qv__xplan *in;
    unsigned seen; /* NNCONST truths kept */
};

static struct rslot *rslot_of(struct rslot *t, uint32_t cap, int32_t ref) {
    for (uint32_t i = ((uint32_t)ref * 2654435761u) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (t[i].ref1 == 0 || t[i].ref1 == ref + 1) {
            t[i].ref1 = ref + 1;
            return &t[i];
        }
}

static struct qv__xplan *merge_junction(struct binder *B, struct qv__xplan *p) {
    bool is_and = p->kind == QV__P_AND;
    int op = is_and ? QV_CMP_NE : QV_CMP_EQ;
    /* Room for every reference the operands can name: no more than there
     * are operands, nor than the binding has references. */
    int64_t distinct = p->n_kids < B->b->n_refs ? p->n_kids : B->b->n_refs;
    uint32_t cap = 8;
    while (cap < (uint64_t)distinct * 2) cap *= 2;
    struct rslot *t = qv_calloc(B->r, cap * sizeof *t, B->err);
    if (!t) return NULL;
    for (int32_t i = 0; i < p->n_kids; i++)
        if (set_candidate(B, p->kids[i], op)) rslot_of(t, cap, p->kids[i]->ref)->count++;
    unsigned consts = 0; /* CONST truths kept */
    int32_t out = 0;
    struct qv__xplan *res = p;
    for (int32_t i = 0; i < p->n_kids; i++) {
        struct qv__xplan *k = p->kids[i];
        if (k->kind == QV__P_CONST) {
            if (consts & k->truth) continue;
            consts |= k->truth;
        } else if (k->kind == QV__P_NNCONST) {
            struct rslot *rs = rslot_of(t, cap, k->ref);
            if (rs->seen & k->truth) continue;
            rs->seen |= k->truth;
        } else if (set_candidate(B, k, op) && rslot_of(t, cap, k->ref)->count > 1) {
            struct rslot *rs = rslot_of(t, cap, k->ref);
            if (rs->in) {
                set_add(B, rs->in, k);
                continue;
            }
            const struct qv__xref *r = &B->b->refs[k->ref];
            struct qv__xplan *in = pnode(B, QV__P_IN);
            if (in && r->vt != QV__VT_BOOL)
                in->set = qv__xalloc(B->b, (size_t)rs->count * set_elem_size(r->vt), B->err);
            if (!in || (r->vt != QV__VT_BOOL && !in->set)) {
                res = NULL;
                break;
            }
            in->ref = k->ref;
            in->fn = r->ftotal ? qv__kernel_in_total(r->vt) : qv__kernel_in(r->vt);
            rs->in = in;
            set_add(B, in, k);
            k = is_and ? pnot(B, in) : in;
            if (!k) {
                res = NULL;
                break;
            }
        }
        p->kids[out++] = k;
    }
    /* Sets are sorted once complete (NaN-only lists leave an empty set,
     * which the kernels and the pruner accept). */
    for (uint32_t i = 0; res && i < cap; i++) {
        struct qv__xplan *in = t[i].in;
        if (in && B->b->refs[in->ref].vt != QV__VT_BOOL)
            in->n_set = qv__set_sort(set_vt(&B->b->refs[in->ref]), in->set, in->n_set);
    }
    qv_free(B->r, t, cap * sizeof *t);
    if (!res) return NULL;
    p->n_kids = out;
    return out == 1 ? p->kids[0] : p;
}

static struct qv__xplan *bind_node(struct binder *B, const struct qv_expr *e) {
    char pb[32], tb[96], lb[160];
    switch (e->kind) {
    case QV__E_COLUMN: {
        int32_t ref;
        if (resolve(B, e, &ref)) return NULL;
        const struct qv__xref *r = &B->b->refs[ref];
        if (r->vt == QV__VT_NULL) return pconst(B, QV__TV_N);
        if (r->vt != QV__VT_BOOL) {
            qv_error_set(B->err, EINVAL,
                         "filter: column '%s' (%s) is not a boolean; compare it with something%s",
                         r->name, type_text(r->field, tb, sizeof tb), pos_text(e->pos, pb, sizeof pb));
            return NULL;
        }
        return int_cmp(B, ref, QV_CMP_EQ, 1, true);
    }
    case QV__E_LITERAL:
        if (e->lit.kind == QV__LIT_NULL) return pconst(B, QV__TV_N);
        if (e->lit.kind == QV__LIT_BOOL) return pconst(B, e->lit.b ? QV__TV_T : QV__TV_F);
        qv_error_set(B->err, EINVAL, "filter: %s is not a condition%s",
                     lit_text(&e->lit, lb, sizeof lb), pos_text(e->pos, pb, sizeof pb));
        return NULL;
    case QV__E_CMP: return bind_cmp(B, e->op, e->kids[0], e->kids[1], e->pos);
    case QV__E_AND:
    case QV__E_OR: {
        struct qv__xplan *p = pnode(B, e->kind == QV__E_AND ? QV__P_AND : QV__P_OR);
        struct qv__xplan **k = p ? qv__xalloc(B->b, (size_t)e->n_kids * sizeof *k, B->err) : NULL;
        if (!k) return NULL;
        for (int32_t i = 0; i < e->n_kids; i++)
            if (!(k[i] = bind_node(B, e->kids[i]))) return NULL;
        p->kids = k;
        p->n_kids = e->n_kids;
        return merge_junction(B, p);
    }
    case QV__E_NOT: return pnot(B, bind_node(B, e->kids[0]));
    case QV__E_IS_NULL: {
        const struct qv_expr *x = e->kids[0];
        if (x->kind == QV__E_LITERAL) {
            bool is_null = x->lit.kind == QV__LIT_NULL;
            return pconst(B, is_null != e->negate ? QV__TV_T : QV__TV_F);
        }
        int32_t ref;
        if (resolve(B, x, &ref)) return NULL;
        struct qv__xplan *p = pnode(B, QV__P_ISNULL);
        if (p) {
            p->ref = ref;
            p->negate = e->negate;
        }
        return p;
    }
    case QV__E_IN: {
        struct qv__xplan *p = bind_in(B, e);
        return e->negate ? pnot(B, p) : p;
    }
    case QV__E_BETWEEN: {
        const struct qv_expr *x = e->kids[0];
        if (x->kind != QV__E_COLUMN) {
            qv_error_set(B->err, EINVAL, "filter: the subject of BETWEEN must be a column%s",
                         pos_text(pos_of(x, e->pos), pb, sizeof pb));
            return NULL;
        }
        struct qv__xplan *lo = bind_cmp(B, QV_CMP_GE, x, e->kids[1], pos_of(e->kids[1], e->pos));
        struct qv__xplan *hi = lo ? bind_cmp(B, QV_CMP_LE, x, e->kids[2], pos_of(e->kids[2], e->pos)) : NULL;
        struct qv__xplan *p = pjoin(B, QV__P_AND, lo, hi);
        return e->negate ? pnot(B, p) : p;
    }
    case QV__E_STARTS: {
        const struct qv_expr *x = e->kids[0], *pre = e->kids[1];
        int32_t ref;
        if (x->kind != QV__E_COLUMN) {
            qv_error_set(B->err, EINVAL, "filter: the subject of STARTS WITH must be a column%s",
                         pos_text(pos_of(x, e->pos), pb, sizeof pb));
            return NULL;
        }
        if (resolve(B, x, &ref)) return NULL;
        const struct qv__xref *r = &B->b->refs[ref];
        if (r->vt == QV__VT_NULL) return pconst(B, QV__TV_N);
        if (r->mode != QV__LM_BYTES) {
            qv_error_set(B->err, EINVAL,
                         "filter: STARTS WITH needs a string or binary column; '%s' is %s%s", r->name,
                         type_text(r->field, tb, sizeof tb), pos_text(pos_of(x, e->pos), pb, sizeof pb));
            return NULL;
        }
        if (pre->lit.kind == QV__LIT_NULL) return pconst(B, QV__TV_N);
        if (pre->lit.kind != QV__LIT_STR)
            return mismatch(B, r, &pre->lit, pos_of(pre, e->pos), "start with");
        if (pre->lit.len == 0) return pnnconst(B, ref, QV__TV_T);
        struct qv__xplan *p = pnode(B, QV__P_STARTS);
        uint8_t *copy = p ? qv__xalloc(B->b, pre->lit.len, B->err) : NULL;
        if (!copy) return NULL;
        memcpy(copy, pre->lit.bytes, pre->lit.len);
        p->ref = ref;
        p->kb.p = copy;
        p->kb.n = pre->lit.len;
        p->fn = qv__kernel_starts(r->vt);
        return p;
    }
    default:
        qv_error_set(B->err, EINVAL, "filter: unknown node kind %d", e->kind);
        return NULL;
    }
}

/* Plan depth, and the byte width of fixed-size binary references, which
 * the kernels read from the node. */
static int32_t plan_finish(const struct qv__xbinding *b, struct qv__xplan *p) {
    int32_t m = 0;
    if (p->ref >= 0) p->width = b->refs[p->ref].field->byte_width;
    for (int32_t i = 0; i < p->n_kids; i++) {
        int32_t l = plan_finish(b, p->kids[i]);
        if (l > m) m = l;
    }
    return m + 1;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int qv_expr_bind(struct qv_expr *e, const struct qv_schema *schema, struct qv_error *err) {
    return qv_expr_bind_ex(e, schema, QV_NAN_IEEE, err);
}

int qv_expr_bind_ex(struct qv_expr *e, const struct qv_schema *schema, int nan_order,
                    struct qv_error *err) {
    if (!e || !schema) return qv_error_set(err, EINVAL, "filter: bind needs a filter and a schema");
    if (e->binding) {
        qv__binding_free(e->binding);
        e->binding = NULL;
    }
    if (nan_order != QV_NAN_IEEE && nan_order != QV_NAN_LARGEST)
        return qv_error_set(err, EINVAL, "filter: nan order %d is not a qv_nan_order (0 or 1)",
                            nan_order);
    if (schema->root.type != QV_TYPE_STRUCT)
        return qv_error_set(err, EINVAL, "filter: the schema's root must be a struct, not %s",
                            qv_type_name(schema->root.type));
    /* A local record keeps the code when the caller passed none. */
    struct qv_error local = {0};
    if (!err) err = &local;
    qv_error_clear(err);
    struct qv__xbinding *b = qv_calloc(e->r, sizeof *b, err);
    if (!b) return ENOMEM;
    b->r = e->r;
    b->schema = schema;
    b->nan_order = nan_order;
    struct binder B = {.b = b, .err = err, .r = e->r};
    b->plan = bind_node(&B, e);
    binder_free(&B);
    if (b->plan) {
        b->levels = plan_finish(b, b->plan);
        b->columns = qv__xalloc(b, (size_t)(b->n_refs ? b->n_refs : 1) * sizeof *b->columns, err);
    }
    if (!b->plan || !b->columns) {
        int code = err->code ? err->code : ENOMEM;
        qv__binding_free(b);
        return code;
    }
    for (int32_t i = 0; i < b->n_refs; i++) b->columns[i] = b->refs[i].column;
    qsort(b->columns, (size_t)b->n_refs, sizeof *b->columns, cmp_i32);
    int32_t n = 0;
    for (int32_t i = 0; i < b->n_refs; i++)
        if (n == 0 || b->columns[n - 1] != b->columns[i]) b->columns[n++] = b->columns[i];
    b->n_columns = n;
    e->binding = b;
    return 0;
}

bool qv_expr_is_bound(const struct qv_expr *e) { return e && e->binding; }

int32_t qv_expr_columns(const struct qv_expr *e, int32_t *cols, int32_t cap) {
    if (!e || !e->binding) return -1;
    const struct qv__xbinding *b = e->binding;
    for (int32_t i = 0; i < b->n_columns && i < cap && cols; i++) cols[i] = b->columns[i];
    return b->n_columns;
}

int32_t qv_expr_num_refs(const struct qv_expr *e) {
    return e && e->binding ? e->binding->n_refs : -1;
}

int qv_expr_ref(const struct qv_expr *e, int32_t i, struct qv_expr_ref *out) {
    if (!e || !e->binding || !out || i < 0 || i >= e->binding->n_refs) return EINVAL;
    const struct qv__xref *r = &e->binding->refs[i];
    out->column = r->column;
    out->depth = r->depth;
    out->path = r->path;
    out->field = r->field;
    out->name = r->name;
    return 0;
}
