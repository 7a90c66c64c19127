/*
 * The `qv` command line: what every subcommand shares.
 *
 * Each subcommand is one file (cmd_<name>.c) with one entry point. They all
 * charge their memory to one qv_pool, created from the global options, so
 * `--memory-limit` bounds a whole command and an exhausted budget is
 * reported with the pool's own message (who asked, how much, top consumers).
 *
 * Exit codes: 0 success, 1 runtime error (bad input data, I/O, memory),
 * 2 usage error (bad options or arguments). Errors go to stderr as
 * "qv <command>: <message>".
 */
#ifndef QV_CLI_H
#define QV_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "quiver/arrow.h"
#include "quiver/base.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"

enum { CLI_EXIT_OK = 0, CLI_EXIT_ERROR = 1, CLI_EXIT_USAGE = 2 };

/* State shared by a subcommand's code: its name for messages and the pool. */
struct cli_ctx {
    const char *command;   /* "gen", "import", ... */
    uint64_t memory_limit; /* bytes; 0 = unlimited */
    struct qv_pool *pool;  /* created by cli_ctx_open */
};

/* Creates the command's pool. Returns an exit code (0 on success). */
int cli_ctx_open(struct cli_ctx *ctx);
/* Destroys the pool (every reservation must be freed). NULL-safe pool. */
void cli_ctx_close(struct cli_ctx *ctx);
/* A named reservation in the command's pool; exit code, message printed. */
int cli_reservation(struct cli_ctx *ctx, const char *name, struct qv_reservation **out);

/* "qv <command>: <message>\n" on stderr. */
void cli_errorf(const struct cli_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints a library error as "qv <command>: <kind>: <message>" (the kind's
 * stable name, base.h) and returns the runtime exit code (1). */
int cli_fail(const struct cli_ctx *ctx, const struct qv_error *err);
/* A usage error: message plus a pointer to --help; returns 2. */
int cli_usage_error(const struct cli_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Opens a .qvr file through the file layer, charged to the command's pool
 * (`mmap`: map it, format.h). Returns an exit code, the error printed. */
struct qv_file;
int cli_open_file(struct cli_ctx *ctx, const char *path, int mmap, struct qv_file **out);

/* A usage error (2) when `out` names the same file as `in` (after
 * following links): writing it would replace the input that is being read.
 * 0 when they differ or `out` does not exist yet. */
int cli_refuse_same_file(const struct cli_ctx *ctx, const char *in, const char *out);

/* Ctrl-C (SIGINT) or SIGTERM while a command writes a file: the first one
 * only sets a flag, which the command's loop checks between batches
 * (cli_interrupted), so the writer removes its temporary file; main then
 * re-raises the signal (the shell sees qv killed by it). A second signal
 * kills at once (the temporary is then removed by the next write to that
 * path). A signal the parent ignores (nohup, background jobs) stays
 * ignored. */
void cli_trap_interrupts(void);
/* The signal that asked the command to stop, or 0. */
int cli_interrupted(void);

/* Subcommands. argv[0] is the subcommand's name. Each returns an exit code. */
int cli_cmd_gen(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_import(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_export(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_inspect(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_scan(struct cli_ctx *ctx, int argc, char **argv);
int cli_cmd_demo(struct cli_ctx *ctx, int argc, char **argv);

#endif
