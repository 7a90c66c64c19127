/* Formatting of sizes, counts and durations for people. */
#include "term/units.h"

#include <stdio.h>

const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

const char *cli_fmt_count(int64_t n, char *buf, size_t cap) {
    char digits[32];
    int neg = n < 0;
    unsigned long long u = neg ? 0ull - (unsigned long long)n : (unsigned long long)n;
    int len = snprintf(digits, sizeof digits, "%llu", u);
    char out[48];
    int o = 0;
    if (neg) out[o++] = '-';
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = 0;
    snprintf(buf, cap, "%s", out);
    return buf;
}

const char *cli_fmt_duration(uint64_t ns, char *buf, size_t cap) {
    double v = (double)ns;
    if (v < 1e3)
        snprintf(buf, cap, "%.0f ns", v);
    else if (v < 1e6)
        snprintf(buf, cap, "%.1f us", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, cap, "%.1f ms", v / 1e6);
    else
        snprintf(buf, cap, "%.2f s", v / 1e9);
    return buf;
}

double cli_mb_per_s(uint64_t bytes, uint64_t ns) {
    return ns ? (double)bytes / 1e6 / ((double)ns / 1e9) : 0.0;
}

double cli_ratio(uint64_t raw, uint64_t encoded) {
    return encoded ? (double)raw / (double)encoded : 0.0;
}
