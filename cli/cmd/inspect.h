/*
 * Pieces of `qv inspect` that other commands reuse (demo prints the
 * summary) and that are concepts of their own: rendering zone statistics,
 * and collecting a segment's encoding tree.
 */
#ifndef QV_CLI_INSPECT_H
#define QV_CLI_INSPECT_H

#include <stdio.h>

#include "io/json.h"
#include "quiver/arrow.h"
#include "quiver/base.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/memory.h"
#include "term/strbuf.h"

/* ---- statistics (inspect_stats.c) ----
 * Min/max bytes as the footer stores them, rendered per the node's type:
 * numbers, decimals with their scale, dates, timestamps, quoted strings
 * (with "..." when truncated), hex for binary. Bytes that do not have the
 * length the type implies are shown as hex, never misread. */
void cli_stat_text(struct cli_buf *b, const struct qv_field *f, const uint8_t *p, uint32_t len,
                   int truncated);
/* The same as a JSON value: numbers for integers and floats, true/false for
 * booleans, strings for everything else (decimals as exact text). */
void cli_stat_json(struct cli_json *j, const struct qv_field *f, const uint8_t *p, uint32_t len);

/* ---- encoding trees (inspect_tree.c) ---- */
struct cli_enc_node {
    int depth;
    char role[32];
    char name[24];
    char type[16];
    int encoding;
    uint32_t fixed_width;
    int64_t count;
    uint64_t offset, size, own_size;
    int compressed;
    int nparams;
    char param_names[QV_ENC_MAX_PARAMS][32];
    int64_t params[QV_ENC_MAX_PARAMS];
};
struct cli_enc_tree {
    struct cli_enc_node *nodes;
    int n, cap;
    char describe[1024]; /* qv_enc_describe's compact form */
};
/* Reads segment i of a chunk (checksum verified) and collects its tree. */
int cli_enc_tree_read(const struct qv_reader *rd, int64_t rg, int32_t node, int i,
                      struct qv_reservation *r, struct cli_enc_tree *out, struct qv_error *err);
void cli_enc_tree_free(struct cli_enc_tree *t);

/* ---- the file summary (cmd_inspect.c) ---- */
/* Totals over the whole file: rows, row groups, file size, raw Arrow bytes,
 * ratio, and per top-level column encoded / raw bytes. */
int cli_inspect_summary(FILE *f, const struct qv_reader *rd, const char *indent,
                        struct qv_error *err);
/* Sum of raw Arrow bytes and of encoded bytes over every chunk. */
int cli_file_totals(const struct qv_reader *rd, uint64_t *raw, uint64_t *encoded,
                    struct qv_error *err);

#endif
