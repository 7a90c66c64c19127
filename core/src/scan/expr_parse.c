/* The text form of the predicate language: a hand-written tokenizer and a
 * recursive-descent parser that builds the tree with the public
 * constructors. Every error names what was expected and points at it. */
#include <stdio.h>
#include <string.h>

#include "scan/expr_internal.h"

enum {
    TK_EOF = 0,
    TK_IDENT,
    TK_QIDENT,
    TK_NUMBER,
    TK_STRING,
    TK_LP,
    TK_RP,
    TK_COMMA,
    TK_DOT,
    TK_OP,
    TK_MINUS,
    TK_PLUS,
    TK_BAD
};

struct tok {
    int type;
    int op;       /* TK_OP */
    size_t start; /* byte offsets into the text */
    size_t end;
    int32_t cpos; /* 1-based character position of `start` */
};

/* Tokens between two calls of the interruption callback: rare enough to
 * cost nothing, frequent enough that Ctrl-C answers within milliseconds. */
#define CHECK_EVERY 4096

struct parser {
    const char *s;
    size_t n;
    size_t at;    /* next byte to tokenize */
    int32_t at_c; /* character position of byte `at` */
    struct tok t; /* current token */
    int depth;
    int (*interrupted)(void *);
    void *interrupted_arg;
    uint32_t tokens; /* since the last interruption check */
    bool stopped;    /* interrupted: every later token is TK_BAD */
    struct qv_reservation *r;
    struct qv_error *err;
    int rc;
    const char *lex_error; /* why the current TK_BAD token is bad */
};

static bool ident_start(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_char(unsigned char c) {
    return ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int32_t char_pos(const char *s, size_t byte) {
    int32_t k = 1;
    for (size_t i = 0; i < byte; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
    return k;
}

/* A byte of the text as messages show it: blanks as spaces, other control
 * bytes (NUL included, which would end the message) as '?'. */
static char shown(char c) {
    if (c == '\t' || c == '\n' || c == '\r') return ' ';
    return ((unsigned char)c < 0x20 || c == 0x7f) ? '?' : c;
}

/* Records an error at byte `at`: the message, the position and the text
 * with a caret under that position (a window of it when it is long). */
static void *fail_at(struct parser *P, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void *fail_at(struct parser *P, size_t at, const char *fmt, ...) {
    if (P->rc) return NULL; /* keep the first error */
    P->rc = EINVAL;
    if (!P->err) return NULL;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (at > P->n) at = P->n;
    /* A window of up to 60 characters each side of the position. */
    size_t lo = at, hi = at;
    for (int k = 0; k < 60 && lo > 0;) {
        lo--;
        if (((unsigned char)P->s[lo] & 0xC0) != 0x80) k++;
    }
    for (int k = 0; k < 60 && hi < P->n;) {
        hi++;
        while (hi < P->n && ((unsigned char)P->s[hi] & 0xC0) == 0x80) hi++;
        k++;
    }
    char line[600];
    size_t w = 0;
    bool pre = lo > 0, post = hi < P->n;
    if (pre) w += (size_t)snprintf(line + w, sizeof line - w, "...");
    for (size_t i = lo; i < hi && w + 2 < sizeof line; i++) {
        line[w++] = shown(P->s[i]);
    }
    line[w] = 0;
    if (post && w + 4 < sizeof line) snprintf(line + w, sizeof line - w, "...");
    int caret = (int)(char_pos(P->s, at) - char_pos(P->s, lo)) + (pre ? 3 : 0);
    qv_error_set(P->err, EINVAL, "filter: %s at position %d\n  %s\n  %*s^", what,
                 (int)char_pos(P->s, at), line, caret, "");
    return NULL;
}

/* Asks the front end whether to stop (Ctrl-C). Once it said so, the lexer
 * only returns TK_BAD, so every parse function unwinds at its next token. */
static bool stop_requested(struct parser *P) {
    if (P->stopped) return true;
    if (!P->interrupted || ++P->tokens < CHECK_EVERY) return false;
    P->tokens = 0;
    if (!P->interrupted(P->interrupted_arg)) return false;
    P->stopped = true;
    if (!P->rc) {
        P->rc = ECANCELED;
        qv_error_set(P->err, ECANCELED, "filter: parsing interrupted at position %d",
                     (int)P->at_c);
    }
    return true;
}

static void next(struct parser *P) {
    const char *s = P->s;
    size_t n = P->n, i = P->at;
    /* Blanks are ASCII: one character per byte. */
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    P->at_c += (int32_t)(i - P->at);
    struct tok t = {.type = TK_EOF, .start = i, .end = i, .cpos = P->at_c};
    if (stop_requested(P)) {
        t.type = TK_BAD;
        P->lex_error = "interrupted";
        P->t = t;
        P->at = i;
        return;
    }
    if (i >= n) {
        P->t = t;
        P->at = i;
        return;
    }
    unsigned char c = (unsigned char)s[i];
    if (ident_start(c)) {
        while (i < n && ident_char((unsigned char)s[i])) i++;
        t.type = TK_IDENT;
    } else if (c == '"' || c == '`') {
        i++;
        t.type = TK_BAD;
        P->lex_error = "unterminated quoted name";
        while (i < n) {
            if (s[i] == (char)c) {
                if (i + 1 < n && s[i + 1] == (char)c) {
                    i += 2;
                    continue;
                }
                i++;
                t.type = TK_QIDENT;
                break;
            }
            i++;
        }
    } else if (is_digit((char)c) || (c == '.' && i + 1 < n && is_digit(s[i + 1]))) {
        while (i < n && is_digit(s[i])) i++;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && is_digit(s[i])) i++;
        }
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
            size_t j = i + 1;
            if (j < n && (s[j] == '+' || s[j] == '-')) j++;
            if (j < n && is_digit(s[j])) {
                i = j;
                while (i < n && is_digit(s[i])) i++;
            }
        }
        t.type = TK_NUMBER;
        if (i < n && (ident_char((unsigned char)s[i]) || s[i] == '.')) {
            t.type = TK_BAD;
            P->lex_error = "malformed number";
            while (i < n && (ident_char((unsigned char)s[i]) || s[i] == '.')) i++;
        }
    } else if (c == '\'') {
        i++;
        t.type = TK_BAD;
        P->lex_error = "unterminated string literal";
        while (i < n) {
            if (s[i] == '\'') {
                if (i + 1 < n && s[i + 1] == '\'') {
                    i += 2;
                    continue;
                }
                i++;
                t.type = TK_STRING;
                break;
            }
            i++;
        }
    } else {
        i++;
        switch (c) {
        case '(': t.type = TK_LP; break;
        case ')': t.type = TK_RP; break;
        case ',': t.type = TK_COMMA; break;
        case '.': t.type = TK_DOT; break;
        case '-': t.type = TK_MINUS; break;
        case '+': t.type = TK_PLUS; break;
        case '=':
            t.type = TK_OP;
            t.op = QV_CMP_EQ;
            if (i < n && s[i] == '=') i++;
            break;
        case '!':
            if (i < n && s[i] == '=') {
                i++;
                t.type = TK_OP;
                t.op = QV_CMP_NE;
            } else {
                t.type = TK_BAD;
                P->lex_error = "unexpected '!' (did you mean != ?)";
            }
            break;
        case '<':
            t.type = TK_OP;
            t.op = QV_CMP_LT;
            if (i < n && s[i] == '=') i++, t.op = QV_CMP_LE;
            else if (i < n && s[i] == '>') i++, t.op = QV_CMP_NE;
            break;
        case '>':
            t.type = TK_OP;
            t.op = QV_CMP_GT;
            if (i < n && s[i] == '=') i++, t.op = QV_CMP_GE;
            break;
        default:
            t.type = TK_BAD;
            P->lex_error = c == 0 ? "unexpected NUL byte (NUL is data only inside a string "
                                    "literal)"
                                  : "unexpected character";
            break;
        }
    }
    t.end = i;
    /* Characters are counted once per token, as the lexer passes them,
     * so positions cost nothing however long the text is. */
    int32_t chars = 0;
    for (size_t k = t.start; k < i; k++) chars += ((unsigned char)s[k] & 0xC0) != 0x80;
    P->at_c += chars;
    P->t = t;
    P->at = i;
}

static bool kw(const struct parser *P, const char *w) {
    if (P->t.type != TK_IDENT) return false;
    size_t m = strlen(w), n = P->t.end - P->t.start;
    if (m != n) return false;
    for (size_t i = 0; i < n; i++) {
        char c = P->s[P->t.start + i];
        if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
        if (c != w[i]) return false;
    }
    return true;
}

static const char *tok_desc(const struct parser *P) {
    switch (P->t.type) {
    case TK_EOF: return "end of filter";
    case TK_BAD: return P->lex_error;
    default: return NULL;
    }
}

/* "expected X" with what was found instead. */
static void *expected(struct parser *P, const char *what) {
    const char *d = tok_desc(P);
    if (P->t.type == TK_BAD) return fail_at(P, P->t.start, "%s (expected %s)", d, what);
    if (d) return fail_at(P, P->t.start, "expected %s, found %s", what, d);
    char found[41];
    size_t len = P->t.end - P->t.start;
    if (len > 40) len = 40;
    for (size_t i = 0; i < len; i++) found[i] = shown(P->s[P->t.start + i]);
    found[len] = 0;
    return fail_at(P, P->t.start, "expected %s, found '%s'", what, found);
}

/* Sets the position of a freshly built node and passes it through. */
static struct qv_expr *at(struct qv_expr *e, struct tok where) {
    if (e) e->pos = where.cpos;
    return e;
}

static struct qv_expr *built(struct parser *P, int rc, struct qv_expr *e, struct tok where) {
    if (rc) {
        if (!P->rc && rc == EINVAL && P->err) {
            /* A constructor refused (too deep, too many operands): repeat
             * its message with the caret. */
            char what[256];
            const char *m = P->err->message;
            if (strncmp(m, "filter: ", 8) == 0) m += 8;
            size_t ml = strlen(m);
            if (ml >= sizeof what) ml = sizeof what - 1;
            memcpy(what, m, ml);
            what[ml] = 0;
            fail_at(P, where.start, "%s", what);
        }
        if (!P->rc) P->rc = rc;
        return NULL;
    }
    return at(e, where);
}

/* The unescaped bytes of a string or quoted-name token into a fresh buffer
 * from r (len bytes + NUL). */
static char *unquote(struct parser *P, size_t *len) {
    size_t a = P->t.start + 1, b = P->t.end - 1;
    char q = P->s[P->t.start];
    char *buf = qv_alloc(P->r, b - a + 1, P->err);
    if (!buf) {
        P->rc = ENOMEM;
        return NULL;
    }
    size_t k = 0;
    for (size_t i = a; i < b; i++) {
        buf[k++] = P->s[i];
        if (P->s[i] == q) i++; /* a doubled quote stands for one */
    }
    buf[k] = 0;
    *len = k;
    return buf;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static struct qv_expr *parse_column(struct parser *P) {
    struct tok start = P->t;
    const char *names[QV_EXPR_MAX_DEPTH];
    size_t lens[QV_EXPR_MAX_DEPTH];
    bool quoted[QV_EXPR_MAX_DEPTH];
    char *bufs[QV_EXPR_MAX_DEPTH];
    size_t sizes[QV_EXPR_MAX_DEPTH];
    int32_t n = 0;
    struct qv_expr *e = NULL;
    for (;;) {
        if (P->t.type != TK_IDENT && P->t.type != TK_QIDENT) {
            expected(P, "a field name");
            break;
        }
        if (n == QV_EXPR_MAX_DEPTH) {
            fail_at(P, P->t.start, "column path longer than %d names", QV_EXPR_MAX_DEPTH);
            break;
        }
        if (P->t.type == TK_QIDENT) {
            bufs[n] = unquote(P, &lens[n]);
            if (!bufs[n]) break;
            sizes[n] = lens[n] + 1;
            names[n] = bufs[n];
            quoted[n] = true;
            /* Field names are C strings: a NUL would silently cut the name
             * and select another column. */
            if (memchr(bufs[n], 0, lens[n])) {
                n++;
                fail_at(P, P->t.start, "a column name cannot contain a NUL byte");
                break;
            }
        } else {
            bufs[n] = NULL;
            names[n] = P->s + P->t.start;
            lens[n] = P->t.end - P->t.start;
            quoted[n] = false;
        }
        n++;
        next(P);
        if (P->t.type != TK_DOT) {
            int rc = qv__expr_make_column(P->r, names, lens, quoted, n, &e, P->err);
            e = built(P, rc, e, start);
            break;
        }
        next(P);
    }
    for (int32_t i = 0; i < n; i++)
        if (bufs[i]) qv_free(P->r, bufs[i], sizes[i]);
    return e;
}

static struct qv_expr *parse_literal(struct parser *P, bool allow_column);

static struct qv_expr *parse_operand(struct parser *P) { return parse_literal(P, true); }

/* A literal, or with allow_column a column path. */
static struct qv_expr *parse_literal(struct parser *P, bool allow_column) {
    struct qv_expr *e = NULL;
    struct tok start = P->t;
    const char *what = allow_column ? "a column or a literal" : "a literal";
    int rc;
    switch (P->t.type) {
    case TK_QIDENT:
        if (!allow_column) return expected(P, what);
        return parse_column(P);
    case TK_IDENT: {
        if (kw(P, "null")) {
            rc = qv_expr_literal_null(P->r, &e, P->err);
        } else if (kw(P, "true") || kw(P, "false")) {
            rc = qv_expr_literal_bool(P->r, kw(P, "true"), &e, P->err);
        } else if (kw(P, "nan") || kw(P, "inf") || kw(P, "infinity")) {
            rc = qv_expr_literal_number(P->r, kw(P, "nan") ? "NaN" : "Infinity", &e, P->err);
        } else if (kw(P, "date") || kw(P, "timestamp") || kw(P, "x")) {
            bool is_date = kw(P, "date"), is_hex = kw(P, "x");
            size_t ident_end = P->t.end;
            /* One token of lookahead: only the lexer's position is put
             * back, so an interruption seen meanwhile sticks. */
            struct tok saved_t = P->t;
            size_t saved_at = P->at;
            int32_t saved_c = P->at_c;
            next(P);
            if (P->t.type != TK_STRING || (is_hex && P->t.start != ident_end)) {
                /* Not a typed literal: the word names a column. */
                P->t = saved_t;
                P->at = saved_at;
                P->at_c = saved_c;
                if (!allow_column) return expected(P, what);
                return parse_column(P);
            }
            const char *body = P->s + P->t.start + 1;
            size_t blen = P->t.end - P->t.start - 2;
            if (is_hex) {
                size_t len;
                char *raw = unquote(P, &len);
                if (!raw) return NULL;
                uint8_t *bytes = (uint8_t *)raw; /* decoded in place, shorter */
                size_t k = 0;
                bool ok = len % 2 == 0;
                for (size_t i = 0; ok && i < len; i += 2) {
                    int hi = hexval(raw[i]), lo = hexval(raw[i + 1]);
                    ok = hi >= 0 && lo >= 0;
                    if (ok) bytes[k++] = (uint8_t)(hi * 16 + lo);
                }
                if (ok) rc = qv_expr_literal_string(P->r, bytes, k, &e, P->err);
                qv_free(P->r, raw, len + 1);
                if (!ok)
                    return fail_at(P, P->t.start,
                                   "X'...' needs an even number of hexadecimal digits");
            } else if (is_date) {
                int32_t days;
                struct qv_error why;
                qv_error_clear(&why);
                if (memchr(body, '\'', blen) || qv_date32_parse(body, blen, &days, &why))
                    return fail_at(P, P->t.start, "invalid DATE literal (expected 'YYYY-MM-DD')%s%s",
                                   why.code ? ": " : "", why.message);
                rc = qv_expr_literal_date32(P->r, days, &e, P->err);
            } else {
                qv__xi128 ns;
                struct qv_error why;
                qv_error_clear(&why);
                if (memchr(body, '\'', blen) || qv__lit_parse_timestamp(body, blen, &ns, &why))
                    return fail_at(P, P->t.start,
                                   "invalid TIMESTAMP literal (expected 'YYYY-MM-DD "
                                   "HH:MM:SS[.fffffffff]' with an optional Z or +HH:MM)%s%s",
                                   why.code ? ": " : "", why.message);
                rc = qv_expr_literal_timestamp(P->r, 0, QV_TIME_NS, &e, P->err);
                if (!rc) e->lit.ns = ns;
            }
        } else if (qv__is_reserved(P->s + P->t.start, P->t.end - P->t.start)) {
            return expected(P, what);
        } else {
            if (!allow_column) return expected(P, what);
            return parse_column(P);
        }
        break;
    }
    case TK_NUMBER:
    case TK_MINUS:
    case TK_PLUS: {
        bool neg = false, sign = P->t.type != TK_NUMBER;
        if (sign) {
            neg = P->t.type == TK_MINUS;
            next(P);
            if (P->t.type != TK_NUMBER && !kw(P, "nan") && !kw(P, "inf") && !kw(P, "infinity"))
                return expected(P, "a number after the sign");
        }
        struct qv__lit lit;
        rc = qv__lit_parse_number(P->s + P->t.start, P->t.end - P->t.start, P->r, &lit, P->err);
        if (rc == ENOMEM) P->rc = ENOMEM;
        if (rc) return fail_at(P, P->t.start, "malformed number");
        if (neg) {
            if (lit.kind == QV__LIT_DBL) lit.d = -lit.d;
            else if (lit.ndigits) lit.neg = !lit.neg;
        }
        rc = qv_expr_literal_null(P->r, &e, P->err);
        if (rc) qv__lit_clear(P->r, &lit);
        else e->lit = lit;
        break;
    }
    case TK_STRING: {
        size_t len;
        char *raw = unquote(P, &len);
        if (!raw) return NULL;
        rc = qv_expr_literal_string(P->r, raw, len, &e, P->err);
        qv_free(P->r, raw, len + 1);
        break;
    }
    default: return expected(P, what);
    }
    e = built(P, rc, e, start);
    if (e) next(P);
    return e;
}

static struct qv_expr *parse_or(struct parser *P);

static struct qv_expr *parse_predicate(struct parser *P) {
    struct tok start = P->t;
    struct qv_expr *a = parse_operand(P);
    if (!a) return NULL;
    struct qv_expr *e = NULL;
    int rc;
    if (P->t.type == TK_OP) {
        int op = P->t.op;
        struct tok opos = P->t;
        next(P);
        struct qv_expr *b = parse_operand(P);
        if (!b) {
            qv_expr_destroy(a);
            return NULL;
        }
        rc = qv_expr_compare((enum qv_cmp_op)op, a, b, &e, P->err);
        return built(P, rc, e, opos);
    }
    if (kw(P, "is")) {
        next(P);
        bool neg = false;
        if (kw(P, "not")) {
            neg = true;
            next(P);
        }
        if (!kw(P, "null")) {
            qv_expr_destroy(a);
            return expected(P, neg ? "NULL" : "NULL or NOT NULL");
        }
        next(P);
        rc = qv_expr_is_null(a, neg, &e, P->err);
        return built(P, rc, e, start);
    }
    bool neg = false;
    if (kw(P, "not")) {
        neg = true;
        next(P);
        if (!kw(P, "in") && !kw(P, "between")) {
            qv_expr_destroy(a);
            return expected(P, "IN or BETWEEN after NOT");
        }
    }
    if (kw(P, "in")) {
        next(P);
        if (P->t.type != TK_LP) {
            qv_expr_destroy(a);
            return expected(P, "'(' after IN");
        }
        next(P);
        int32_t n = 0, cap = 8;
        struct qv_expr **vals = qv_alloc(P->r, (size_t)cap * sizeof *vals, P->err);
        if (!vals) {
            qv_expr_destroy(a);
            P->rc = ENOMEM;
            return NULL;
        }
        bool ok = true;
        for (;;) {
            struct qv_expr *v = parse_literal(P, false);
            if (!v) {
                ok = false;
                break;
            }
            if (n == cap) {
                void *p = n < (1 << 26) ? qv_realloc(P->r, vals, (size_t)cap * sizeof *vals,
                                                     (size_t)cap * 2 * sizeof *vals, P->err)
                                        : NULL;
                if (!p) {
                    qv_expr_destroy(v);
                    if (n >= (1 << 26)) fail_at(P, P->t.start, "IN list longer than %d values", 1 << 26);
                    else P->rc = ENOMEM;
                    ok = false;
                    break;
                }
                vals = p;
                cap *= 2;
            }
            vals[n++] = v;
            if (P->t.type == TK_COMMA) {
                next(P);
                continue;
            }
            if (P->t.type == TK_RP) {
                next(P);
                break;
            }
            expected(P, "',' or ')' in the IN list");
            ok = false;
            break;
        }
        if (!ok) {
            for (int32_t i = 0; i < n; i++) qv_expr_destroy(vals[i]);
            qv_free(P->r, vals, (size_t)cap * sizeof *vals);
            qv_expr_destroy(a);
            return NULL;
        }
        rc = qv_expr_in(a, vals, n, neg, &e, P->err);
        qv_free(P->r, vals, (size_t)cap * sizeof *vals);
        return built(P, rc, e, start);
    }
    if (kw(P, "between")) {
        next(P);
        struct qv_expr *lo = parse_operand(P);
        if (!lo) {
            qv_expr_destroy(a);
            return NULL;
        }
        if (!kw(P, "and")) {
            qv_expr_destroy(a);
            qv_expr_destroy(lo);
            return expected(P, "AND in BETWEEN");
        }
        next(P);
        struct qv_expr *hi = parse_operand(P);
        if (!hi) {
            qv_expr_destroy(a);
            qv_expr_destroy(lo);
            return NULL;
        }
        rc = qv_expr_between(a, lo, hi, neg, &e, P->err);
        return built(P, rc, e, start);
    }
    if (kw(P, "starts")) {
        next(P);
        if (!kw(P, "with")) {
            qv_expr_destroy(a);
            return expected(P, "WITH after STARTS");
        }
        next(P);
        struct qv_expr *b = parse_literal(P, false);
        if (!b) {
            qv_expr_destroy(a);
            return NULL;
        }
        rc = qv_expr_starts_with(a, b, &e, P->err);
        return built(P, rc, e, start);
    }
    return a; /* a bare operand: a bool column or TRUE / FALSE / NULL */
}

static struct qv_expr *parse_factor(struct parser *P) {
    struct tok start = P->t;
    if (++P->depth > QV_EXPR_MAX_DEPTH) {
        P->depth--;
        return fail_at(P, start.start, "nested too deeply (more than %d levels)",
                       QV_EXPR_MAX_DEPTH);
    }
    struct qv_expr *e = NULL;
    if (kw(P, "not")) {
        next(P);
        struct qv_expr *k = parse_factor(P);
        if (k) {
            int rc = qv_expr_not(k, &e, P->err);
            e = built(P, rc, e, start);
        }
    } else if (P->t.type == TK_LP) {
        next(P);
        e = parse_or(P);
        if (e && P->t.type != TK_RP) {
            qv_expr_destroy(e);
            e = expected(P, "')'");
        } else if (e) {
            next(P);
        }
    } else {
        e = parse_predicate(P);
    }
    P->depth--;
    return e;
}

static struct qv_expr *parse_and(struct parser *P) {
    struct qv_expr *e = parse_factor(P);
    while (e && kw(P, "and")) {
        struct tok opos = P->t;
        next(P);
        struct qv_expr *b = parse_factor(P);
        if (!b) {
            qv_expr_destroy(e);
            return NULL;
        }
        int32_t pos = e->pos;
        int rc = qv_expr_and(e, b, &e, P->err);
        e = built(P, rc, e, opos);
        if (e && e->kind == QV__E_AND && e->n_kids > 2) e->pos = pos;
    }
    return e;
}

static struct qv_expr *parse_or(struct parser *P) {
    struct qv_expr *e = parse_and(P);
    while (e && kw(P, "or")) {
        struct tok opos = P->t;
        next(P);
        struct qv_expr *b = parse_and(P);
        if (!b) {
            qv_expr_destroy(e);
            return NULL;
        }
        int32_t pos = e->pos;
        int rc = qv_expr_or(e, b, &e, P->err);
        e = built(P, rc, e, opos);
        if (e && e->kind == QV__E_OR && e->n_kids > 2) e->pos = pos;
    }
    return e;
}

int qv_expr_parse_n(const char *text, size_t len, const struct qv_expr_parse_options *opts,
                    struct qv_reservation *r, struct qv_expr **out, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "filter: no output given");
    *out = NULL;
    if (!text && len) return qv_error_set(err, EINVAL, "filter: text is NULL");
    if (!r) return qv_error_set(err, EINVAL, "filter: no reservation given");
    if (len > ((size_t)1 << 30)) return qv_error_set(err, EINVAL, "filter: text longer than 1 GiB");
    struct parser P = {.s = text ? text : "", .n = len, .at_c = 1, .r = r, .err = err};
    if (opts) {
        P.interrupted = opts->interrupted;
        P.interrupted_arg = opts->interrupted_arg;
    }
    next(&P);
    if (P.t.type == TK_EOF) {
        fail_at(&P, 0, "empty filter");
        return EINVAL;
    }
    struct qv_expr *e = parse_or(&P);
    if (e && P.t.type != TK_EOF) {
        if (P.t.type == TK_RP) fail_at(&P, P.t.start, "unbalanced ')'");
        else expected(&P, "AND, OR or the end of the filter");
        qv_expr_destroy(e);
        e = NULL;
    }
    if (!e || P.rc) {
        /* An interruption may leave a partial tree behind. */
        qv_expr_destroy(e);
        return P.rc ? P.rc : qv_error_set(err, EINVAL, "filter: parse failed");
    }
    *out = e;
    return 0;
}

int qv_expr_parse(const char *text, struct qv_reservation *r, struct qv_expr **out,
                  struct qv_error *err) {
    if (!text) {
        if (out) *out = NULL;
        return qv_error_set(err, EINVAL, "filter: text is NULL");
    }
    return qv_expr_parse_n(text, strlen(text), NULL, r, out, err);
}
