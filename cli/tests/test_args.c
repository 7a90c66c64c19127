/* Option parsing (args.h): values land in the caller's struct, never in
 * state kept between calls, so a command parsed twice in one process sees
 * only its own arguments; flags, "--opt=value", "--", global options and
 * the usage errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "args.h"

struct t_args {
    const char *columns, *limit;
    int mmap;
};

static const struct cli_option options[] = {
    CLI_VALUE(struct t_args, columns, "columns", "A,B", "columns"),
    CLI_VALUE(struct t_args, limit, "limit", "N", "rows"),
    CLI_FLAG(struct t_args, mmap, "mmap", "map"),
};

static const struct cli_command_spec spec = {
    .name = "t",
    .usage = "FILE",
    .summary = "a test command",
    .options = options,
    .n_options = 3,
    .min_positional = 1,
    .max_positional = 2,
};

/* Parses a NULL-terminated argument list; returns cli_args_parse's code. */
static int parse(struct cli_ctx *ctx, struct t_args *a, const char **pos, int *np, ...) {
    char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, np);
    argv[argc++] = (char *)"t";
    for (char *s; (s = va_arg(ap, char *)) != NULL && argc < 16;) argv[argc++] = s;
    va_end(ap);
    return cli_args_parse(&spec, ctx, argc, argv, a, pos, np);
}

static void test_values_in_the_callers_struct(void **state) {
    (void)state;
    struct cli_ctx ctx = {.command = "t"};
    const char *pos[CLI_MAX_POSITIONAL];
    int np = 0;
    struct t_args first = {0};
    assert_int_equal(parse(&ctx, &first, pos, &np, "f.qvr", "--columns", "a,b", "--limit=5", "--mmap",
                           "--memory-limit", "1K", (char *)NULL),
                     -1);
    assert_string_equal(first.columns, "a,b");
    assert_string_equal(first.limit, "5");
    assert_int_equal(first.mmap, 1);
    assert_int_equal(np, 1);
    assert_string_equal(pos[0], "f.qvr");
    assert_int_equal(ctx.memory_limit, 1024);
    /* A second parse starts from its own struct: nothing carries over. */
    struct t_args second = {0};
    assert_int_equal(parse(&ctx, &second, pos, &np, "--", "-x", "g.qvr", (char *)NULL), -1);
    assert_null(second.columns);
    assert_null(second.limit);
    assert_int_equal(second.mmap, 0);
    assert_int_equal(np, 2);
    assert_string_equal(pos[0], "-x");
    assert_string_equal(first.columns, "a,b"); /* the first is untouched */
}

static void test_usage_errors(void **state) {
    (void)state;
    struct cli_ctx ctx = {.command = "t"};
    const char *pos[CLI_MAX_POSITIONAL];
    int np = 0;
    struct t_args a = {0};
    /* stderr gets the messages; the codes are what matters here. */
    assert_int_equal(parse(&ctx, &a, pos, &np, "f", "--limit", "1", "--limit", "2", (char *)NULL), 2);
    assert_int_equal(parse(&ctx, &a, pos, &np, "f", "--nope", (char *)NULL), 2);
    assert_int_equal(parse(&ctx, &a, pos, &np, "f", "--mmap=1", (char *)NULL), 2);
    assert_int_equal(parse(&ctx, &a, pos, &np, "f", "--limit", (char *)NULL), 2);
    assert_int_equal(parse(&ctx, &a, pos, &np, (char *)NULL), 2);
    assert_int_equal(parse(&ctx, &a, pos, &np, "a", "b", "c", (char *)NULL), 2);
    assert_int_equal(parse(&ctx, &a, pos, &np, "f", "--memory-limit", "lots", (char *)NULL), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_in_the_callers_struct),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
