/*
 * qvgen, Quiver's data generators (gen/): a small library of its own, over
 * the core library's public API, used by `qv gen` and `qv demo`, the
 * benchmarks in bench/ and the tests. Its symbols are prefixed qvgen_
 * (qv_ is the core library's).
 *
 * The TPC-H lineitem table: the spec's columns, Arrow types and value
 * distributions, appended row by row through a qv_builder.
 *
 * Determinism: every value is a pure function of (order index, line,
 * column) through a counter-based RNG, so the same scale factor always
 * gives the same rows, and any range of orders can be generated on its
 * own (in parallel, or resumed part-way through an order) with identical
 * results.
 *
 * Scale: 1,500,000 x SF orders (order index i has the sparse key
 * (i/8)*32 + i%8 + 1) with 1..7 lineitems each (~6,001,215 rows at SF 1),
 * 200,000 x SF parts and 10,000 x SF suppliers.
 */
#ifndef QVGEN_LINEITEM_H
#define QVGEN_LINEITEM_H

#include <stdint.h>

#include "quiver/arrow.h"

/* Column order of the lineitem schema. */
enum qvgen_lineitem_column {
    QVGEN_L_ORDERKEY,      /* int64 */
    QVGEN_L_PARTKEY,       /* int64 */
    QVGEN_L_SUPPKEY,       /* int64 */
    QVGEN_L_LINENUMBER,    /* int32 */
    QVGEN_L_QUANTITY,      /* decimal128(15, 2) */
    QVGEN_L_EXTENDEDPRICE, /* decimal128(15, 2) */
    QVGEN_L_DISCOUNT,      /* decimal128(15, 2) */
    QVGEN_L_TAX,           /* decimal128(15, 2) */
    QVGEN_L_RETURNFLAG,    /* utf8 */
    QVGEN_L_LINESTATUS,    /* utf8 */
    QVGEN_L_SHIPDATE,      /* date32 */
    QVGEN_L_COMMITDATE,    /* date32 */
    QVGEN_L_RECEIPTDATE,   /* date32 */
    QVGEN_L_SHIPINSTRUCT,  /* utf8 */
    QVGEN_L_SHIPMODE,      /* utf8 */
    QVGEN_L_COMMENT,       /* utf8 */
    QVGEN_LINEITEM_NUM_COLUMNS
};

/* Scale factors accepted: (0, QVGEN_LINEITEM_MAX_SF]. */
#define QVGEN_LINEITEM_MAX_SF 100000.0

/* The lineitem schema as a template (a STRUCT root, every column not null). */
const struct qv_field *qvgen_lineitem_schema_template(void);
/* An owned copy of it, charged to `r` (qv_schema_destroy). */
int qvgen_lineitem_schema(struct qv_reservation *r, struct qv_schema **out, struct qv_error *err);

/* Number of orders at `sf` (round(1,500,000 x sf), at least 1), or 0 when sf
 * is out of range. */
int64_t qvgen_lineitem_num_orders(double sf);
/* Lineitems of order index `order` (1..7); the same at every scale. */
int qvgen_lineitem_order_lines(int64_t order);
/* Rows in orders [first_order, first_order + n_orders): O(n_orders), no text. */
int64_t qvgen_lineitem_count_rows(int64_t first_order, int64_t n_orders);

/* A position in the stream of lineitem rows of one scale factor, so rows
 * can be produced in chunks of any size, an order split across chunks. */
struct qvgen_lineitem_cursor {
    double sf;
    int64_t order;     /* next order index */
    int64_t end_order; /* one past the last order to generate */
    int32_t line;      /* next line (0-based) within `order` */
    /* scale-derived constants, set by init */
    int64_t parts, suppliers;
};

/* Positions `c` at the first line of order `first_order`, ending before
 * `first_order + n_orders` (clamped to the scale's orders). EINVAL for a bad
 * scale factor or range. */
int qvgen_lineitem_cursor_init(struct qvgen_lineitem_cursor *c, double sf, int64_t first_order,
                            int64_t n_orders, struct qv_error *err);
/* Whether every row of the cursor's range has been produced. */
static inline int qvgen_lineitem_cursor_done(const struct qvgen_lineitem_cursor *c) {
    return c->order >= c->end_order;
}

/* Appends up to `max_rows` rows at the cursor to `b` (whose schema must be
 * the lineitem schema: EINVAL otherwise) and advances the cursor. Sets
 * *appended (may be NULL) to the rows appended, fewer than max_rows only
 * at the end of the range. On an append failure (the builder poisoned, e.g.
 * ENOMEM) returns its code with the builder's message; rows of the failed
 * call may be partly appended. */
int qvgen_lineitem_append(struct qvgen_lineitem_cursor *c, struct qv_builder *b, int64_t max_rows,
                       int64_t *appended, struct qv_error *err);

/* Convenience: every lineitem of orders [first_order, first_order +
 * n_orders) at scale `sf`, appended to `b`. *rows (may be NULL) receives
 * the number of rows appended. */
int qvgen_lineitem_batch(double sf, int64_t first_order, int64_t n_orders, struct qv_builder *b,
                      int64_t *rows, struct qv_error *err);

#endif
