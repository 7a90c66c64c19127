/*
 * Text of Arrow values, shared by export, scan and inspect.
 *
 * Top level (CSV cells, table cells): numbers as written by a person,
 * decimals with exactly their scale, dates YYYY-MM-DD, timestamps ISO 8601,
 * strings as they are, binary as lowercase hex, booleans true/false.
 * Nested values (struct, list, map) render as JSON-like text: structs and
 * maps as {"key": value}, lists as [v, ...], strings JSON-escaped and
 * quoted, nulls as null.
 */
#ifndef QV_CLI_VALUE_FORMAT_H
#define QV_CLI_VALUE_FORMAT_H

#include <stdint.h>

#include "quiver/arrow.h"
#include "term/strbuf.h"

/* Appends the text of slot `i` of `a` (an array of type `f`, its offset
 * honoured). Returns 1 when the slot is null (nothing appended), else 0.
 * The array must be valid (validate untrusted arrays first). */
int cli_format_value(struct cli_buf *b, const struct qv_field *f, const struct ArrowArray *a,
                     int64_t i);
/* Whether slot i is null. */
int cli_value_is_null(const struct ArrowArray *a, int64_t i);

/* Shortest text that reads back to the same double / float ("0.1", not
 * "0.10000000000000001"); NaN, inf, -inf for the non-finite. */
int cli_fmt_double(double v, char *buf, size_t cap);
int cli_fmt_float(float v, char *buf, size_t cap);
/* IEEE binary16 bits to float. */
float cli_half_to_float(uint16_t h);
/* Unscaled decimal (16 bytes, little-endian two's complement) with `scale`. */
void cli_fmt_decimal(struct cli_buf *b, const uint8_t *le16, int32_t scale);
/* Same from an int64 unscaled value. */
void cli_fmt_decimal64(struct cli_buf *b, int64_t unscaled, int32_t scale);
/* Lowercase hex of n bytes. */
void cli_fmt_hex(struct cli_buf *b, const uint8_t *p, size_t n);

#endif
