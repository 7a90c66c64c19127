/*
 * An RFC 4180 CSV reader over a stdio stream: records separated by LF or
 * CRLF (a lone CR too), fields by a one-byte delimiter, fields optionally in
 * double quotes with "" for a quote, delimiters and line breaks allowed
 * inside quotes. A UTF-8 byte order mark at the start is skipped.
 *
 * Strict where it matters for a clear error: text after a closing quote
 * and a quote left open at the end of the input are errors that name the
 * line. Every field keeps whether it was quoted, so "" (an empty string)
 * and an empty field (a null) stay distinct.
 */
#ifndef QV_CLI_CSV_READER_H
#define QV_CLI_CSV_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cli_csv_field {
    const char *p; /* NUL-terminated copy; may hold NUL bytes inside (use n) */
    size_t n;
    int quoted;
};

struct cli_csv_reader {
    FILE *f;
    char delimiter;
    int64_t line;        /* physical line the reader is at (1-based) */
    int64_t record_line; /* line the current record started on */
    int64_t records;     /* records returned so far */
    /* the current record */
    struct cli_csv_field *fields;
    int n_fields, fields_cap;
    char *data;          /* field bytes, each NUL-terminated */
    size_t data_len, data_cap;
    size_t *starts;      /* offsets of fields in data (data moves as it grows) */
    int quoted_bits_cap;
    int *quoted;
    /* input buffer */
    unsigned char buf[65536];
    size_t pos, len;
    int eof, at_start;
    char error[256];     /* message of the last failure */
};

/* `f` stays the caller's. */
void cli_csv_reader_init(struct cli_csv_reader *r, FILE *f, char delimiter);
void cli_csv_reader_free(struct cli_csv_reader *r);
/* Reads the next record into r->fields / r->n_fields. Returns 1 with a
 * record, 0 at the end of input, -1 on an error (message in r->error,
 * naming the line; ENOMEM and read errors included). */
int cli_csv_next(struct cli_csv_reader *r);

#endif
