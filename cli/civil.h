/*
 * Calendar arithmetic for date32 and timestamp values: days since the Unix
 * epoch <-> proleptic Gregorian dates (Howard Hinnant's algorithms, exact
 * for every int32 day), and the text forms the CLI reads and writes:
 * dates as YYYY-MM-DD, timestamps as ISO 8601.
 */
#ifndef QV_CLI_CIVIL_H
#define QV_CLI_CIVIL_H

#include <stddef.h>
#include <stdint.h>

#include "quiver/arrow.h"

int64_t cli_days_from_civil(int64_t y, unsigned m, unsigned d);
void cli_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

/* "1995-03-15"; years outside 0..9999 get a sign and more digits. Returns
 * the length written (buffers of 24 bytes always suffice). */
int cli_fmt_date(int64_t days, char *buf, size_t cap);
/* ISO 8601: "1995-03-15T12:30:00", a fraction when the sub-second part is
 * nonzero (as many digits as the unit has), and "Z" when the column has a
 * time zone (Arrow stores such values as UTC instants). 48 bytes suffice. */
int cli_fmt_timestamp(int64_t value, enum qv_time_unit unit, int utc, char *buf, size_t cap);

/* Parses exactly YYYY-MM-DD (a real calendar day). 0 on success, -1 if not. */
int cli_parse_date(const char *s, size_t n, int32_t *days);

/* What a parsed timestamp looked like, for type inference. */
struct cli_ts_parse {
    int frac_digits; /* 0..9 */
    int has_zone;    /* ended in Z or an offset */
};
/* Parses "YYYY-MM-DD[T| ]HH:MM[:SS[.fffffffff]][Z|+HH[:MM]|-HH[:MM]]" into
 * `unit` since the epoch (offsets are applied, so the value is UTC). A bare
 * date is not a timestamp here. Returns 0, -1 when malformed, -2 when the
 * fraction is finer than the unit, -3 when the value overflows. */
int cli_parse_timestamp(const char *s, size_t n, enum qv_time_unit unit, int64_t *out,
                        struct cli_ts_parse *info);

#endif
