/*
 * Quiver scan: the predicate language (filters) and the scan stream.
 */
#ifndef QUIVER_SCAN_H
#define QUIVER_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quiver/arrow.h"
#include "quiver/base.h"
#include "quiver/format.h"
#include "quiver/memory.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Predicates
 * ======================================================================
 *
 * One predicate language for every front end (C, CLI, Python, JNI). A
 * predicate is a tree of `qv_expr` nodes, obtained from text with
 * qv_expr_parse or built with the constructors below; it is bound to a
 * schema (qv_expr_bind) and then evaluated on batches (qv_expr_eval) and used
 * to skip zones by their statistics (qv_expr_prune).
 *
 * Text syntax (keywords are case-insensitive):
 *
 *   expr      := term (OR term)*
 *   term      := factor (AND factor)*
 *   factor    := NOT factor | '(' expr ')' | predicate
 *   predicate := operand cmp operand            cmp: = == != <> < <= > >=
 *              | operand IS [NOT] NULL
 *              | operand [NOT] IN '(' literal (',' literal)* ')'
 *              | operand [NOT] BETWEEN operand AND operand
 *              | operand STARTS WITH literal     a string prefix
 *              | operand                        a bool column, TRUE, FALSE, NULL
 *   operand   := column | literal
 *   column    := name ('.' name)*               nested struct fields: a.b.c
 *                (resolved by the one name rule of arrow.h, "Field paths")
 *   name      := letter (letter | digit | '$')*  |  "quoted ""name"""  |  `quoted`
 *                (letters: A-Z a-z _ and any byte >= 0x80, so UTF-8 names work)
 *   literal   := NULL | TRUE | FALSE | ['-'|'+'] number | NaN | Infinity | Inf
 *              | 'string with '' escaped'   | X'hex bytes'
 *              | DATE 'YYYY-MM-DD'                (years of 1 to 6 digits, signed)
 *              | TIMESTAMP 'YYYY-MM-DD[( |T)HH:MM[:SS[.fffffffff]]][Z|+HH:MM|-HH:MM]'
 *   number    := digits ['.' digits] [(e|E) ['+'|'-'] digits]   (also .5)
 *
 * Precedence: comparisons and the other predicates bind tightest, then NOT,
 * then AND, then OR. Reserved words (AND OR NOT IS NULL IN BETWEEN TRUE FALSE
 * NAN INF INFINITY) name a column only when quoted. DATE, TIMESTAMP, STARTS,
 * WITH and X are keywords only where the grammar expects them.
 *
 * Semantics (SQL three-valued logic; a row is selected only when TRUE):
 *  - A comparison with a NULL operand is NULL; NOT NULL is NULL; FALSE AND
 *    NULL is FALSE; TRUE OR NULL is TRUE. x IN (list) is TRUE on a match,
 *    else NULL if the list holds NULL or x is NULL, else FALSE; NOT IN is
 *    its negation. x BETWEEN a AND b is x >= a AND x <= b.
 *  - Numbers compare exactly by value. Numeric literals are exact decimals:
 *    on an integer or decimal column `price < 0.055` (scale 2) selects
 *    price <= 0.05, `i = 2.5` is FALSE for every non-null i, and literals
 *    beyond a column's range compare as they would mathematically. A
 *    qv_expr_literal_double value is taken as the shortest decimal that
 *    reads back as the same double (0.1, not 0.1000000000000000055...) when
 *    compared with integers or decimals.
 *  - Floats follow IEEE 754 comparisons by default (QV_NAN_IEEE): NaN
 *    compares FALSE to everything with = < <= > >= (itself included) and
 *    TRUE with != ; -0.0 = 0.0. NOT only flips TRUE and FALSE, so NOT (f < 1)
 *    is TRUE for a NaN f. Float columns compare against the literal rounded
 *    to the nearest double (float32 and float16 values are widened to double
 *    first). Pruning uses exactly the same rules.
 *  - Bound with QV_NAN_LARGEST (qv_expr_bind_ex, qv_scan_options.nan_order),
 *    floats follow the total order of Spark SQL instead: -Infinity < ... <
 *    -0.0 = 0.0 < ... < +Infinity < NaN, and NaN = NaN (every NaN payload is
 *    the same NaN). This applies to every comparison of a float column: the
 *    six operators, IN / NOT IN (a listed NaN matches NaN), BETWEEN,
 *    column-to-column comparisons, and a NaN literal against an integer or
 *    decimal column (NaN is above every number). NULL stays NULL. Pruning
 *    follows the same order: a zone that may hold NaN may match `f > 5`
 *    whatever its max, and `f = NaN` skips a zone only when it is known to
 *    hold no NaN.
 *  - Strings and binaries compare bytewise (memcmp order, a proper prefix
 *    first). STARTS WITH is a bytewise prefix test.
 *  - Booleans order FALSE < TRUE. A bare bool column is `col = TRUE`.
 *  - Dates compare as days, timestamps in the column's unit. DATE and
 *    TIMESTAMP literals (and string literals, which are parsed as such when
 *    compared with a date or timestamp column) mix freely with both kinds of
 *    column; a literal without an offset is UTC; comparisons are exact (a
 *    timestamp with a time of day is strictly between two dates).
 *  - IS [NOT] NULL applies to a column of any type (struct, list, map too);
 *    the other predicates need a scalar column: integers, floats, decimals,
 *    bool, date, timestamp, strings and binaries (fixed-size included).
 *    A nested field is NULL where it or any enclosing struct is NULL.
 *  - Column-to-column comparisons are accepted between columns of the same
 *    kind: two integer-like columns (integers, or decimals / timestamps of
 *    the same scale / unit, or dates), two floats, two strings/binaries, or
 *    two bools.
 *
 * Ownership: every node is allocated from the reservation given to the
 * parser or to the leaf constructors; that reservation must outlive the
 * tree, and the tree is used by one thread at a time while it is built or
 * bound. A bound tree is read-only to qv_expr_eval / qv_expr_prune, which
 * any number of threads may call at once (each with its own scratch). The
 * combining constructors take ownership of their operands on success AND on
 * failure; an operand may be NULL (a constructor that failed before), which
 * makes the combining constructor fail with EINVAL after freeing the other
 * operands, so nested calls need one error check at the end.
 */

struct qv_expr;

enum qv_cmp_op {
    QV_CMP_EQ = 0, /* =  (also ==) */
    QV_CMP_NE,     /* != (also <>) */
    QV_CMP_LT,     /* <  */
    QV_CMP_LE,     /* <= */
    QV_CMP_GT,     /* >  */
    QV_CMP_GE      /* >= */
};

/* Deepest nesting accepted from text or constructors (AND/OR chains are
 * flattened and do not count per operand). */
#define QV_EXPR_MAX_DEPTH 200

/* Parses `text` (NUL-terminated). On success *out owns the tree (free with
 * qv_expr_destroy); on failure *out is NULL and err says what was expected
 * where (1-based character position) with a caret under the text:
 *   filter: expected a literal, found ',' at position 17
 *     x > 5 AND y IN (,3)
 *                     ^
 * Long texts are shown as a window around the position (control bytes in
 * it shown as '?'). Parsing takes time linear in the length of the text;
 * nesting deeper than QV_EXPR_MAX_DEPTH is EINVAL ("nested too deeply"),
 * never deep recursion. */
QV_API int qv_expr_parse(const char *text, struct qv_reservation *r, struct qv_expr **out,
                  struct qv_error *err);

/* Options of qv_expr_parse_n; a zeroed struct (or NULL) means none. */
struct qv_expr_parse_options {
    /* Asked every few thousand tokens whether to stop (a front end's Ctrl-C:
     * Python's PyErr_CheckSignals, a JVM's interrupt flag). A nonzero answer
     * stops the parse with ECANCELED ("parsing interrupted at position N");
     * nothing is left allocated. Called on the parsing thread. */
    int (*interrupted)(void *arg);
    void *interrupted_arg;
};

/* qv_expr_parse of `len` bytes at `text` (not NUL-terminated; NULL with
 * len 0 is the empty text), with options (may be NULL). A NUL byte inside
 * a string literal (or X'00') is data; anywhere else it is a syntax error,
 * and inside a quoted column name it is refused (names are C strings).
 * Texts longer than 1 GiB are EINVAL. */
QV_API int qv_expr_parse_n(const char *text, size_t len, const struct qv_expr_parse_options *opts,
                    struct qv_reservation *r, struct qv_expr **out, struct qv_error *err);

/* ---- Leaf constructors: on success *out owns a new node ---- */

/* A column by dotted path, written as in the text syntax (`a.b`,
 * `"weird.name".x`). */
QV_API int qv_expr_column(struct qv_reservation *r, const char *path, struct qv_expr **out,
                   struct qv_error *err);
/* A column by its exact names, no quoting (names[0] top-level, then struct
 * fields). `names` is copied. */
QV_API int qv_expr_column_names(struct qv_reservation *r, const char *const *names, int32_t n,
                         struct qv_expr **out, struct qv_error *err);
QV_API int qv_expr_literal_null(struct qv_reservation *r, struct qv_expr **out, struct qv_error *err);
QV_API int qv_expr_literal_bool(struct qv_reservation *r, bool v, struct qv_expr **out,
                         struct qv_error *err);
QV_API int qv_expr_literal_int64(struct qv_reservation *r, int64_t v, struct qv_expr **out,
                          struct qv_error *err);
QV_API int qv_expr_literal_uint64(struct qv_reservation *r, uint64_t v, struct qv_expr **out,
                           struct qv_error *err);
/* Any double, NaN and infinities included. */
QV_API int qv_expr_literal_double(struct qv_reservation *r, double v, struct qv_expr **out,
                           struct qv_error *err);
/* The exact decimal (hi * 2^64 + lo) * 10^-scale (two's complement 128-bit
 * unscaled value, as in qv_append_decimal128); scale in [-1000, 1000]. */
QV_API int qv_expr_literal_decimal(struct qv_reservation *r, uint64_t lo, int64_t hi, int32_t scale,
                            struct qv_expr **out, struct qv_error *err);
/* A number from text, exactly as the parser reads one ("-0.05", "1.5E+3",
 * "NaN", "-Infinity"); what Java's BigDecimal.toString or Python's
 * str(Decimal) produce. EINVAL for anything else. */
QV_API int qv_expr_literal_number(struct qv_reservation *r, const char *text, struct qv_expr **out,
                           struct qv_error *err);
/* String or binary bytes (copied; need not be NUL-terminated or UTF-8). */
QV_API int qv_expr_literal_string(struct qv_reservation *r, const void *bytes, size_t len,
                           struct qv_expr **out, struct qv_error *err);
QV_API int qv_expr_literal_date32(struct qv_reservation *r, int32_t days, struct qv_expr **out,
                           struct qv_error *err);
/* `value` units since the epoch (UTC). */
QV_API int qv_expr_literal_timestamp(struct qv_reservation *r, int64_t value, enum qv_time_unit unit,
                              struct qv_expr **out, struct qv_error *err);

/* ---- Combining constructors: take ownership of every operand ---- */

/* a op b; operands are columns or literals (either side). */
QV_API int qv_expr_compare(enum qv_cmp_op op, struct qv_expr *a, struct qv_expr *b,
                    struct qv_expr **out, struct qv_error *err);
QV_API int qv_expr_and(struct qv_expr *a, struct qv_expr *b, struct qv_expr **out,
                struct qv_error *err);
QV_API int qv_expr_or(struct qv_expr *a, struct qv_expr *b, struct qv_expr **out,
               struct qv_error *err);
QV_API int qv_expr_not(struct qv_expr *a, struct qv_expr **out, struct qv_error *err);
/* x IS NULL, or x IS NOT NULL with `negate`. */
QV_API int qv_expr_is_null(struct qv_expr *x, bool negate, struct qv_expr **out, struct qv_error *err);
/* x [NOT] IN (values[0..n)): takes ownership of x and of every values[i]
 * (the array itself stays the caller's); values are literals; n >= 1. */
QV_API int qv_expr_in(struct qv_expr *x, struct qv_expr **values, int32_t n, bool negate,
               struct qv_expr **out, struct qv_error *err);
/* x [NOT] BETWEEN lo AND hi (inclusive). */
QV_API int qv_expr_between(struct qv_expr *x, struct qv_expr *lo, struct qv_expr *hi, bool negate,
                    struct qv_expr **out, struct qv_error *err);
/* x STARTS WITH prefix (a string literal). */
QV_API int qv_expr_starts_with(struct qv_expr *x, struct qv_expr *prefix, struct qv_expr **out,
                        struct qv_error *err);

/* Frees a tree (and its binding) through its reservation. NULL-safe. */
QV_API void qv_expr_destroy(struct qv_expr *e);

/* Normalized text of the tree as written (before coercion): keywords upper
 * case, names quoted where needed, numbers in canonical decimal form (a
 * qv_expr_literal_double as its shortest exact decimal), bytes that are not
 * printable UTF-8 as X'..', parentheses where precedence needs them and
 * around the operand of NOT. The text parses back to an equivalent tree
 * that prints the same. snprintf semantics: writes at most `cap` bytes
 * including the NUL and returns the length the whole text needs. */
QV_API size_t qv_expr_to_string(const struct qv_expr *e, char *buf, size_t cap);

/* ---- Binding ---- */

/* Resolves column paths against `schema` (STRUCT root; top-level columns
 * are its children; nested paths go through STRUCT fields only), checks
 * types and coerces literals to the column types. A name matches exactly,
 * or, when unquoted and no exact match exists, case-insensitively. A name
 * that matches more than one field (duplicate names, which Arrow allows, or
 * several case-insensitive matches) is EINVAL naming both fields
 * ("ambiguous column name 'a': fields 0 and 2 ..."), never the first of
 * them. EINVAL names the column, its type and the offending literal or
 * operator (and the position for parsed text). Binding takes time linear in
 * the tree (each distinct column text is resolved once; wide structs are
 * searched through a name index); an OR of equalities (an AND of
 * inequalities) on one column is bound as one IN (NOT IN) set. Binding again (to another
 * schema) replaces the previous binding; on failure the tree is unbound.
 * `schema` must outlive the binding (fields are referenced, not copied).
 * Binding memory comes from the tree's reservation. */
QV_API int qv_expr_bind(struct qv_expr *e, const struct qv_schema *schema, struct qv_error *err);

/* How float comparisons order NaN (see Semantics above). */
enum qv_nan_order {
    QV_NAN_IEEE = 0,   /* IEEE 754: NaN is unordered and equals nothing */
    QV_NAN_LARGEST = 1 /* Spark SQL: NaN above +Infinity, NaN = NaN */
};

/* qv_expr_bind with the float order `nan_order` (enum qv_nan_order; EINVAL
 * for another value). qv_expr_bind is qv_expr_bind_ex with QV_NAN_IEEE. The
 * order is part of the binding: evaluation and pruning both follow it. */
QV_API int qv_expr_bind_ex(struct qv_expr *e, const struct qv_schema *schema, int nan_order,
                           struct qv_error *err);
QV_API bool qv_expr_is_bound(const struct qv_expr *e);

/* Distinct top-level columns a bound tree reads, ascending. Writes at most
 * `cap` of them to `cols` (which may be NULL with cap 0) and returns how many
 * there are; -1 when `e` is not bound. */
QV_API int32_t qv_expr_columns(const struct qv_expr *e, int32_t *cols, int32_t cap);

/* References: the distinct column paths of a bound tree, indexed 0..n-1.
 * Pruning takes statistics per reference. */
struct qv_expr_ref {
    int32_t column;               /* top-level column index */
    int32_t depth;                /* struct steps below the column (0: the column) */
    const int32_t *path;          /* depth child indices, column downwards */
    const struct qv_field *field; /* the referenced field (in the bound schema) */
    const char *name;             /* dotted display name */
};
/* Number of references of a bound tree; -1 when not bound. */
QV_API int32_t qv_expr_num_refs(const struct qv_expr *e);
/* Describes reference i; EINVAL when unbound or out of range. The pointers
 * stay valid while the binding lives. */
QV_API int qv_expr_ref(const struct qv_expr *e, int32_t i, struct qv_expr_ref *out);

/* ---- Evaluation ---- */

/* Evaluates a bound tree on `batch`, a STRUCT array whose children are some
 * of the schema's top-level columns (row i of the batch is slot
 * batch->offset + i; the batch's own validity is ignored: record batch rows
 * are never null). batch_child_of_column[c] is the child holding top-level
 * column c (-1 when absent); NULL means child c is column c. Every column the
 * tree reads must be present; each is checked against its field (cheap tier
 * of qv_arrow_array_validate) before use, so a malformed batch is EINVAL,
 * never a bad read. On success `selected` (qv_bytes_for_bits(batch->length)
 * bytes, written whole; bits past the end are 0) has bit i set exactly when
 * the predicate is TRUE on row i, and *n_selected (optional) counts them.
 * Temporary bitmaps come from `scratch` (a reservation of the calling
 * thread) and are freed before returning. */
QV_API int qv_expr_eval(const struct qv_expr *e, const struct ArrowArray *batch,
                 const int32_t *batch_child_of_column, uint8_t *selected, int64_t *n_selected,
                 struct qv_reservation *scratch, struct qv_error *err);

/* ---- Pruning ---- */

/* What is known about one reference in a zone (a row group). A zeroed
 * struct means "nothing known", which never prunes. */
struct qv_zone_stats {
    /* Bounds on the number of the zone's rows where the reference is NULL.
     * For a top-level column both are the chunk's null_count. For a nested
     * field (null where it or an enclosing struct is null) min is the
     * largest and max the sum (capped at the rows) of the null counts of
     * the field and its enclosing structs. */
    int has_null_count;
    int64_t null_count_min, null_count_max;
    /* Floats: an upper bound on the NaN values. With nan_count_exact set
     * (and has_null_count), nan_count is the exact number of NaN values and
     * null_count_min the exact number of nulls, so a zone whose rows are all
     * NULL or NaN is known to hold no other value (qv_expr_prune_row_group
     * sets it for top-level columns, whose file statistics are exact). */
    int has_nan_count;
    int64_t nan_count;
    int nan_count_exact;
    /* Bounds on the non-null (and non-NaN) values, encoded as in the file
     * format's statistics (docs/format.md section 4): 8-byte little-endian
     * int64 (uint64 for unsigned types) for integers, dates, timestamps and
     * decimals of precision <= 18 (unscaled); 8-byte double for floats; 1
     * byte for bool; 16-byte two's complement for wider decimals; the bytes
     * of strings and binaries, where a truncated min is a prefix of the true
     * min and a truncated max is a prefix of the true max (the true max may
     * be that prefix followed by anything). Bounds of an unexpected length
     * are ignored. Pointers are only read during the call. */
    int has_min_max, min_truncated, max_truncated;
    const uint8_t *min, *max;
    uint32_t min_len, max_len;
};

/* Returns 0 when no row of a zone of `rows` rows can make the predicate
 * TRUE (skip it), 1 when some row may. `per_ref` has qv_expr_num_refs(e)
 * entries (may be NULL: nothing known). Computes, per node, the set of truth
 * values {TRUE, FALSE, NULL} the zone's rows may produce, and skips only
 * when TRUE is impossible at the root, so missing or truncated statistics
 * never prune wrongly. An unbound tree returns 1. */
QV_API int qv_expr_prune(const struct qv_expr *e, const struct qv_zone_stats *per_ref, int64_t rows);

/* Convenience for the scan: fills the statistics of every reference from
 * row group `rg` of `reader` (whose schema must be the bound one, or one with
 * the same shape at the referenced paths) and prunes. *may_match receives
 * qv_expr_prune's answer. Statistics for more than 32 references are staged
 * in `scratch` (may be NULL otherwise). EINVAL when the tree is unbound or a
 * reference does not exist in the reader's schema with the same type;
 * errors of qv_reader_chunk_info are passed on. */
QV_API int qv_expr_prune_row_group(const struct qv_expr *e, const struct qv_reader *reader, int64_t rg,
                            int *may_match, struct qv_reservation *scratch,
                            struct qv_error *err);

/* ======================================================================
 * (end of Predicates)
 * ====================================================================== */

/* ======================================================================
 * Scans
 * ======================================================================
 *
 * A scan reads a projection of a file, filtered, over a row range or a set
 * of rows, as an ArrowArrayStream of STRUCT batches.
 *
 * Pipeline per batch: decode the filter's columns, evaluate the predicate
 * (SQL three-valued logic: only TRUE rows pass), then decode the projected
 * columns for the surviving rows only. Row groups whose statistics prove
 * the predicate false are never read.
 *
 * Threads and memory. Decode runs on `threads` workers that take tasks of
 * consecutive batches: per batch one filter task, then one task per
 * projected column, then its assembly. A worker takes the oldest task it
 * can run, so (with prefetch >= 2) the slow column of one batch overlaps
 * with the other columns of the next instead of the batch waiting for its
 * slowest column. A consumer whose next batch is not ready (get_next,
 * qv_scan_wait) runs tasks too instead of sleeping, so it never waits on a
 * batch nobody has started decoding; with a source of the caller's
 * (qv_reader_open_source with its own read_at) it takes only tasks that
 * read nothing from it, so a blocked read never keeps it from answering
 * qv_scan_cancel or a wait's timeout. A
 * column's tasks run one at a time, in batch order, on its one reader.
 * Batches are handed out in file order. At most `prefetch` batches are
 * started and not yet taken by the consumer (completed or being built), so
 * at most `prefetch` completed batches wait; of those, at most 2 are being
 * built at once (with two or more workers and prefetch >= 2; otherwise the
 * workers share one batch, its slowest columns first). Peak memory is
 * therefore about (prefetch + 2) batches (counting the batch the consumer
 * holds and the one it releases) plus one row group's compressed bytes of
 * each projected column and of each filter column per
 * batch being built, whatever the number of workers or cores.
 * One exception, a narrow scan: workers (qv_scan_stats.threads >= 1), no
 * filter, and fewer projected columns than workers + 1 (than workers, with
 * a source of the caller's). There a projected column may have a second
 * reader, so that its tasks of two batches run at once, and 2
 * batches are built at once with any number of workers and any prefetch:
 * at most max(prefetch, 2) batches are started and not yet taken, so at
 * prefetch 1 two completed batches may wait (max_queued counts those
 * within `prefetch` of the consumer), and peak memory is about
 * (max(prefetch, 2) + 2) batches plus two row groups' compressed bytes of
 * each projected column (docs/scan.md, docs/memory.md). Every byte is
 * charged to reservations in the pool of the reservation given to
 * qv_scan_open: that one for the scan's control data, one per column for
 * decoding state, one per filter context, one per batch being built for its
 * selection, and one per output column per batch, which travels with the
 * batch and is freed when the batch is released. A batch's reservations
 * return their slack when the batch is complete, so a consumer holding many
 * batches is charged their bytes (docs/memory.md states the bound).
 *
 * Small reads. A scan whose planned work is one batch, or at most 4096 rows
 * (after pruning, take lists and, without a filter, max_rows), runs on the
 * consumer's thread whatever `threads` says: starting and joining workers
 * costs more than such a read (qv_scan_stats.threads is then 0).
 *
 * Errors. A failure on a worker (corrupt data, checksum mismatch, ENOMEM)
 * in a task of batch N is returned by the get_next that would have handed
 * out batch N, after every batch before it (the first error in batch order
 * wins), as its errno, with get_last_error naming the file, column, row
 * group and offset; later calls return it again.
 *
 * Lifetime. Batches own their memory and stay valid after the stream is
 * released. Releasing the stream at any point cancels the workers and joins
 * them before returning. The reader and the reservation must outlive the
 * stream. */

#define QV_SCAN_SYNC (-1) /* threads: decode on the consumer's thread */

/* Validation of what a scan hands out (qv_scan_options.validate).
 * Checksums prove the bytes are the ones written, not that they decode to
 * valid Arrow: a crafted (or buggy writer's) file can hold invalid UTF-8 or
 * decimals beyond their precision under correct checksums. With a tier set,
 * every projected column of every batch is checked against its field with
 * qv_arrow_array_validate at that tier (QV_SCAN_VALIDATE_CHEAP:
 * QV_VALIDATE_CHEAP; QV_SCAN_VALIDATE_FULL: QV_VALIDATE_FULL) by the thread
 * that decoded it, right after decoding (so the workers share the cost, and
 * the column is still in cache), before the batch is queued. A failure is
 * the scan's error: get_next returns EIO with a message naming the file,
 * the column, the row group and the problem ("... is corrupt: it decoded to
 * an invalid array: ..."). Front ends that hand batches to consumers that
 * trust them (pyarrow, Polars, DuckDB, `qv`) use FULL. */
enum qv_scan_validate {
    QV_SCAN_VALIDATE_NONE = 0,
    QV_SCAN_VALIDATE_CHEAP = 1,
    QV_SCAN_VALIDATE_FULL = 2
};

/* A projected field: a top-level column and the child indices below it
 * (struct fields; the element of a list, large_list or fixed_size_list is
 * child 0; a map's key is child 0 and its value child 1 of its entries).
 * depth 0 selects the whole column. */
struct qv_column_path {
    int32_t column;
    int32_t depth;
    const int32_t *path; /* depth child indices, column downwards */
};

/* Casts applied to output columns, for consumers that accept fewer Arrow
 * types (Spark's Arrow reader accepts exactly what QV_CAST_SPARK yields).
 * A value that does not fit its target type fails the scan with EOVERFLOW
 * naming the column, row group and row; it is never wrapped or clipped. */
enum qv_cast {
    QV_CAST_NONE = 0,
    QV_CAST_TIMESTAMP_US = 1u << 0,  /* timestamp(s|ms|ns) -> timestamp(us), time zone kept */
    QV_CAST_UNSIGNED_WIDEN = 1u << 1, /* uint8/16/32 -> int16/32/64, uint64 -> decimal128(20, 0) */
    QV_CAST_FLOAT16_TO_32 = 1u << 2,  /* float16 -> float32 */
    QV_CAST_LARGE_LIST = 1u << 3,     /* large_list -> list (32-bit offsets) */
    QV_CAST_SPARK = 0xF
};

/* The most completed batches a scan lets wait (qv_scan_options.prefetch).
 * Prefetch bounds memory: each waiting batch holds a whole batch, and the
 * queue's slots are allocated up front, so a larger depth is refused by name
 * rather than failing as an allocation of the queue. */
#define QV_SCAN_MAX_PREFETCH 1024

struct qv_scan_options {
    const int32_t *columns;   /* projected top-level columns; NULL = all */
    int32_t n_columns;
    /* Nested projection, instead of `columns` (not both): output columns in
     * the order of first appearance of their top-level column; a struct
     * keeps only the fields asked for (in schema order), and only those are
     * read. Paths into the same column merge; a path below a selected
     * ancestor adds nothing. A map keeps both key and value (a side no path
     * reaches is kept whole). A bad column or child index is EINVAL naming
     * the path. NULL = `columns` decides. */
    const struct qv_column_path *paths;
    int32_t n_paths;
    unsigned cast;            /* enum qv_cast flags; 0 = types as stored */
    const char *filter;       /* textual predicate, or NULL */
    struct qv_expr *filter_expr; /* structured predicate (moves into the scan, also on
                                    failure), or NULL; not both */
    int64_t row_begin, row_end; /* global row range; row_end 0 = to the end */
    const int64_t *take;      /* strictly increasing global rows (copied), or NULL */
    int64_t n_take;
    int64_t row_group_begin, row_group_end; /* a split; end 0 = to the last */
    int64_t batch_rows;       /* rows per batch before filtering; 0 = 65536 */
    int64_t max_rows;         /* stop after this many output rows; 0 = no limit */
    int threads;              /* 0 = cores, at most 4; QV_SCAN_SYNC = no threads; small
                                 reads (one batch, <= 4096 rows planned) use none */
    int prefetch;             /* completed batches waiting at most; 0 = 1; at most
                                 QV_SCAN_MAX_PREFETCH (EINVAL above) */
    int validate;             /* enum qv_scan_validate: check each output column before
                                 it is queued; 0 = none */
    int nan_order;            /* enum qv_nan_order the filter is bound with; 0 = IEEE */
};

/* Opens a scan. On success `out` owns it (release it when done). On failure
 * out->release is NULL. */
QV_API int qv_scan_open(const struct qv_reader *reader, const struct qv_scan_options *opts,
                 struct qv_reservation *r, struct ArrowArrayStream *out, struct qv_error *err);

/* Cancels a scan stream opened by qv_scan_open, from any thread, also while
 * another thread is blocked in its get_next: sets a flag and wakes the
 * consumer and the workers. The get_next in flight (if any) and every later
 * one return ECANCELED ("scan cancelled") promptly: a waiting consumer at
 * once, a synchronous one after the column it is decoding. Batches already
 * handed out stay valid. The stream must still be released, by the thread
 * that owns it, once no get_next is running (cancel does not free anything,
 * so it may never race with release). Idempotent. EINVAL when `stream` is
 * not an open scan stream. */
QV_API int qv_scan_cancel(struct ArrowArrayStream *stream);

/* Waits at most `timeout_ms` for the next get_next of a scan stream not to
 * block: returns 0 when a batch is queued, the stream ended or failed, or it
 * was cancelled, and at once for a synchronous scan (which decodes inside
 * get_next); ETIMEDOUT otherwise (possibly early). Called by the consuming
 * thread between its get_next calls, so that a front end can check for
 * interrupts (Ctrl-C) while a slow scan produces nothing. Any timeout is
 * accepted: one past about 146 years waits that long (INT64_MAX does not
 * overflow), zero or negative only checks. EINVAL when `stream` is not an
 * open scan stream. */
QV_API int qv_scan_wait(struct ArrowArrayStream *stream, int64_t timeout_ms);

/* The error record of the last failed call on a scan stream (get_schema or
 * get_next): code, kind (base.h: CORRUPT for bytes that failed a check, IO
 * for a failed read, ...) and the message get_last_error returns. A cleared
 * record when nothing failed. Called by the thread that owns the stream,
 * after the call that failed. EINVAL when `stream` is not an open scan
 * stream (streams of the file layer are scan streams). */
QV_API int qv_scan_last_error(const struct ArrowArrayStream *stream, struct qv_error *out);

struct qv_scan_stats {
    int64_t row_groups_total, row_groups_pruned;
    int64_t rows_decoded;   /* rows of filter columns decoded */
    int64_t rows_output;
    int64_t batches;
    int32_t max_queued;     /* most completed batches ever waiting */
    int32_t threads;
    /* Rows the filter evaluated to FALSE or NULL. With a filter and no
     * max_rows, rows_filtered + rows_output == rows_decoded once the scan
     * has ended (max_rows cuts output rows after the filter). */
    int64_t rows_filtered;
    /* Encoded bytes of the column segments this scan loaded: each column
     * reader counts the segments of the fields it reads, once per row group
     * it enters (a column read both by the filter and by the projection
     * counts twice: the filter reads through readers of its own, and each
     * row group's filter columns are read by one of them). Row groups pruned
     * by statistics, and projected columns of row groups whose rows the
     * filter all rejected, are never loaded and count nothing. */
    int64_t bytes_read;
};
/* Statistics of a scan stream opened by qv_scan_open (EINVAL otherwise). */
QV_API int qv_scan_get_stats(const struct ArrowArrayStream *stream, struct qv_scan_stats *out);

/* Byte-balanced splits: cuts the row groups into ranges of about
 * `target_bytes` of encoded data each (at least one row group per range).
 * Writes range starts to bounds[0..*n) and bounds[*n] = number of row
 * groups; ENOSPC when `cap` (entries of bounds) is too small. */
QV_API int qv_scan_plan_splits(const struct qv_reader *reader, uint64_t target_bytes, int64_t *bounds,
                        int64_t cap, int64_t *n, struct qv_error *err);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_SCAN_H */
