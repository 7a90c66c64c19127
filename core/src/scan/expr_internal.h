/* Private pieces of the predicate language: the syntax tree (what was
 * written), literals as exact values, the bound plan (what is evaluated and
 * pruned) and the helpers the parser, binder, evaluator and pruner share.
 *
 * Two trees, on purpose. The syntax tree keeps the predicate as written so it
 * prints back faithfully and can be bound again to another schema. Binding
 * builds a separate plan tree in which every leaf has already been coerced
 * to its column: comparisons with constants chosen in the column's own type,
 * comparisons that cannot hold folded into constants, BETWEEN and NOT IN
 * rewritten into AND / NOT. Evaluation and pruning only walk the plan. */
#ifndef QV_SCAN_EXPR_INTERNAL_H
#define QV_SCAN_EXPR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quiver/scan.h"

__extension__ typedef __int128 qv__xi128;
__extension__ typedef unsigned __int128 qv__xu128;

#define QV__X_I128_MAX ((qv__xi128)(((qv__xu128)1 << 127) - 1))
#define QV__X_I128_MIN (-QV__X_I128_MAX - 1)

/* ---- Literals ---- */

enum qv__lit_kind {
    QV__LIT_NULL = 0,
    QV__LIT_BOOL,
    QV__LIT_NUM,  /* exact decimal: (-1)^neg * digits * 10^exp */
    QV__LIT_DBL,  /* a double given through the C API, or NaN / Infinity */
    QV__LIT_STR,
    QV__LIT_DATE, /* days since the epoch */
    QV__LIT_TS    /* nanoseconds since the epoch, UTC */
};

struct qv__lit {
    int kind;
    bool b;
    /* NUM: digits without leading or trailing zeros ("" is zero, then
     * exp == 0 and neg == false), so equal values have equal forms. */
    bool neg;
    int32_t ndigits;
    int32_t exp;
    char *digits; /* ndigits + 1 bytes, NUL-terminated */
    double d;
    uint8_t *bytes; /* STR: len bytes (+ a NUL, not counted) */
    size_t len;
    int32_t days;
    qv__xi128 ns;
};

/* ---- Syntax tree ---- */

enum qv__ekind {
    QV__E_COLUMN = 0,
    QV__E_LITERAL,
    QV__E_CMP,
    QV__E_AND,
    QV__E_OR,
    QV__E_NOT,
    QV__E_IS_NULL,
    QV__E_IN,      /* kids[0] subject, kids[1..] values */
    QV__E_BETWEEN, /* kids: subject, lo, hi */
    QV__E_STARTS   /* kids: subject, prefix */
};

struct qv__xbinding;

struct qv_expr {
    struct qv_reservation *r;
    int kind;
    int op;        /* enum qv_cmp_op for CMP */
    bool negate;   /* IS NOT NULL, NOT IN, NOT BETWEEN */
    int32_t pos;   /* 1-based character position in parsed text; 0 when built */
    int32_t depth; /* 1 for a leaf */
    int32_t n_kids, cap_kids;
    struct qv_expr **kids;
    /* COLUMN: names (each NUL-terminated) and whether each was quoted
     * (quoted names match exactly only). One block of names_size bytes. */
    int32_t n_names;
    char **names;
    bool *quoted;
    size_t names_size;
    struct qv__lit lit;
    struct qv__xbinding *binding; /* root of a bound tree */
};

/* Allocates a node of `kind` from r (zeroed). NULL with ENOMEM in err. */
struct qv_expr *qv__expr_node(struct qv_reservation *r, int kind, struct qv_error *err);
/* A column node from names[i] (lens[i] bytes each, copied); quoted may be
 * NULL (all exact). */
int qv__expr_make_column(struct qv_reservation *r, const char *const *names, const size_t *lens,
                         const bool *quoted, int32_t n, struct qv_expr **out,
                         struct qv_error *err);
/* Reads one name of a column path at s[*i] (plain, "quoted" or `quoted`)
 * into buf (at least n bytes); EINVAL when there is none. */
int qv__read_name(const char *s, size_t n, size_t *i, char *buf, size_t *len, bool *quoted);
/* Frees a literal's owned storage (the node itself stays). */
void qv__lit_clear(struct qv_reservation *r, struct qv__lit *lit);
/* Parses a number (the text syntax's number, optionally signed, or NaN /
 * Inf / Infinity) from s[0..n) into `lit`; returns 0 or EINVAL (nothing
 * allocated then). Digits come from r. */
int qv__lit_parse_number(const char *s, size_t n, struct qv_reservation *r, struct qv__lit *lit,
                         struct qv_error *err);
/* Makes an exact NUM literal from an unsigned magnitude, a sign and a power
 * of ten. */
int qv__lit_from_u128(qv__xu128 mag, bool neg, int32_t exp, struct qv_reservation *r,
                      struct qv__lit *lit, struct qv_error *err);
/* Parses TIMESTAMP text (qv_timestamp_parse_parts, arrow.h) into exact
 * nanoseconds since the epoch, UTC. 0, or EINVAL / EOVERFLOW with the
 * parser's message. */
int qv__lit_parse_timestamp(const char *s, size_t n, qv__xi128 *ns, struct qv_error *err);

/* Exact floor of a NUM literal times 10^scale, saturated to the i128
 * range; *exact says whether the value was an integer. */
void qv__lit_num_floor(const struct qv__lit *lit, int32_t scale, qv__xi128 *floor_out,
                       bool *exact);
/* The shortest decimal that reads back as d (finite), as a NUM literal
 * whose digits live in `digits` (at least 24 bytes; nothing allocated). */
void qv__dbl_shortest(double d, char *digits, struct qv__lit *out);
/* The literal as the nearest double (NUM through strtod, DBL as is). */
double qv__lit_num_double(const struct qv__lit *lit);

/* Appends the text form of a tree / a literal / a name to a growable
 * snprintf-like buffer. */
struct qv__sbuf {
    char *buf;
    size_t cap;
    size_t len; /* length the full text needs so far */
};
void qv__sb_putc(struct qv__sbuf *b, char c);
void qv__sb_puts(struct qv__sbuf *b, const char *s, size_t n);
void qv__sb_printf(struct qv__sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void qv__lit_print(struct qv__sbuf *b, const struct qv__lit *lit);
void qv__name_print(struct qv__sbuf *b, const char *name, size_t n);
void qv__expr_print(struct qv__sbuf *b, const struct qv_expr *e);
/* True for the reserved words of the text syntax (case-insensitive). */
bool qv__is_reserved(const char *s, size_t n);

/* ---- Bound plan ---- */

/* Truth-value sets, used by pruning, and constant truth values. */
#define QV__TV_T 1u
#define QV__TV_F 2u
#define QV__TV_N 4u

/* What a reference holds, for kernels, coercion and statistics. */
enum qv__vtype {
    QV__VT_BOOL = 0,
    QV__VT_I8, QV__VT_I16, QV__VT_I32, QV__VT_I64,
    QV__VT_U8, QV__VT_U16, QV__VT_U32, QV__VT_U64,
    QV__VT_F16, QV__VT_F32, QV__VT_F64,
    QV__VT_D64,   /* decimal128 of precision <= 18: the low 8 bytes suffice */
    QV__VT_D128,
    QV__VT_BIN32, /* utf8, binary */
    QV__VT_BIN64, /* large_utf8, large_binary */
    QV__VT_FIXBIN,
    QV__VT_NULL,  /* the null type: every value is NULL */
    QV__VT_OTHER, /* struct, list, map: IS [NOT] NULL only */
    QV__VT_COUNT_
};

/* How literals become values of a column. */
enum qv__litmode {
    QV__LM_NUM = 0,  /* integers and decimals: exact number at `scale` */
    QV__LM_TIME,     /* dates and timestamps: nanoseconds / ns_per_unit */
    QV__LM_BOOL,
    QV__LM_FLOAT,
    QV__LM_BYTES,
    QV__LM_NONE
};

struct qv__xref {
    int32_t column;
    int32_t depth;
    int32_t *path;                 /* depth entries */
    const struct qv_field **fields;/* depth + 1: the column ... the leaf */
    const struct qv_field *field;  /* the leaf */
    char *name;
    int vt;                        /* enum qv__vtype */
    int mode;                      /* enum qv__litmode */
    int32_t scale;                 /* LM_NUM */
    qv__xi128 ns_per_unit;         /* LM_TIME */
    qv__xi128 dmin, dmax;          /* int-like value domain */
    /* A float compared in the total order of QV_NAN_LARGEST: kernels,
     * sets and pruning work on qv__fkey keys (int64) instead of doubles. */
    bool ftotal;
};

enum qv__pkind {
    QV__P_CONST = 0, /* truth for every row */
    QV__P_NNCONST,   /* truth where the reference is not null, else NULL */
    QV__P_CMP,       /* reference op constant */
    QV__P_CMPCOL,    /* reference op reference */
    QV__P_IN,
    QV__P_STARTS,
    QV__P_ISNULL,    /* negate: IS NOT NULL */
    QV__P_AND,
    QV__P_OR,
    QV__P_NOT
};

struct qv__xplan;
/* Sets the first n bits of `out` (whole words; bits past n are don't-care)
 * to the comparison on slots [slot, slot + n) of array `a`. */
typedef void (*qv__xkernel)(const struct qv__xplan *p, const struct ArrowArray *a, int64_t slot,
                            int64_t n, uint64_t *out);

struct qv__bytes {
    const uint8_t *p;
    size_t n;
};

struct qv__xplan {
    int kind;
    unsigned truth;  /* CONST, NNCONST: QV__TV_* */
    int op;          /* CMP, CMPCOL */
    bool negate;     /* ISNULL */
    int32_t ref, ref2;
    qv__xkernel fn;
    int64_t ki;      /* the constant in the column's type */
    uint64_t ku;
    double kf;
    qv__xi128 kq;    /* int-like constants (also for pruning) */
    bool t0, t1;     /* bool columns: the result for false / true */
    struct qv__bytes kb; /* bytes constant, STARTS WITH prefix */
    int32_t width;   /* fixed-size binary columns: bytes per value */
    /* IN: sorted distinct values of the column's type */
    void *set;
    int64_t n_set;
    bool set_null;   /* the list holds NULL */
    int32_t n_kids;
    struct qv__xplan **kids;
};

/* Binding memory: a list of chunks freed together. */
struct qv__xchunk {
    struct qv__xchunk *next;
    size_t size, used;
};

struct qv__xbinding {
    struct qv_reservation *r;
    struct qv__xchunk *chunks;
    const struct qv_schema *schema;
    struct qv__xref *refs;
    int32_t n_refs, cap_refs;
    int32_t *columns; /* distinct top-level columns, ascending */
    int32_t n_columns;
    struct qv__xplan *plan;
    int32_t levels;   /* plan depth */
    int nan_order;    /* enum qv_nan_order */
};

void *qv__xalloc(struct qv__xbinding *b, size_t size, struct qv_error *err);
void qv__binding_free(struct qv__xbinding *b);

/* The key of a double in the total order of QV_NAN_LARGEST: -Infinity <
 * ... < -0.0 = 0.0 < ... < +Infinity < NaN, every NaN one value. The bits of
 * a double order non-negative values as integers; flipping all but the sign
 * bit of a negative one reverses its magnitude's order, so signed integer
 * comparison of the keys is the total order. */
static inline int64_t qv__fkey(double d) {
    if (d != d) return INT64_MAX;
    if (d == 0) return 0; /* -0.0 too */
    int64_t bits;
    memcpy(&bits, &d, 8);
    return bits >= 0 ? bits : bits ^ INT64_MAX;
}

/* Kernels, chosen once per plan node at bind time (NULL: unsupported). */
qv__xkernel qv__kernel_cmp(int vt, int op);
qv__xkernel qv__kernel_in(int vt);
/* Float kernels comparing qv__fkey keys (p->ki, an int64 set). */
qv__xkernel qv__kernel_cmp_total(int vt, int op);
qv__xkernel qv__kernel_in_total(int vt);
qv__xkernel qv__kernel_starts(int vt);
/* Comparison of the values of two references, one block at a time. */
bool qv__cmpcol_supported(const struct qv__xref *a, const struct qv__xref *b);

/* Sorts and deduplicates an IN set of `vt` values in place; returns the new
 * count. */
int64_t qv__set_sort(int vt, void *set, int64_t n);

/* Bytewise order (memcmp, then shorter first). */
static inline int qv__bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    return c ? c : (an > bn) - (an < bn);
}

/* IEEE binary16 to double. */
double qv__half_to_double(uint16_t h);

/* Evaluation of a column-to-column comparison: both sides widened block by
 * block (64 values) into a common type, then compared. */
void qv__cmpcol_eval(const struct qv__xplan *p, const struct qv__xref *ra,
                     const struct ArrowArray *a, int64_t sa, const struct qv__xref *rb,
                     const struct ArrowArray *b, int64_t sb, int64_t n, uint64_t *out);

/* Hooks of the conjunct-by-conjunct filter (filter.c). */

/* Evaluates plan node p of binding b (a node of b's plan) over the rows of
 * `batch` (columns found through map as in qv_expr_eval) and writes the rows
 * where it is TRUE to T (whole words, bits past the row count zero). The
 * columns must already be validated (cheap tier): nothing is checked here. */
int qv__expr_eval_node(const struct qv__xbinding *b, const struct qv__xplan *p,
                       const struct ArrowArray *batch, const int32_t *map, uint64_t *T,
                       struct qv_reservation *scratch, struct qv_error *err);
/* The statistics of every reference of b in row group rg (st has b->n_refs
 * entries), as qv_expr_prune_row_group gathers them. */
int qv__prune_zone_stats(const struct qv__xbinding *b, const struct qv_reader *reader, int64_t rg,
                         struct qv_zone_stats *st, struct qv_error *err);
/* The truth values (QV__TV_*) plan node p may take on a zone of `rows` rows
 * with statistics per_ref (a superset of what occurs); 0 for no rows. */
unsigned qv__prune_truth(const struct qv__xbinding *b, const struct qv__xplan *p,
                         const struct qv_zone_stats *per_ref, int64_t rows);

#endif
