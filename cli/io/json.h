/*
 * A small streaming JSON writer for machine-readable output (inspect
 * --json). It tracks nesting and commas itself, escapes strings (invalid
 * UTF-8 becomes U+FFFD so the output always parses), and indents two spaces
 * per level so the output is also readable.
 */
#ifndef QV_CLI_JSON_H
#define QV_CLI_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_JSON_MAX_DEPTH 32

struct cli_json {
    FILE *f;
    int depth;
    int count[CLI_JSON_MAX_DEPTH]; /* values written at each level */
    int after_key;                 /* the next value completes "key": */
};

void cli_json_init(struct cli_json *j, FILE *f);
/* Object member key; the next call writes its value. */
void cli_json_key(struct cli_json *j, const char *key);
void cli_json_object_begin(struct cli_json *j);
void cli_json_object_end(struct cli_json *j);
void cli_json_array_begin(struct cli_json *j);
void cli_json_array_end(struct cli_json *j);
void cli_json_string(struct cli_json *j, const char *s);
void cli_json_string_n(struct cli_json *j, const char *s, size_t n);
void cli_json_int(struct cli_json *j, int64_t v);
void cli_json_uint(struct cli_json *j, uint64_t v);
/* Non-finite values are written as strings ("NaN", "inf", "-inf"). */
void cli_json_double(struct cli_json *j, double v);
void cli_json_bool(struct cli_json *j, int v);
void cli_json_null(struct cli_json *j);
/* A pre-rendered JSON value (a number rendered elsewhere). */
void cli_json_raw(struct cli_json *j, const char *text);
/* Finishes the document with a newline. */
void cli_json_end(struct cli_json *j);

/* Writes `s` escaped as a JSON string (quotes included) to a buffer user. */
struct cli_buf;
void cli_json_escape(struct cli_buf *b, const char *s, size_t n);

#endif
