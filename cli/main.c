/* `qv`: the command dispatcher. Global options may precede the command
 * (they are also accepted after it, by every command's parser). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"

struct command {
    const char *name;
    int (*run)(struct cli_ctx *ctx, int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"gen", cli_cmd_gen, "generate TPC-H lineitem data into a .qvr file"},
    {"import", cli_cmd_import, "convert a CSV file to .qvr"},
    {"export", cli_cmd_export, "write a .qvr file (or some of its columns) as CSV"},
    {"inspect", cli_cmd_inspect, "show schema, row groups, encodings, sizes and statistics"},
    {"scan", cli_cmd_scan, "print rows as a table or CSV"},
    {"demo", cli_cmd_demo, "generate, write, inspect and scan lineitem, with timings"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f,
            "usage: qv [--memory-limit BYTES] <command> [options]\n"
            "\n"
            "Quiver's command line: write, read and look inside .qvr files.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n"
            "global options:\n"
            "  --memory-limit BYTES  bound all memory a command charges to its pool (e.g. 512M)\n"
            "  -h, --help            show this help\n"
            "  --version             show the version\n"
            "\n"
            "Run 'qv <command> --help' for a command's options.\n"
            "Exit status: 0 success, 1 runtime error, 2 usage error.\n");
}

int main(int argc, char **argv) {
    struct cli_ctx ctx = {.command = ""};
    /* A write beyond the file-size limit (ulimit -f) must fail with EFBIG,
     * which the writer reports and cleans up after, not kill qv with SIGXFSZ
     * and leave a temporary behind (Python ignores SIGXFSZ the same way). */
    signal(SIGXFSZ, SIG_IGN);
    int i = 1;
    /* Global options before the command. */
    while (i < argc && argv[i][0] == '-') {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--version") == 0) {
            printf("qv (quiver) %s\n", QV_VERSION_STRING);
            return CLI_EXIT_OK;
        }
        const char *v = NULL;
        if (strcmp(a, "--memory-limit") == 0) {
            if (i + 1 >= argc) return cli_usage_error(&ctx, "option '--memory-limit' needs a value");
            v = argv[++i];
        } else if (strncmp(a, "--memory-limit=", 15) == 0) {
            v = a + 15;
        } else {
            return cli_usage_error(&ctx, "unknown option '%s'", a);
        }
        int rc = cli_parse_bytes(&ctx, "--memory-limit", v, &ctx.memory_limit);
        if (rc) return rc;
        i++;
    }
    if (i >= argc) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t c = 0; c < N_COMMANDS; c++) {
        if (strcmp(argv[i], commands[c].name) == 0) {
            ctx.command = commands[c].name;
            int rc = commands[c].run(&ctx, argc - i, argv + i);
            int sig = cli_interrupted();
            if (sig) {
                /* The command stopped and cleaned up: end the way the
                 * signal would have ended qv. */
                fflush(NULL);
                signal(sig, SIG_DFL);
                raise(sig);
            }
            return rc;
        }
    }
    return cli_usage_error(&ctx, "unknown command '%s'", argv[i]);
}
