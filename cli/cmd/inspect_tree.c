/* Collecting a segment's encoding tree through qv_enc_walk, copying what
 * the walk hands out (its strings are only valid during the callback). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/inspect.h"

static int visit(void *ctx, const struct qv_enc_node_info *info) {
    struct cli_enc_tree *t = ctx;
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 8;
        struct cli_enc_node *n = realloc(t->nodes, (size_t)cap * sizeof *n);
        if (!n) return ENOMEM;
        t->nodes = n;
        t->cap = cap;
    }
    struct cli_enc_node *n = &t->nodes[t->n++];
    memset(n, 0, sizeof *n);
    n->depth = info->depth;
    snprintf(n->role, sizeof n->role, "%s", info->role ? info->role : "");
    snprintf(n->name, sizeof n->name, "%s", info->name ? info->name : qv_encoding_name(info->encoding));
    snprintf(n->type, sizeof n->type, "%s", info->type ? info->type : "?");
    n->encoding = info->encoding;
    n->fixed_width = info->fixed_width;
    n->count = info->count;
    n->offset = info->offset;
    n->size = info->size;
    n->own_size = info->own_size;
    n->compressed = info->compressed;
    n->nparams = info->nparams < 0 ? 0 : info->nparams > QV_ENC_MAX_PARAMS ? QV_ENC_MAX_PARAMS
                                                                          : info->nparams;
    for (int i = 0; i < n->nparams; i++) {
        snprintf(n->param_names[i], sizeof n->param_names[i], "%s",
                 info->param_names[i] ? info->param_names[i] : "?");
        n->params[i] = info->params[i];
    }
    return 0;
}

int cli_enc_tree_read(const struct qv_reader *rd, int64_t rg, int32_t node, int i,
                      struct qv_reservation *r, struct cli_enc_tree *out, struct qv_error *err) {
    memset(out, 0, sizeof *out);
    int rc = qv_reader_segment_describe(rd, rg, node, i, r, out->describe, sizeof out->describe,
                                        visit, out, err);
    if (rc == ENOMEM && (!err || !err->message[0]))
        qv_error_set(err, ENOMEM, "out of memory collecting an encoding tree");
    return rc;
}

void cli_enc_tree_free(struct cli_enc_tree *t) {
    free(t->nodes);
    memset(t, 0, sizeof *t);
}
