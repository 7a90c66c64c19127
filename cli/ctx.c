/* The command context: the pool every subcommand charges its memory to,
 * and the uniform error reporting. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "quiver/file.h"

int cli_ctx_open(struct cli_ctx *ctx) {
    struct qv_error err;
    qv_error_clear(&err);
    char name[64];
    snprintf(name, sizeof name, "qv %s", ctx->command);
    struct qv_pool_options po = {.name = name, .limit = ctx->memory_limit};
    if (qv_pool_create(&po, &ctx->pool, &err)) return cli_fail(ctx, &err);
    return 0;
}

void cli_ctx_close(struct cli_ctx *ctx) {
    qv_pool_destroy(ctx->pool);
    ctx->pool = NULL;
}

int cli_reservation(struct cli_ctx *ctx, const char *name, struct qv_reservation **out) {
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_reservation_options ro = {.name = name};
    if (qv_reservation_create(ctx->pool, &ro, out, &err)) return cli_fail(ctx, &err);
    return 0;
}

int cli_open_file(struct cli_ctx *ctx, const char *path, int mmap, struct qv_file **out) {
    struct qv_error err;
    qv_error_clear(&err);
    struct qv_file_options fo = {.pool = ctx->pool, .mmap = mmap};
    if (qv_file_open(path, &fo, out, &err)) return cli_fail(ctx, &err);
    return 0;
}

/* "qv gen: " for a command, "qv: " before one is known. */
static void prefix(const struct cli_ctx *ctx) {
    const char *cmd = ctx && ctx->command ? ctx->command : "";
    fprintf(stderr, "qv%s%s: ", *cmd ? " " : "", cmd);
}

void cli_errorf(const struct cli_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    prefix(ctx);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_fail(const struct cli_ctx *ctx, const struct qv_error *err) {
    /* The kind first (a stable word scripts can match: not_found, corrupt,
     * out_of_memory, ...), then what the library said. */
    int code = err ? err->code : 0;
    enum qv_error_kind kind = err && err->kind ? (enum qv_error_kind)err->kind : qv_error_kind_of(code);
    if (err && err->message[0])
        cli_errorf(ctx, "%s: %s", qv_error_kind_name(kind), err->message);
    else
        cli_errorf(ctx, "%s: failed (%s)", qv_error_kind_name(kind), qv_errno_name(code));
    return CLI_EXIT_ERROR;
}

int cli_usage_error(const struct cli_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    const char *cmd = ctx && ctx->command ? ctx->command : "";
    fflush(stdout);
    prefix(ctx);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'qv %s%s--help'.\n", cmd, *cmd ? " " : "");
    return CLI_EXIT_USAGE;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) { interrupted = sig; }

void cli_trap_interrupts(void) {
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        /* SA_RESTART: the library's reads and writes go on undisturbed until
         * the loop sees the flag; SA_RESETHAND: the second signal kills. */
        sa.sa_flags = SA_RESTART | SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

int cli_interrupted(void) { return interrupted; }

int cli_refuse_same_file(const struct cli_ctx *ctx, const char *in, const char *out) {
    struct stat si, so;
    if (!in || !out || stat(in, &si) != 0 || stat(out, &so) != 0) return 0;
    if (si.st_dev != so.st_dev || si.st_ino != so.st_ino) return 0;
    return cli_usage_error(ctx, "'%s' is the input file '%s': writing it would destroy the input",
                           out, in);
}
