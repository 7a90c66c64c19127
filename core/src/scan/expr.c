/* The predicate syntax tree: constructors (the structured C API the parser
 * also builds with), freeing and printing. */
#include <math.h>
#include <string.h>

#include "scan/expr_internal.h"

struct qv_expr *qv__expr_node(struct qv_reservation *r, int kind, struct qv_error *err) {
    if (!r) {
        qv_error_set(err, EINVAL, "filter: no reservation given");
        return NULL;
    }
    struct qv_expr *e = qv_calloc(r, sizeof *e, err);
    if (!e) return NULL;
    e->r = r;
    e->kind = kind;
    e->depth = 1;
    return e;
}

static void unbind(struct qv_expr *e) {
    if (e && e->binding) {
        qv__binding_free(e->binding);
        e->binding = NULL;
    }
}

void qv_expr_destroy(struct qv_expr *e) {
    if (!e) return;
    struct qv_reservation *r = e->r;
    for (int32_t i = 0; i < e->n_kids; i++) qv_expr_destroy(e->kids[i]);
    if (e->kids) qv_free(r, e->kids, (size_t)e->cap_kids * sizeof *e->kids);
    if (e->names) qv_free(r, e->names, e->names_size);
    qv__lit_clear(r, &e->lit);
    unbind(e);
    qv_free(r, e, sizeof *e);
}

/* ---- Columns ---- */

/* names[i] is lens[i] bytes, not NUL-terminated. */
int qv__expr_make_column(struct qv_reservation *r, const char *const *names, const size_t *lens,
                         const bool *quoted, int32_t n, struct qv_expr **out,
                         struct qv_error *err) {
    *out = NULL;
    if (n < 1 || n > QV_EXPR_MAX_DEPTH)
        return qv_error_set(err, EINVAL, "filter: a column path needs 1 to %d names, got %d",
                            QV_EXPR_MAX_DEPTH, (int)n);
    size_t size = (size_t)n * (sizeof(char *) + sizeof(bool));
    for (int32_t i = 0; i < n; i++) size += lens[i] + 1;
    struct qv_expr *e = qv__expr_node(r, QV__E_COLUMN, err);
    if (!e) return ENOMEM;
    char **block = qv_alloc(r, size, err);
    if (!block) {
        qv_expr_destroy(e);
        return ENOMEM;
    }
    e->names = block;
    e->names_size = size;
    e->n_names = n;
    e->quoted = (bool *)(block + n);
    char *p = (char *)(e->quoted + n);
    for (int32_t i = 0; i < n; i++) {
        e->names[i] = p;
        e->quoted[i] = quoted ? quoted[i] : true;
        memcpy(p, names[i], lens[i]);
        p[lens[i]] = 0;
        p += lens[i] + 1;
    }
    *out = e;
    return 0;
}

int qv_expr_column_names(struct qv_reservation *r, const char *const *names, int32_t n,
                         struct qv_expr **out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!names || n < 1 || n > QV_EXPR_MAX_DEPTH)
        return qv_error_set(err, EINVAL, "filter: a column path needs 1 to %d names",
                            QV_EXPR_MAX_DEPTH);
    size_t lens[QV_EXPR_MAX_DEPTH];
    for (int32_t i = 0; i < n; i++) {
        if (!names[i]) return qv_error_set(err, EINVAL, "filter: column name %d is NULL", (int)i);
        lens[i] = strlen(names[i]);
    }
    return qv__expr_make_column(r, names, lens, NULL, n, out, err);
}

static bool ident_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_char(unsigned char c) {
    return ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

/* Reads one name of a path at s[*i]: plain, "quoted" or `quoted` (doubled
 * quote characters stand for themselves). The unescaped name is written to
 * buf (cap bytes, enough for the whole path). */
int qv__read_name(const char *s, size_t n, size_t *i, char *buf, size_t *len, bool *quoted) {
    size_t k = 0;
    if (*i < n && (s[*i] == '"' || s[*i] == '`')) {
        char q = s[(*i)++];
        for (;;) {
            if (*i >= n) return EINVAL;
            if (s[*i] == q) {
                if (*i + 1 < n && s[*i + 1] == q) {
                    buf[k++] = q;
                    *i += 2;
                    continue;
                }
                (*i)++;
                break;
            }
            buf[k++] = s[(*i)++];
        }
        *quoted = true;
    } else {
        if (*i >= n || !ident_start((unsigned char)s[*i])) return EINVAL;
        while (*i < n && ident_char((unsigned char)s[*i])) buf[k++] = s[(*i)++];
        *quoted = false;
    }
    *len = k;
    return 0;
}

int qv_expr_column(struct qv_reservation *r, const char *path, struct qv_expr **out,
                   struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!path) return qv_error_set(err, EINVAL, "filter: column path is NULL");
    size_t n = strlen(path), i = 0;
    if (!r) return qv_error_set(err, EINVAL, "filter: no reservation given");
    char *buf = qv_alloc(r, n + 1, err);
    if (!buf) return ENOMEM;
    const char *names[QV_EXPR_MAX_DEPTH];
    size_t lens[QV_EXPR_MAX_DEPTH];
    bool quoted[QV_EXPR_MAX_DEPTH];
    int32_t count = 0;
    size_t used = 0;
    int rc = 0;
    while (i < n && path[i] == ' ') i++;
    for (;;) {
        size_t len;
        if (count == QV_EXPR_MAX_DEPTH) {
            rc = EINVAL;
            break;
        }
        if (qv__read_name(path, n, &i, buf + used, &len, &quoted[count])) {
            rc = EINVAL;
            break;
        }
        names[count] = buf + used;
        lens[count++] = len;
        used += len;
        while (i < n && path[i] == ' ') i++;
        if (i == n) break;
        if (path[i] != '.') {
            rc = EINVAL;
            break;
        }
        i++;
        while (i < n && path[i] == ' ') i++;
    }
    if (rc) {
        qv_free(r, buf, n + 1);
        return qv_error_set(err, EINVAL,
                            "filter: malformed column path '%s' at position %zu (names are "
                            "identifiers or \"quoted\", separated by '.')",
                            path, i + 1);
    }
    rc = qv__expr_make_column(r, names, lens, quoted, count, out, err);
    qv_free(r, buf, n + 1);
    return rc;
}

/* ---- Literals ---- */

static int lit_node(struct qv_reservation *r, const struct qv__lit *lit, struct qv_expr **out,
                    struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!r) return qv_error_set(err, EINVAL, "filter: no reservation given");
    *out = qv__expr_node(r, QV__E_LITERAL, err);
    if (!*out) return ENOMEM;
    (*out)->lit = *lit;
    return 0;
}

int qv_expr_literal_null(struct qv_reservation *r, struct qv_expr **out, struct qv_error *err) {
    struct qv__lit lit = {.kind = QV__LIT_NULL};
    return lit_node(r, &lit, out, err);
}

int qv_expr_literal_bool(struct qv_reservation *r, bool v, struct qv_expr **out,
                         struct qv_error *err) {
    struct qv__lit lit = {.kind = QV__LIT_BOOL, .b = v};
    return lit_node(r, &lit, out, err);
}

static int num_node(struct qv_reservation *r, qv__xu128 mag, bool neg, int32_t exp,
                    struct qv_expr **out, struct qv_error *err) {
    struct qv__lit lit;
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!r) return qv_error_set(err, EINVAL, "filter: no reservation given");
    int rc = qv__lit_from_u128(mag, neg, exp, r, &lit, err);
    if (rc) return rc;
    rc = lit_node(r, &lit, out, err);
    if (rc) qv__lit_clear(r, &lit);
    return rc;
}

int qv_expr_literal_int64(struct qv_reservation *r, int64_t v, struct qv_expr **out,
                          struct qv_error *err) {
    qv__xu128 mag = v < 0 ? (qv__xu128)(-(qv__xi128)v) : (qv__xu128)v;
    return num_node(r, mag, v < 0, 0, out, err);
}

int qv_expr_literal_uint64(struct qv_reservation *r, uint64_t v, struct qv_expr **out,
                           struct qv_error *err) {
    return num_node(r, v, false, 0, out, err);
}

int qv_expr_literal_double(struct qv_reservation *r, double v, struct qv_expr **out,
                           struct qv_error *err) {
    struct qv__lit lit = {.kind = QV__LIT_DBL, .d = v};
    return lit_node(r, &lit, out, err);
}

int qv_expr_literal_decimal(struct qv_reservation *r, uint64_t lo, int64_t hi, int32_t scale,
                            struct qv_expr **out, struct qv_error *err) {
    if (out) *out = NULL;
    if (scale < -1000 || scale > 1000)
        return qv_error_set(err, EINVAL, "filter: decimal literal scale %d outside [-1000, 1000]",
                            (int)scale);
    qv__xi128 v = (qv__xi128)(((qv__xu128)(uint64_t)hi << 64) | lo);
    qv__xu128 mag = v < 0 ? (qv__xu128)0 - (qv__xu128)v : (qv__xu128)v;
    return num_node(r, mag, v < 0, -scale, out, err);
}

int qv_expr_literal_number(struct qv_reservation *r, const char *text, struct qv_expr **out,
                           struct qv_error *err) {
    struct qv__lit lit;
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!text) return qv_error_set(err, EINVAL, "filter: number text is NULL");
    if (!r) return qv_error_set(err, EINVAL, "filter: no reservation given");
    int rc = qv__lit_parse_number(text, strlen(text), r, &lit, err);
    if (rc) return rc;
    rc = lit_node(r, &lit, out, err);
    if (rc) qv__lit_clear(r, &lit);
    return rc;
}

int qv_expr_literal_string(struct qv_reservation *r, const void *bytes, size_t len,
                           struct qv_expr **out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!bytes && len) return qv_error_set(err, EINVAL, "filter: string literal bytes are NULL");
    if (!r) return qv_error_set(err, EINVAL, "filter: no reservation given");
    struct qv__lit lit = {.kind = QV__LIT_STR, .len = len};
    lit.bytes = qv_alloc(r, len + 1, err);
    if (!lit.bytes) return ENOMEM;
    if (len) memcpy(lit.bytes, bytes, len);
    lit.bytes[len] = 0;
    int rc = lit_node(r, &lit, out, err);
    if (rc) qv__lit_clear(r, &lit);
    return rc;
}

int qv_expr_literal_date32(struct qv_reservation *r, int32_t days, struct qv_expr **out,
                           struct qv_error *err) {
    struct qv__lit lit = {.kind = QV__LIT_DATE, .days = days};
    return lit_node(r, &lit, out, err);
}

int qv_expr_literal_timestamp(struct qv_reservation *r, int64_t value, enum qv_time_unit unit,
                              struct qv_expr **out, struct qv_error *err) {
    static const int64_t ns_per[] = {1000000000, 1000000, 1000, 1};
    if (out) *out = NULL;
    if ((unsigned)unit > QV_TIME_NS)
        return qv_error_set(err, EINVAL, "filter: unknown time unit %d", (int)unit);
    struct qv__lit lit = {.kind = QV__LIT_TS, .ns = (qv__xi128)value * ns_per[unit]};
    return lit_node(r, &lit, out, err);
}

/* ---- Combining ---- */

static void free_all(struct qv_expr *const *v, int32_t n) {
    for (int32_t i = 0; i < n; i++) qv_expr_destroy(v[i]);
}

static bool is_value(const struct qv_expr *e) {
    return e->kind == QV__E_COLUMN || e->kind == QV__E_LITERAL;
}

/* A new node of `kind` over kids[0..n): takes ownership of all of them on
 * success and on failure. */
static int make_node(int kind, struct qv_expr *const *kids, int32_t n, struct qv_expr **out,
                     struct qv_error *err) {
    if (out) *out = NULL;
    struct qv_reservation *r = NULL;
    int32_t depth = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!kids[i]) {
            free_all(kids, n);
            return qv_error_set(err, EINVAL,
                                "filter: operand %d is missing (an earlier constructor failed?)",
                                (int)i + 1);
        }
        if (!r) r = kids[i]->r;
        if (kids[i]->depth > depth) depth = kids[i]->depth;
    }
    if (!out) {
        free_all(kids, n);
        return qv_error_set(err, EINVAL, "filter: no output given");
    }
    if (depth + 1 > QV_EXPR_MAX_DEPTH) {
        free_all(kids, n);
        return qv_error_set(err, EINVAL, "filter: nested too deeply (more than %d levels)",
                            QV_EXPR_MAX_DEPTH);
    }
    struct qv_expr *e = qv__expr_node(r, kind, err);
    struct qv_expr **arr = e ? qv_alloc(r, (size_t)n * sizeof *arr, err) : NULL;
    if (!arr) {
        if (e) qv_free(r, e, sizeof *e);
        free_all(kids, n);
        return ENOMEM;
    }
    for (int32_t i = 0; i < n; i++) {
        unbind(kids[i]);
        arr[i] = kids[i];
    }
    e->kids = arr;
    e->n_kids = e->cap_kids = n;
    e->depth = depth + 1;
    *out = e;
    return 0;
}

int qv_expr_compare(enum qv_cmp_op op, struct qv_expr *a, struct qv_expr *b,
                    struct qv_expr **out, struct qv_error *err) {
    struct qv_expr *kids[2] = {a, b};
    if ((unsigned)op > QV_CMP_GE || (a && !is_value(a)) || (b && !is_value(b))) {
        free_all(kids, 2);
        if (out) *out = NULL;
        return qv_error_set(err, EINVAL,
                            (unsigned)op > QV_CMP_GE
                                ? "filter: unknown comparison operator"
                                : "filter: comparison operands must be columns or literals");
    }
    int rc = make_node(QV__E_CMP, kids, 2, out, err);
    if (!rc) (*out)->op = (int)op;
    return rc;
}

/* AND / OR are associative, so chains are kept flat: appending to an
 * existing node keeps the depth (and the recursion of every later walk)
 * independent of the number of operands. */
static int append_kid(struct qv_expr *e, struct qv_expr *k, struct qv_error *err) {
    if (e->n_kids == e->cap_kids) {
        int32_t cap = e->cap_kids ? e->cap_kids * 2 : 4;
        if (cap > (1 << 28)) return qv_error_set(err, EINVAL, "filter: too many operands");
        void *p = qv_realloc(e->r, e->kids, (size_t)e->cap_kids * sizeof *e->kids,
                             (size_t)cap * sizeof *e->kids, err);
        if (!p) return ENOMEM;
        e->kids = p;
        e->cap_kids = cap;
    }
    e->kids[e->n_kids++] = k;
    if (k->depth + 1 > e->depth) e->depth = k->depth + 1;
    return 0;
}

static int junction(int kind, struct qv_expr *a, struct qv_expr *b, struct qv_expr **out,
                    struct qv_error *err) {
    if (a && a->kind == kind && b) {
        if (b->depth + 1 > QV_EXPR_MAX_DEPTH) {
            qv_expr_destroy(a);
            qv_expr_destroy(b);
            if (out) *out = NULL;
            return qv_error_set(err, EINVAL, "filter: nested too deeply (more than %d levels)",
                                QV_EXPR_MAX_DEPTH);
        }
        if (!out) {
            qv_expr_destroy(a);
            qv_expr_destroy(b);
            return qv_error_set(err, EINVAL, "filter: no output given");
        }
        *out = NULL;
        unbind(a);
        unbind(b);
        int rc = 0;
        if (b->kind == kind) {
            /* Move b's operands over one by one; b's shell goes at the end. */
            int32_t moved = 0;
            for (; moved < b->n_kids && !rc; moved++) {
                rc = append_kid(a, b->kids[moved], err);
                if (rc) break;
            }
            if (rc) {
                /* The operands not moved stay in b, which is freed with a. */
                memmove(b->kids, b->kids + moved, (size_t)(b->n_kids - moved) * sizeof *b->kids);
                b->n_kids -= moved;
                qv_expr_destroy(a);
                qv_expr_destroy(b);
                return rc;
            }
            b->n_kids = 0;
            qv_expr_destroy(b);
        } else {
            rc = append_kid(a, b, err);
            if (rc) {
                qv_expr_destroy(a);
                qv_expr_destroy(b);
                return rc;
            }
        }
        *out = a;
        return 0;
    }
    struct qv_expr *kids[2] = {a, b};
    return make_node(kind, kids, 2, out, err);
}

int qv_expr_and(struct qv_expr *a, struct qv_expr *b, struct qv_expr **out,
                struct qv_error *err) {
    return junction(QV__E_AND, a, b, out, err);
}

int qv_expr_or(struct qv_expr *a, struct qv_expr *b, struct qv_expr **out,
               struct qv_error *err) {
    return junction(QV__E_OR, a, b, out, err);
}

int qv_expr_not(struct qv_expr *a, struct qv_expr **out, struct qv_error *err) {
    return make_node(QV__E_NOT, &a, 1, out, err);
}

int qv_expr_is_null(struct qv_expr *x, bool negate, struct qv_expr **out, struct qv_error *err) {
    if (x && !is_value(x)) {
        qv_expr_destroy(x);
        if (out) *out = NULL;
        return qv_error_set(err, EINVAL, "filter: IS NULL applies to a column or a literal");
    }
    int rc = make_node(QV__E_IS_NULL, &x, 1, out, err);
    if (!rc) (*out)->negate = negate;
    return rc;
}

int qv_expr_in(struct qv_expr *x, struct qv_expr **values, int32_t n, bool negate,
               struct qv_expr **out, struct qv_error *err) {
    if (out) *out = NULL;
    if (n < 1 || !values || n > (1 << 26)) {
        qv_expr_destroy(x);
        if (values)
            for (int32_t i = 0; i < n; i++) qv_expr_destroy(values[i]);
        return qv_error_set(err, EINVAL, "filter: IN needs 1 to %d values, got %d", 1 << 26,
                            (int)n);
    }
    const char *why = NULL;
    if (x && !is_value(x)) why = "filter: the subject of IN must be a column";
    for (int32_t i = 0; i < n && !why; i++)
        if (values[i] && values[i]->kind != QV__E_LITERAL) why = "filter: IN values must be literals";
    int32_t missing = x ? -1 : 0;
    for (int32_t i = 0; i < n && missing < 0; i++)
        if (!values[i]) missing = i + 1;
    if (why || missing >= 0 || !out) {
        qv_expr_destroy(x);
        for (int32_t i = 0; i < n; i++) qv_expr_destroy(values[i]);
        if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
        if (why) return qv_error_set(err, EINVAL, "%s", why);
        return qv_error_set(err, EINVAL,
                            "filter: IN operand %d is missing (an earlier constructor failed?)",
                            (int)missing);
    }
    struct qv_reservation *r = x->r;
    struct qv_expr *e = qv__expr_node(r, QV__E_IN, err);
    struct qv_expr **arr = e ? qv_alloc(r, ((size_t)n + 1) * sizeof *arr, err) : NULL;
    if (!arr) {
        if (e) qv_free(r, e, sizeof *e);
        qv_expr_destroy(x);
        for (int32_t i = 0; i < n; i++) qv_expr_destroy(values[i]);
        return ENOMEM;
    }
    unbind(x);
    arr[0] = x;
    for (int32_t i = 0; i < n; i++) arr[i + 1] = values[i];
    e->kids = arr;
    e->n_kids = e->cap_kids = n + 1;
    e->depth = 2;
    e->negate = negate;
    *out = e;
    return 0;
}

int qv_expr_between(struct qv_expr *x, struct qv_expr *lo, struct qv_expr *hi, bool negate,
                    struct qv_expr **out, struct qv_error *err) {
    struct qv_expr *kids[3] = {x, lo, hi};
    for (int i = 0; i < 3; i++)
        if (kids[i] && !is_value(kids[i])) {
            free_all(kids, 3);
            if (out) *out = NULL;
            return qv_error_set(err, EINVAL,
                                "filter: BETWEEN operands must be columns or literals");
        }
    int rc = make_node(QV__E_BETWEEN, kids, 3, out, err);
    if (!rc) (*out)->negate = negate;
    return rc;
}

int qv_expr_starts_with(struct qv_expr *x, struct qv_expr *prefix, struct qv_expr **out,
                        struct qv_error *err) {
    struct qv_expr *kids[2] = {x, prefix};
    if ((x && !is_value(x)) || (prefix && prefix->kind != QV__E_LITERAL)) {
        free_all(kids, 2);
        if (out) *out = NULL;
        return qv_error_set(err, EINVAL,
                            "filter: STARTS WITH needs a column and a string literal");
    }
    return make_node(QV__E_STARTS, kids, 2, out, err);
}

/* ---- Printing ---- */

static int prec(const struct qv_expr *e) {
    switch (e->kind) {
    case QV__E_OR: return 1;
    case QV__E_AND: return 2;
    case QV__E_NOT: return 3;
    default: return 4;
    }
}

static const char *const op_text[] = {"=", "!=", "<", "<=", ">", ">="};

void qv__expr_print(struct qv__sbuf *b, const struct qv_expr *e) {
    switch (e->kind) {
    case QV__E_COLUMN:
        for (int32_t i = 0; i < e->n_names; i++) {
            if (i) qv__sb_putc(b, '.');
            qv__name_print(b, e->names[i], strlen(e->names[i]));
        }
        return;
    case QV__E_LITERAL: qv__lit_print(b, &e->lit); return;
    case QV__E_CMP:
        qv__expr_print(b, e->kids[0]);
        qv__sb_printf(b, " %s ", op_text[e->op]);
        qv__expr_print(b, e->kids[1]);
        return;
    case QV__E_AND:
    case QV__E_OR:
        for (int32_t i = 0; i < e->n_kids; i++) {
            if (i) e->kind == QV__E_AND ? qv__sb_puts(b, " AND ", 5) : qv__sb_puts(b, " OR ", 4);
            bool paren = prec(e->kids[i]) < prec(e);
            if (paren) qv__sb_putc(b, '(');
            qv__expr_print(b, e->kids[i]);
            if (paren) qv__sb_putc(b, ')');
        }
        return;
    case QV__E_NOT: {
        const struct qv_expr *k = e->kids[0];
        bool paren = !(is_value(k) || k->kind == QV__E_NOT);
        qv__sb_puts(b, paren ? "NOT (" : "NOT ", paren ? 5 : 4);
        qv__expr_print(b, k);
        if (paren) qv__sb_putc(b, ')');
        return;
    }
    case QV__E_IS_NULL:
        qv__expr_print(b, e->kids[0]);
        e->negate ? qv__sb_puts(b, " IS NOT NULL", 12) : qv__sb_puts(b, " IS NULL", 8);
        return;
    case QV__E_IN:
        qv__expr_print(b, e->kids[0]);
        e->negate ? qv__sb_puts(b, " NOT IN (", 9) : qv__sb_puts(b, " IN (", 5);
        for (int32_t i = 1; i < e->n_kids; i++) {
            if (i > 1) qv__sb_puts(b, ", ", 2);
            qv__expr_print(b, e->kids[i]);
        }
        qv__sb_putc(b, ')');
        return;
    case QV__E_BETWEEN:
        qv__expr_print(b, e->kids[0]);
        e->negate ? qv__sb_puts(b, " NOT BETWEEN ", 13) : qv__sb_puts(b, " BETWEEN ", 9);
        qv__expr_print(b, e->kids[1]);
        qv__sb_puts(b, " AND ", 5);
        qv__expr_print(b, e->kids[2]);
        return;
    case QV__E_STARTS:
        qv__expr_print(b, e->kids[0]);
        qv__sb_puts(b, " STARTS WITH ", 13);
        qv__expr_print(b, e->kids[1]);
        return;
    default: qv__sb_puts(b, "?", 1); return;
    }
}

size_t qv_expr_to_string(const struct qv_expr *e, char *buf, size_t cap) {
    struct qv__sbuf b = {.buf = buf, .cap = buf ? cap : 0, .len = 0};
    if (b.cap) buf[0] = 0;
    if (e) qv__expr_print(&b, e);
    return b.len;
}
