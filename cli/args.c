/* Option parsing driven by each command's option table. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The global options every command accepts, and where their values go
 * while a command's arguments are parsed. */
struct global_values {
    const char *memory_limit;
};
static const struct cli_option global_options[] = {
    CLI_VALUE(struct global_values, memory_limit, "memory-limit", "BYTES",
              "bound all memory the command charges to its pool (e.g. 512M); default unlimited"),
};

void cli_args_help(const struct cli_command_spec *spec, FILE *f) {
    fprintf(f, "usage: qv %s %s\n\n%s\n", spec->name, spec->usage, spec->summary);
    fprintf(f, "\noptions:\n");
    for (int pass = 0; pass < 2; pass++) {
        const struct cli_option *opts = pass ? global_options : spec->options;
        int n = pass ? (int)(sizeof global_options / sizeof global_options[0]) : spec->n_options;
        if (pass) fprintf(f, "\nglobal options:\n");
        for (int i = 0; i < n; i++) {
            char left[64];
            if (opts[i].kind == CLI_OPT_VALUE)
                snprintf(left, sizeof left, "--%s %s", opts[i].name, opts[i].metavar);
            else
                snprintf(left, sizeof left, "--%s", opts[i].name);
            fprintf(f, "  %-26s %s\n", left, opts[i].help);
        }
        if (!pass) fprintf(f, "  %-26s %s\n", "-h, --help", "show this help and exit");
    }
    if (spec->details) fprintf(f, "\n%s\n", spec->details);
}

/* The option called name[0..len), and in *global whether it is a global
 * one (its value goes to the global values, not the command's). */
static const struct cli_option *find_option(const struct cli_command_spec *spec, const char *name,
                                            size_t len, int *global) {
    for (int pass = 0; pass < 2; pass++) {
        *global = pass;
        const struct cli_option *opts = pass ? global_options : spec->options;
        int n = pass ? (int)(sizeof global_options / sizeof global_options[0]) : spec->n_options;
        for (int i = 0; i < n; i++)
            if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
                return &opts[i];
    }
    return NULL;
}

int cli_args_parse(const struct cli_command_spec *spec, struct cli_ctx *ctx, int argc,
                   char **argv, void *values, const char **positional, int *n_positional) {
    int np = 0, only_positional = 0, n_seen = 0;
    /* Value options given so far: giving one twice is refused, because
     * "the last one wins" would silently drop a filter or a column list. */
    const struct cli_option *seen[64];
    struct global_values globals = {NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || strcmp(a, "-") == 0) {
            if (np >= spec->max_positional || np >= CLI_MAX_POSITIONAL)
                return cli_usage_error(ctx, "unexpected argument '%s'", a);
            positional[np++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_positional = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_args_help(spec, stdout);
            return CLI_EXIT_OK;
        }
        if (a[1] != '-')
            return cli_usage_error(ctx, "unknown option '%s'", a);
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int global;
        const struct cli_option *o = find_option(spec, name, len, &global);
        if (!o) return cli_usage_error(ctx, "unknown option '--%.*s'", (int)len, name);
        char *dst = (char *)(global ? (void *)&globals : values) + o->offset;
        if (o->kind == CLI_OPT_FLAG) {
            if (eq) return cli_usage_error(ctx, "option '--%s' takes no value", o->name);
            *(int *)(void *)dst = 1;
        } else {
            for (int k = 0; k < n_seen; k++)
                if (seen[k] == o)
                    return cli_usage_error(ctx, "option '--%s' is given more than once", o->name);
            if (n_seen < (int)(sizeof seen / sizeof seen[0])) seen[n_seen++] = o;
            if (!eq && i + 1 >= argc)
                return cli_usage_error(ctx, "option '--%s' needs a value (%s)", o->name,
                                       o->metavar);
            *(const char **)(void *)dst = eq ? eq + 1 : argv[++i];
        }
    }
    if (np < spec->min_positional)
        return cli_usage_error(ctx, "missing argument: usage is 'qv %s %s'", spec->name,
                               spec->usage);
    if (globals.memory_limit) {
        int rc = cli_parse_bytes(ctx, "--memory-limit", globals.memory_limit, &ctx->memory_limit);
        if (rc) return rc;
    }
    *n_positional = np;
    return -1;
}

/* strtoll and strtod skip leading blanks and read hex, "inf" and "nan";
 * option values are plain decimal text, so the first byte must be a digit
 * (or a sign, where negative values can be meant). */
static int plain_number_start(const char *text) {
    const char *p = text + (text[0] == '-' || text[0] == '+');
    return *p >= '0' && *p <= '9';
}

static int has_hex_prefix(const char *text) {
    const char *p = text + (text[0] == '-' || text[0] == '+');
    return p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
}

int cli_parse_int64(const struct cli_ctx *ctx, const char *option, const char *text, int64_t min,
                    int64_t max, int64_t *out) {
    char *end;
    errno = 0;
    long long v = plain_number_start(text) ? strtoll(text, &end, 10) : 0;
    if (!plain_number_start(text) || *end)
        return cli_usage_error(ctx, "%s: '%s' is not an integer (give %lld..%lld)", option, text,
                               (long long)min, (long long)max);
    if (errno == ERANGE)
        return cli_usage_error(ctx, "%s: '%s' is outside %lld..%lld", option, text,
                               (long long)min, (long long)max);
    if (v < 0 && min >= 0)
        return cli_usage_error(ctx, "%s: %lld is negative (give %lld..%lld)", option, v,
                               (long long)min, (long long)max);
    if (v < min || v > max)
        return cli_usage_error(ctx, "%s: %lld is outside %lld..%lld", option, v, (long long)min,
                               (long long)max);
    *out = v;
    return 0;
}

int cli_parse_double(const struct cli_ctx *ctx, const char *option, const char *text, double min,
                     double max, double *out) {
    char *end;
    errno = 0;
    /* ".5" reads as a number too. */
    int plain = (plain_number_start(text) || (text[0] == '.' && text[1] >= '0' && text[1] <= '9')) &&
                !has_hex_prefix(text);
    double v = plain ? strtod(text, &end) : NAN;
    if (!plain || errno || *end || !isfinite(v))
        return cli_usage_error(ctx, "%s: '%s' is not a number", option, text);
    if (v < min || v > max)
        return cli_usage_error(ctx, "%s: %g is outside %g..%g", option, v, min, max);
    *out = v;
    return 0;
}

int cli_parse_bytes(const struct cli_ctx *ctx, const char *option, const char *text,
                    uint64_t *out) {
    char *end;
    errno = 0;
    /* Digits with an optional fraction ("1.5G"): no sign, hex or exponent. */
    size_t digits = strspn(text, "0123456789");
    if (text[digits] == '.') digits += 1 + strspn(text + digits + 1, "0123456789");
    int plain = text[0] >= '0' && text[0] <= '9' && !has_hex_prefix(text);
    double v = plain ? strtod(text, &end) : -1;
    if (!plain || errno || end != text + digits || !(v >= 0))
        return cli_usage_error(ctx, "%s: '%s' is not a byte count (try 512M)", option, text);
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mult > 1) {
        if (*end == 'i') end++;
        if (*end == 'B' || *end == 'b') end++;
    } else if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end) return cli_usage_error(ctx, "%s: '%s' is not a byte count (try 512M)", option, text);
    double bytes = v * mult;
    if (bytes >= 18446744073709551615.0)
        return cli_usage_error(ctx, "%s: '%s' is too large", option, text);
    *out = (uint64_t)bytes;
    return 0;
}

int cli_split_list(const char *text, char *storage, size_t storage_cap, const char **items,
                   int max) {
    size_t n = strlen(text);
    if (n + 1 > storage_cap) return -1;
    memcpy(storage, text, n + 1);
    int count = 0;
    char *p = storage;
    for (;;) {
        if (count >= max) return -1;
        items[count++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return count;
}
