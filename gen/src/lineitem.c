/* The TPC-H lineitem generator (see lineitem.h for the contract). */
#include "qvgen/lineitem.h"

#include <math.h>
#include <string.h>

#include "text.h"
#include "rng.h"

/* Fixed seed: the data set is a function of the scale factor alone. */
#define SEED UINT64_C(0x51A7E0C0FFEE1996)

/* Random streams of one order: per-order values, then per line and column. */
enum { S_ORDERDATE, S_LINES, S_LINE_BASE = 8, S_PER_LINE = 16 };
enum {
    L_PART, L_SUPP, L_QTY, L_DISC, L_TAX, L_SHIP, L_COMMIT, L_RECEIPT, L_RFLAG, L_INSTRUCT,
    L_MODE, L_COMMENT_LEN, L_COMMENT
};

#define DEC(name_) {.name = name_, .type = QV_TYPE_DECIMAL128, .precision = 15, .scale = 2}
static const struct qv_field columns[QVGEN_LINEITEM_NUM_COLUMNS] = {
    {.name = "l_orderkey", .type = QV_TYPE_INT64},
    {.name = "l_partkey", .type = QV_TYPE_INT64},
    {.name = "l_suppkey", .type = QV_TYPE_INT64},
    {.name = "l_linenumber", .type = QV_TYPE_INT32},
    DEC("l_quantity"),
    DEC("l_extendedprice"),
    DEC("l_discount"),
    DEC("l_tax"),
    {.name = "l_returnflag", .type = QV_TYPE_UTF8},
    {.name = "l_linestatus", .type = QV_TYPE_UTF8},
    {.name = "l_shipdate", .type = QV_TYPE_DATE32},
    {.name = "l_commitdate", .type = QV_TYPE_DATE32},
    {.name = "l_receiptdate", .type = QV_TYPE_DATE32},
    {.name = "l_shipinstruct", .type = QV_TYPE_UTF8},
    {.name = "l_shipmode", .type = QV_TYPE_UTF8},
    {.name = "l_comment", .type = QV_TYPE_UTF8},
};
static const struct qv_field root = {
    .name = "lineitem",
    .type = QV_TYPE_STRUCT,
    .n_children = QVGEN_LINEITEM_NUM_COLUMNS,
    .children = columns,
};

static const char *const instructs[] = {"DELIVER IN PERSON", "COLLECT COD", "NONE",
                                        "TAKE BACK RETURN"};
static const char *const modes[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};

const struct qv_field *qvgen_lineitem_schema_template(void) { return &root; }

int qvgen_lineitem_schema(struct qv_reservation *r, struct qv_schema **out, struct qv_error *err) {
    return qv_schema_create(&root, r, out, err);
}

static int sf_ok(double sf) { return sf > 0 && sf <= QVGEN_LINEITEM_MAX_SF && isfinite(sf); }

static int64_t scaled(double base, double sf) {
    int64_t n = (int64_t)llround(base * sf);
    return n < 1 ? 1 : n;
}

int64_t qvgen_lineitem_num_orders(double sf) { return sf_ok(sf) ? scaled(1500000.0, sf) : 0; }

int qvgen_lineitem_order_lines(int64_t order) {
    return (int)rng_range(rng_at(rng_key(SEED, (uint64_t)order), S_LINES), 1, 7);
}

int64_t qvgen_lineitem_count_rows(int64_t first_order, int64_t n_orders) {
    int64_t rows = 0;
    for (int64_t o = first_order; o < first_order + n_orders; o++) rows += qvgen_lineitem_order_lines(o);
    return rows;
}

int qvgen_lineitem_cursor_init(struct qvgen_lineitem_cursor *c, double sf, int64_t first_order,
                            int64_t n_orders, struct qv_error *err) {
    memset(c, 0, sizeof *c);
    if (!sf_ok(sf))
        return qv_error_set(err, EINVAL, "lineitem: scale factor %g is outside (0, %g]", sf,
                            QVGEN_LINEITEM_MAX_SF);
    int64_t total = qvgen_lineitem_num_orders(sf);
    if (first_order < 0 || n_orders < 0 || first_order > total)
        return qv_error_set(err, EINVAL,
                            "lineitem: orders %lld + %lld outside the %lld orders of SF %g",
                            (long long)first_order, (long long)n_orders, (long long)total, sf);
    c->sf = sf;
    c->order = first_order;
    c->end_order = n_orders > total - first_order ? total : first_order + n_orders;
    c->parts = scaled(200000.0, sf);
    c->suppliers = scaled(10000.0, sf);
    return 0;
}

/* Checks that the builder's columns have the lineitem types, so the typed
 * appends below cannot poison it with a kind mismatch. */
static int check_builder(struct qv_builder *b, struct qv_appender **ap, struct qv_error *err) {
    if (qv_builder_num_columns(b) != QVGEN_LINEITEM_NUM_COLUMNS)
        return qv_error_set(err, EINVAL, "lineitem: the builder has %lld columns, lineitem has %d",
                            (long long)qv_builder_num_columns(b), QVGEN_LINEITEM_NUM_COLUMNS);
    for (int k = 0; k < QVGEN_LINEITEM_NUM_COLUMNS; k++) {
        ap[k] = qv_builder_column(b, k);
        const struct qv_field *f = qv_appender_field(ap[k]);
        if (f->type != columns[k].type ||
            (f->type == QV_TYPE_DECIMAL128 && (f->precision < 15 || f->scale != 2)))
            return qv_error_set(err, EINVAL,
                                "lineitem: builder column %d ('%s') is %s, lineitem's '%s' is %s",
                                k, f->name ? f->name : "", qv_type_name(f->type), columns[k].name,
                                qv_type_name(columns[k].type));
    }
    return 0;
}

static int64_t date_of(int y, unsigned m, unsigned d) { return qv_date32_from_civil(y, m, d); }

int qvgen_lineitem_append(struct qvgen_lineitem_cursor *c, struct qv_builder *b, int64_t max_rows,
                       int64_t *appended, struct qv_error *err) {
    struct qv_appender *ap[QVGEN_LINEITEM_NUM_COLUMNS];
    if (appended) *appended = 0;
    int rc = check_builder(b, ap, err);
    if (rc) return rc;
    /* TPC-H dates: orders from STARTDATE to ENDDATE - 151 days; CURRENTDATE
     * splits returned/shipped from open lines. */
    const int64_t start = date_of(1992, 1, 1);
    const int64_t last_order_date = date_of(1998, 12, 31) - 151;
    const int64_t current = date_of(1995, 6, 17);
    const int64_t S = c->suppliers;
    int64_t done = 0;
    char comment[64];
    while (done < max_rows && c->order < c->end_order) {
        const int64_t o = c->order;
        const uint64_t key = rng_key(SEED, (uint64_t)o);
        const int lines = (int)rng_range(rng_at(key, S_LINES), 1, 7);
        const int64_t orderdate = rng_range(rng_at(key, S_ORDERDATE), start, last_order_date);
        const int64_t orderkey = (o / 8) * 32 + o % 8 + 1;
        for (; c->line < lines && done < max_rows; c->line++, done++) {
            const int j = c->line;
            const uint64_t base = S_LINE_BASE + (uint64_t)j * S_PER_LINE;
#define R(stream) rng_at(key, base + (stream))
            int64_t pk = rng_range(R(L_PART), 1, c->parts);
            int64_t supp_j = rng_range(R(L_SUPP), 0, 3);
            int64_t sk = (pk + supp_j * (S / 4 + (pk - 1) / S)) % S + 1;
            int64_t qty = rng_range(R(L_QTY), 1, 50);
            int64_t retail = 90000 + ((pk / 10) % 20001) + 100 * (pk % 1000); /* cents */
            int64_t disc = rng_range(R(L_DISC), 0, 10);
            int64_t tax = rng_range(R(L_TAX), 0, 8);
            int64_t ship = orderdate + rng_range(R(L_SHIP), 1, 121);
            int64_t commit = orderdate + rng_range(R(L_COMMIT), 30, 90);
            int64_t receipt = ship + rng_range(R(L_RECEIPT), 1, 30);
            const char *rflag = receipt <= current ? ((R(L_RFLAG) >> 63) ? "R" : "A") : "N";
            const char *status = ship > current ? "O" : "F";
            const char *instruct = instructs[rng_range(R(L_INSTRUCT), 0, 3)];
            const char *mode = modes[rng_range(R(L_MODE), 0, 6)];
            size_t clen = (size_t)rng_range(R(L_COMMENT_LEN), 10, 43);
            qvgen__text_generate(R(L_COMMENT), clen, comment, sizeof comment);
#undef R
            /* One append per column: the builder's inline fast paths. Errors
             * poison the builder, so they are checked once per row. */
            int bad = qv_append_int64(ap[QVGEN_L_ORDERKEY], orderkey);
            bad |= qv_append_int64(ap[QVGEN_L_PARTKEY], pk);
            bad |= qv_append_int64(ap[QVGEN_L_SUPPKEY], sk);
            bad |= qv_append_int32(ap[QVGEN_L_LINENUMBER], j + 1);
            bad |= qv_append_decimal64(ap[QVGEN_L_QUANTITY], qty * 100);
            bad |= qv_append_decimal64(ap[QVGEN_L_EXTENDEDPRICE], qty * retail);
            bad |= qv_append_decimal64(ap[QVGEN_L_DISCOUNT], disc);
            bad |= qv_append_decimal64(ap[QVGEN_L_TAX], tax);
            bad |= qv_append_string(ap[QVGEN_L_RETURNFLAG], rflag, 1);
            bad |= qv_append_string(ap[QVGEN_L_LINESTATUS], status, 1);
            bad |= qv_append_date32(ap[QVGEN_L_SHIPDATE], (int32_t)ship);
            bad |= qv_append_date32(ap[QVGEN_L_COMMITDATE], (int32_t)commit);
            bad |= qv_append_date32(ap[QVGEN_L_RECEIPTDATE], (int32_t)receipt);
            bad |= qv_append_string(ap[QVGEN_L_SHIPINSTRUCT], instruct, strlen(instruct));
            bad |= qv_append_string(ap[QVGEN_L_SHIPMODE], mode, strlen(mode));
            bad |= qv_append_string(ap[QVGEN_L_COMMENT], comment, clen);
            if (bad) {
                const struct qv_error *be = qv_builder_error(b);
                if (appended) *appended = done;
                if (err) *err = *be;
                return be->code ? be->code : EINVAL;
            }
        }
        if (c->line >= lines) {
            c->order++;
            c->line = 0;
        }
    }
    if (appended) *appended = done;
    return 0;
}

int qvgen_lineitem_batch(double sf, int64_t first_order, int64_t n_orders, struct qv_builder *b,
                      int64_t *rows, struct qv_error *err) {
    struct qvgen_lineitem_cursor c;
    if (rows) *rows = 0;
    int rc = qvgen_lineitem_cursor_init(&c, sf, first_order, n_orders, err);
    if (rc) return rc;
    return qvgen_lineitem_append(&c, b, INT64_MAX, rows, err);
}
