/*
 * Declarative option parsing for the subcommands. A command describes its
 * options once (name, value or flag, help text, and where the value goes);
 * the same table drives the parser and the --help text, so the help can
 * never drift from what is accepted. Values land in a struct of the
 * command's own, on the caller's stack: nothing is kept between calls, so
 * a command can run twice in one process (the tests do). The global
 * options (--memory-limit) are accepted by every command too, so they can
 * go before or after the command name.
 */
#ifndef QV_CLI_ARGS_H
#define QV_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

enum cli_opt_kind { CLI_OPT_FLAG, CLI_OPT_VALUE };

struct cli_option {
    const char *name;    /* long name without the dashes */
    enum cli_opt_kind kind;
    const char *metavar; /* VALUE options: shown in help ("N", "FILE") */
    const char *help;
    size_t offset;       /* in the command's values struct: a `const char *` receiving
                            the argument (VALUE, given at most once) or an `int` set to 1
                            (FLAG) */
};

/* Table entries for a member of the command's values struct `type`. The
 * member's type is checked at compile time. */
#define CLI_VALUE(type, member, name, metavar, help)                                       \
    {name, CLI_OPT_VALUE, metavar, help,                                                 \
     offsetof(type, member) + 0 * sizeof((const char **){&((type *)0)->member})}
#define CLI_FLAG(type, member, name, help)                                                 \
    {name, CLI_OPT_FLAG, NULL, help, offsetof(type, member) + 0 * sizeof((int *){&((type *)0)->member})}

struct cli_command_spec {
    const char *name;     /* "gen" */
    const char *usage;    /* after "qv gen ": "lineitem OUT.qvr [options]" */
    const char *summary;  /* one line */
    const char *details;  /* text after the options, or NULL */
    const struct cli_option *options;
    int n_options;
    int min_positional, max_positional;
};

#define CLI_MAX_POSITIONAL 8

/* Parses argv[1..argc) against `spec`, storing option values into
 * `values` (the command's struct the table's offsets point into; members of
 * options not given are left as they were). Positional arguments ("-"
 * counts as one; everything after "--" too) go to positional[]. Returns -1
 * when the command should run, otherwise the exit code to return: 0 after
 * printing the help (--help, -h), 2 after a usage error. Global options
 * update ctx. */
int cli_args_parse(const struct cli_command_spec *spec, struct cli_ctx *ctx, int argc,
                   char **argv, void *values, const char **positional, int *n_positional);

/* Prints the command's help to `f`. */
void cli_args_help(const struct cli_command_spec *spec, FILE *f);

/* Value parsers for option arguments. Each prints a usage error naming the
 * option and returns 2 on bad input, 0 on success. */
int cli_parse_int64(const struct cli_ctx *ctx, const char *option, const char *text, int64_t min,
                    int64_t max, int64_t *out);
int cli_parse_double(const struct cli_ctx *ctx, const char *option, const char *text, double min,
                     double max, double *out);
/* Byte counts with an optional suffix: K, M, G, T (powers of 1024; KiB,
 * MiB, ... and KB, MB, ... accepted as the same). */
int cli_parse_bytes(const struct cli_ctx *ctx, const char *option, const char *text,
                    uint64_t *out);

/* Splits a comma-separated list in place (the text is copied into `storage`
 * first); returns the count, or -1 when there are more than `max` items. */
int cli_split_list(const char *text, char *storage, size_t storage_cap, const char **items,
                   int max);

#endif
