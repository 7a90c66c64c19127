/* RFC 4180 CSV parsing, one record at a time. */
#include "io/csv_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cli_csv_reader_init(struct cli_csv_reader *r, FILE *f, char delimiter) {
    memset(r, 0, sizeof *r);
    r->f = f;
    r->delimiter = delimiter;
    r->line = 1;
    r->at_start = 1;
}

void cli_csv_reader_free(struct cli_csv_reader *r) {
    free(r->fields);
    free(r->data);
    free(r->starts);
    free(r->quoted);
    r->fields = NULL;
    r->data = NULL;
    r->starts = NULL;
    r->quoted = NULL;
}

/* Next input byte, or -1 at the end; -2 on a read error. */
static int next_byte(struct cli_csv_reader *r) {
    if (r->pos == r->len) {
        if (r->eof) return -1;
        r->len = fread(r->buf, 1, sizeof r->buf, r->f);
        r->pos = 0;
        if (r->len == 0) {
            r->eof = 1;
            return ferror(r->f) ? -2 : -1;
        }
    }
    return r->buf[r->pos++];
}

static int peek_byte(struct cli_csv_reader *r) {
    int c = next_byte(r);
    if (c >= 0) r->pos--;
    return c;
}

static int put_byte(struct cli_csv_reader *r, char c) {
    if (r->data_len + 1 >= r->data_cap) {
        size_t cap = r->data_cap ? r->data_cap * 2 : 1024;
        char *d = realloc(r->data, cap);
        if (!d) return -1;
        r->data = d;
        r->data_cap = cap;
    }
    r->data[r->data_len++] = c;
    return 0;
}

static int start_field(struct cli_csv_reader *r) {
    if (r->n_fields == r->fields_cap) {
        int cap = r->fields_cap ? r->fields_cap * 2 : 16;
        size_t *s = realloc(r->starts, (size_t)cap * sizeof *s);
        if (!s) return -1;
        r->starts = s;
        int *q = realloc(r->quoted, (size_t)cap * sizeof *q);
        if (!q) return -1;
        r->quoted = q;
        struct cli_csv_field *f = realloc(r->fields, (size_t)cap * sizeof *f);
        if (!f) return -1;
        r->fields = f;
        r->fields_cap = cap;
    }
    r->starts[r->n_fields] = r->data_len;
    r->quoted[r->n_fields] = 0;
    r->n_fields++;
    return 0;
}

static int oom(struct cli_csv_reader *r) {
    snprintf(r->error, sizeof r->error, "line %lld: out of memory reading a record",
             (long long)r->record_line);
    return -1;
}

static int read_error(struct cli_csv_reader *r) {
    snprintf(r->error, sizeof r->error, "line %lld: read error: %s", (long long)r->line,
             strerror(errno));
    return -1;
}

int cli_csv_next(struct cli_csv_reader *r) {
    r->n_fields = 0;
    r->data_len = 0;
    if (r->at_start) {
        r->at_start = 0;
        /* A UTF-8 byte order mark is an encoding signature, not data. */
        if (peek_byte(r) == 0xEF && r->len - r->pos >= 3 && r->buf[r->pos + 1] == 0xBB &&
            r->buf[r->pos + 2] == 0xBF)
            r->pos += 3;
    }
    int c = next_byte(r);
    if (c == -2) return read_error(r);
    if (c == -1) return 0;
    r->record_line = r->line;
    if (start_field(r)) return oom(r);
    for (;;) {
        if (c == '"' && r->data_len == r->starts[r->n_fields - 1] && !r->quoted[r->n_fields - 1]) {
            /* A quoted field: runs to the quote that is not doubled. */
            r->quoted[r->n_fields - 1] = 1;
            int64_t open_line = r->line;
            for (;;) {
                c = next_byte(r);
                if (c == -2) return read_error(r);
                if (c == -1) {
                    snprintf(r->error, sizeof r->error,
                             "line %lld: quoted field (field %d) starting on line %lld is never "
                             "closed",
                             (long long)r->line, r->n_fields, (long long)open_line);
                    return -1;
                }
                if (c == '"') {
                    if (peek_byte(r) == '"') {
                        next_byte(r);
                    } else {
                        break;
                    }
                }
                if (c == '\n') r->line++;
                if (put_byte(r, (char)c)) return oom(r);
            }
            c = next_byte(r);
            if (c == -2) return read_error(r);
            if (c >= 0 && c != r->delimiter && c != '\n' && c != '\r') {
                snprintf(r->error, sizeof r->error,
                         "line %lld, field %d: unexpected character '%c' after a closing quote "
                         "(a quote inside a quoted field is written \"\")",
                         (long long)r->line, r->n_fields, c >= 0x20 && c < 0x7f ? c : '?');
                return -1;
            }
            continue;
        }
        if (c == -1 || c == '\n' || c == '\r') {
            if (put_byte(r, 0)) return oom(r);
            if (c == '\r' && peek_byte(r) == '\n') next_byte(r);
            if (c != -1) r->line++;
            break;
        }
        if (c == r->delimiter) {
            if (put_byte(r, 0) || start_field(r)) return oom(r);
        } else if (put_byte(r, (char)c)) {
            return oom(r);
        }
        c = next_byte(r);
        if (c == -2) return read_error(r);
    }
    /* Fields point into data only now that it has stopped moving. */
    for (int i = 0; i < r->n_fields; i++) {
        size_t s = r->starts[i];
        size_t e = i + 1 < r->n_fields ? r->starts[i + 1] - 1 : r->data_len - 1;
        r->fields[i].p = r->data + s;
        r->fields[i].n = e - s;
        r->fields[i].quoted = r->quoted[i];
    }
    r->records++;
    return 1;
}
