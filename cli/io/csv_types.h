/*
 * The types CSV import knows: naming them in --schema, inferring them from
 * a sample of values, and parsing a field's text into a builder appender.
 *
 * Nulls: an empty unquoted field is null for every type. A quoted empty
 * field ("") is the empty string for text columns and null otherwise.
 * Numbers, booleans and dates may have blanks around them (trimmed); text
 * is taken as it is.
 */
#ifndef QV_CLI_CSV_TYPES_H
#define QV_CLI_CSV_TYPES_H

#include <stddef.h>

#include "io/csv_reader.h"
#include "quiver/arrow.h"

/* Longest argument of a type in text, the time zone included (IANA names
 * and offsets are far shorter; the format itself has no limit). */
#define CLI_TYPE_ARG_MAX 256

/* Storage for a type parsed from text (the timezone string lives here). */
struct cli_type {
    struct qv_field field; /* type and parameters; name/children unused */
    char timezone[CLI_TYPE_ARG_MAX];
};

/* Parses a type name: bool, int8..int64, uint8..uint64, float32, float64
 * (float, double), decimal(P,S) / decimal128(P,S), date / date32,
 * timestamp[ UNIT[, TZ]] (UNIT s, ms, us, ns; default us), utf8 (string),
 * large_utf8, binary, large_binary, fixed_size_binary[N]. Binary types are
 * written as hex in CSV. Returns 0, or -1 with a message in msg. */
int cli_type_parse(const char *text, size_t n, struct cli_type *out, char *msg, size_t cap);

/* One column's inference state over a sample of values. */
struct cli_infer {
    unsigned possible;   /* CLI_INFER_* still consistent with every value */
    int64_t values;      /* non-null values seen */
    int frac_digits;     /* widest timestamp fraction */
    int64_t zoned, unzoned;
};
void cli_infer_init(struct cli_infer *s);
void cli_infer_add(struct cli_infer *s, const struct cli_csv_field *v);
/* The inferred type: bool, int64 (integers beyond it: uint64 when none is
 * negative, decimal128(38, 0) up to 38 digits, else utf8), float64, date32,
 * timestamp (us, or ns
 * when a fraction needs it; UTC when every value has a zone), else utf8. */
void cli_infer_result(const struct cli_infer *s, struct cli_type *out);

/* Parses one field and appends it (or a null) to `a`, of type `f`.
 * Returns 0; or -1 with msg describing the bad value (the builder is not
 * touched then); or a positive errno when the append itself failed (the
 * builder's error says why). */
int cli_append_text(struct qv_appender *a, const struct qv_field *f,
                    const struct cli_csv_field *v, char *msg, size_t cap);

/* Whether n bytes are valid UTF-8. */
int cli_utf8_valid(const char *p, size_t n);

#endif
