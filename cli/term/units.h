/* Human-readable quantities for reports: sizes, rates, durations, counts. */
#ifndef QV_CLI_UNITS_H
#define QV_CLI_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.5 KiB", "22.1 MiB", ... */
const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap);
/* Thousands separators: "6,001,215". */
const char *cli_fmt_count(int64_t n, char *buf, size_t cap);
/* "850 us", "12.3 ms", "2.31 s". */
const char *cli_fmt_duration(uint64_t ns, char *buf, size_t cap);
/* Decimal megabytes per second (1e6 bytes), the unit storage speeds use. */
double cli_mb_per_s(uint64_t bytes, uint64_t ns);
/* raw / encoded, 0 when encoded is 0. */
double cli_ratio(uint64_t raw, uint64_t encoded);

#endif
