/* Physical nodes: the schema tree flattened in pre-order, each node knowing
 * which segments its chunks carry. */
#include <stdio.h>
#include <string.h>

#include "format/format_internal.h"

static int32_t count_nodes(const struct qv_field *f) {
    int32_t n = 1;
    for (int64_t i = 0; i < f->n_children; i++) n += count_nodes(&f->children[i]);
    return n;
}

static int classify(const struct qv_field *f, struct qv__node *n, struct qv_error *err) {
    n->kind = QV__NODE_PRIMITIVE;
    n->fixed_width = 0;
    switch (f->type) {
    case QV_TYPE_NULL: n->kind = QV__NODE_NULL; return 0;
    case QV_TYPE_BOOL: n->value_kind = QV_KIND_BOOL; return 0;
    case QV_TYPE_INT8: n->value_kind = QV_KIND_INT8; return 0;
    case QV_TYPE_INT16: n->value_kind = QV_KIND_INT16; return 0;
    case QV_TYPE_INT32: case QV_TYPE_DATE32: n->value_kind = QV_KIND_INT32; return 0;
    case QV_TYPE_INT64: case QV_TYPE_TIMESTAMP: n->value_kind = QV_KIND_INT64; return 0;
    case QV_TYPE_UINT8: n->value_kind = QV_KIND_UINT8; return 0;
    case QV_TYPE_UINT16: case QV_TYPE_FLOAT16: n->value_kind = QV_KIND_UINT16; return 0;
    case QV_TYPE_UINT32: n->value_kind = QV_KIND_UINT32; return 0;
    case QV_TYPE_UINT64: n->value_kind = QV_KIND_UINT64; return 0;
    case QV_TYPE_FLOAT32: n->value_kind = QV_KIND_FLOAT32; return 0;
    case QV_TYPE_FLOAT64: n->value_kind = QV_KIND_FLOAT64; return 0;
    case QV_TYPE_DECIMAL128:
        if (f->precision <= 18) {
            n->kind = QV__NODE_DECIMAL64;
            n->value_kind = QV_KIND_INT64;
        } else {
            n->value_kind = QV_KIND_FIXED_BINARY;
            n->fixed_width = 16;
        }
        return 0;
    case QV_TYPE_UTF8: case QV_TYPE_BINARY: n->value_kind = QV_KIND_BINARY; return 0;
    case QV_TYPE_LARGE_UTF8: case QV_TYPE_LARGE_BINARY:
        n->value_kind = QV_KIND_LARGE_BINARY;
        return 0;
    case QV_TYPE_FIXED_BINARY:
        if (f->byte_width < 0 || f->byte_width > QV_ENC_MAX_FIXED_WIDTH)
            return qv_error_set(err, EINVAL,
                                "field '%s': fixed_size_binary(%d) is wider than the format's "
                                "limit of %d bytes",
                                f->name, (int)f->byte_width, QV_ENC_MAX_FIXED_WIDTH);
        n->value_kind = QV_KIND_FIXED_BINARY;
        n->fixed_width = f->byte_width;
        return 0;
    case QV_TYPE_STRUCT: n->kind = QV__NODE_STRUCT; return 0;
    case QV_TYPE_LIST: case QV_TYPE_MAP:
        n->kind = QV__NODE_LIST;
        n->value_kind = QV_KIND_INT32;
        return 0;
    case QV_TYPE_LARGE_LIST:
        n->kind = QV__NODE_LIST;
        n->value_kind = QV_KIND_INT64;
        return 0;
    case QV_TYPE_FIXED_LIST: n->kind = QV__NODE_FIXED_LIST; return 0;
    default:
        return qv_error_set(err, ENOSYS, "field '%s': type %s cannot be stored", f->name,
                            qv_type_name(f->type));
    }
}

/* Checks what every field must satisfy to be stored: a name the footer can
 * hold (the reader refuses longer ones). */
static int check_name(const struct qv_field *f, struct qv_error *err) {
    size_t len = f->name ? strlen(f->name) : 0;
    if (len > QV__MAX_NAME)
        return qv_error_set(err, EINVAL,
                            "field '%.40s...': name of %zu bytes is longer than the format's "
                            "limit of %d bytes",
                            f->name, len, QV__MAX_NAME);
    return 0;
}

/* `depth` is the node's level below the root minus one (0 for a column). */
static int fill(const struct qv_field *f, int32_t parent, int32_t column, int32_t depth,
                struct qv__node *nodes, int32_t *next, struct qv_error *err) {
    if (depth + 1 > QV__MAX_NESTING) {
        char path[512] = "";
        if (parent >= 0) qv__node_path(nodes, parent, path, sizeof path);
        return qv_error_set(err, EINVAL,
                            "field '%s%s%.200s': nested %d levels deep (a column is level 1), deeper "
                            "than the format's limit of %d levels (what Arrow C++ and pyarrow "
                            "import)",
                            path, parent >= 0 ? "." : "", f->name, depth + 1, QV__MAX_NESTING);
    }
    int rc = check_name(f, err);
    if (rc) return rc;
    int32_t me = (*next)++;
    struct qv__node *n = &nodes[me];
    n->field = f;
    n->parent = parent;
    n->column = column;
    n->depth = depth;
    rc = classify(f, n, err);
    if (rc) return rc;
    n->first_child = *next;
    n->n_children = (int32_t)f->n_children;
    for (int64_t i = 0; i < f->n_children; i++) {
        rc = fill(&f->children[i], me, column, depth + 1, nodes, next, err);
        if (rc) return rc;
    }
    nodes[me].subtree_end = *next;
    return 0;
}

int qv__nodes_build(const struct qv_schema *schema, struct qv_reservation *r,
                    struct qv__node **out, int32_t *n_out, struct qv_error *err) {
    const struct qv_field *root = &schema->root;
    *out = NULL;
    *n_out = 0;
    if (root->type != QV_TYPE_STRUCT)
        return qv_error_set(err, EINVAL, "schema root must be a struct, not %s",
                            qv_type_name(root->type));
    int rc = check_name(root, err);
    if (rc) return rc;
    int32_t n = count_nodes(root) - 1;
    if (n > QV__MAX_NODES)
        return qv_error_set(err, EINVAL,
                            "schema has %d fields (nested ones included), more than the "
                            "format's limit of %d",
                            n, QV__MAX_NODES);
    struct qv__node *nodes = qv_calloc(r, (size_t)(n ? n : 1) * sizeof *nodes, err);
    if (!nodes) return ENOMEM;
    int32_t next = 0;
    for (int64_t c = 0; c < root->n_children; c++) {
        rc = fill(&root->children[c], -1, (int32_t)c, 0, nodes, &next, err);
        if (rc) {
            qv_free(r, nodes, (size_t)(n ? n : 1) * sizeof *nodes);
            return rc;
        }
    }
    *out = nodes;
    *n_out = n;
    return 0;
}

const char *qv__role_name(int role) {
    return role == QV_SEGMENT_VALIDITY ? "validity" : role == QV_SEGMENT_OFFSETS ? "offsets" : "values";
}

int qv__kind_width(enum qv_value_kind kind, int32_t fixed_width) {
    switch (kind) {
    case QV_KIND_INT8: case QV_KIND_UINT8: return 1;
    case QV_KIND_INT16: case QV_KIND_UINT16: return 2;
    case QV_KIND_INT32: case QV_KIND_UINT32: case QV_KIND_FLOAT32: return 4;
    case QV_KIND_FIXED_BINARY: return fixed_width;
    default: return 8;
    }
}

void qv__node_path(const struct qv__node *nodes, int32_t i, char *buf, size_t cap) {
    int32_t chain[QV__MAX_NESTING + 1];
    int depth = 0;
    for (int32_t k = i; k >= 0 && depth < QV__MAX_NESTING + 1; k = nodes[k].parent) chain[depth++] = k;
    size_t off = 0;
    buf[0] = 0;
    for (int d = depth - 1; d >= 0 && off < cap; d--) {
        int w = snprintf(buf + off, cap - off, "%s%s", d == depth - 1 ? "" : ".",
                         nodes[chain[d]].field->name);
        if (w < 0) break;
        off += (size_t)w;
    }
}
