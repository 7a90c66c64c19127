/* Owned arrays: ArrowArray trees whose buffers are freed through a
 * reservation.
 *
 * The control data of a whole tree (per-node buffer tables, the child
 * ArrowArray structs, child pointer tables) is one allocation, so exporting a
 * batch costs one control allocation however many columns it has. Every node
 * holds one reference on that block; a node's release frees the buffers it
 * owns, releases its children that are still attached, and drops its
 * reference; the last one frees the block. A consumer may therefore move a
 * child out (bitwise copy, as the C Data Interface allows) and release it
 * after the parent, or before. */
#include <stdalign.h>
#include <string.h>

#include "arrow/arrow_internal.h"

struct array_block {
    struct qv_reservation *res;
    size_t size;
    _Atomic int64_t refs;
    /* Called once the last node is released and the block freed: the
     * owner of the reservation learns when nothing of the tree is left
     * (qv__owned_tree_on_free). */
    void (*on_free)(void *);
    void *on_free_arg;
};

struct owned_node {
    struct array_block *block;
    const void *bufs[3];
    size_t sizes[3]; /* allocation size of an owned buffer; 0 = borrowed */
};

static void owned_release(struct ArrowArray *a) {
    if (!a || !a->release) return;
    struct owned_node *n = a->private_data;
    struct array_block *blk = n->block;
    for (int i = 0; i < 3; i++)
        if (n->sizes[i]) qv_free(blk->res, (void *)n->bufs[i], n->sizes[i]);
    for (int64_t i = 0; i < a->n_children; i++) {
        struct ArrowArray *c = a->children[i];
        if (c && c->release) c->release(c);
    }
    if (a->dictionary && a->dictionary->release) a->dictionary->release(a->dictionary);
    a->release = NULL;
    a->private_data = NULL;
    if (atomic_fetch_sub(&blk->refs, 1) == 1) {
        void (*fn)(void *) = blk->on_free;
        void *arg = blk->on_free_arg;
        qv_free(blk->res, blk, blk->size);
        if (fn) fn(arg);
    }
}

bool qv__owned_tree_on_free(struct ArrowArray *root, void (*fn)(void *), void *arg,
                            void (**prev_fn)(void *), void **prev_arg) {
    if (!root || root->release != owned_release) return false;
    struct array_block *blk = ((struct owned_node *)root->private_data)->block;
    if (prev_fn) *prev_fn = blk->on_free;
    if (prev_arg) *prev_arg = blk->on_free_arg;
    blk->on_free = fn;
    blk->on_free_arg = arg;
    return true;
}

struct tree_fill {
    struct array_block *block;
    struct owned_node *nodes;
    struct ArrowArray *arrays;
    struct ArrowArray **ptrs;
    int64_t next, next_ptr;
    struct ArrowArray **preorder;
};

static struct ArrowArray *fill(struct tree_fill *t, struct ArrowArray *dst,
                               const struct qv_field *f) {
    int64_t i = t->next++;
    struct owned_node *n = &t->nodes[i];
    n->block = t->block;
    if (!dst) dst = &t->arrays[i];
    if (t->preorder) t->preorder[i] = dst;
    struct ArrowArray **ptrs = t->ptrs + t->next_ptr;
    t->next_ptr += f->n_children;
    for (int64_t c = 0; c < f->n_children; c++) ptrs[c] = fill(t, NULL, &f->children[c]);
    *dst = (struct ArrowArray){
        .n_buffers = qv__type_n_buffers(f->type),
        .n_children = f->n_children,
        .buffers = n->bufs,
        .children = f->n_children ? ptrs : NULL,
        .release = owned_release,
        .private_data = n,
    };
    return dst;
}

int qv__owned_tree_create(struct ArrowArray *out, const struct qv_field *field,
                          struct qv_reservation *r, struct ArrowArray **preorder,
                          struct qv_error *err) {
    int64_t n = qv__field_count_nodes(field);
    struct qv__arena a = {NULL, 0};
    qv__arena_take(&a, sizeof(struct array_block), alignof(struct array_block));
    qv__arena_take(&a, 0, alignof(struct owned_node));
    size_t nodes_at = a.off;
    qv__arena_take(&a, (size_t)n * sizeof(struct owned_node), alignof(struct owned_node));
    qv__arena_take(&a, 0, alignof(struct ArrowArray));
    size_t arrays_at = a.off;
    /* Slot 0 stays unused: the root lives in the caller's `out`. */
    qv__arena_take(&a, (size_t)n * sizeof(struct ArrowArray), alignof(struct ArrowArray));
    qv__arena_take(&a, 0, alignof(struct ArrowArray *));
    size_t ptrs_at = a.off;
    qv__arena_take(&a, (size_t)n * sizeof(struct ArrowArray *), alignof(struct ArrowArray *));
    size_t size = a.off;
    char *mem = qv_alloc(r, size, err);
    if (!mem) return qv_error_wrap(err, ENOMEM, "owned array: allocating %zu bytes of control data: ", size);
    memset(mem, 0, size);
    struct array_block *blk = (struct array_block *)mem;
    blk->res = r;
    blk->size = size;
    atomic_init(&blk->refs, n);
    struct tree_fill t = {
        .block = blk,
        .nodes = (struct owned_node *)(mem + nodes_at),
        .arrays = (struct ArrowArray *)(mem + arrays_at),
        .ptrs = (struct ArrowArray **)(mem + ptrs_at),
        .preorder = preorder,
    };
    fill(&t, out, field);
    return 0;
}

void qv__owned_set(struct ArrowArray *node, int64_t i, void *ptr, size_t owned_size) {
    struct owned_node *n = node->private_data;
    n->bufs[i] = ptr;
    n->sizes[i] = owned_size;
}

int qv_owned_array_create(struct ArrowArray *out, const struct qv_field *field,
                          struct qv_reservation *r, struct qv_error *err) {
    if (!out) return qv_error_set(err, EINVAL, "owned array create: NULL output");
    out->release = NULL;
    if (!field || !r)
        return qv_error_set(err, EINVAL, "owned array create: NULL %s",
                            field ? "reservation" : "field");
    struct qv__path path;
    qv__path_init(&path);
    int rc = qv__field_check_tree(field, &path, 0, err);
    if (rc) return rc;
    return qv__owned_tree_create(out, field, r, NULL, err);
}

static int check_node(struct ArrowArray *node, int64_t i, const char *op, struct qv_error *err) {
    if (!node || node->release != owned_release)
        return qv_error_set(err, EINVAL, "owned array %s: the array is %s", op,
                            !node ? "NULL" : !node->release ? "released" : "not an owned array");
    if (i < 0 || i >= node->n_buffers)
        return qv_error_set(err, EINVAL, "owned array %s: buffer index %lld outside 0..%lld", op,
                            (long long)i, (long long)node->n_buffers - 1);
    return 0;
}

static void drop_buffer(struct owned_node *n, int64_t i) {
    if (n->sizes[i]) qv_free(n->block->res, (void *)n->bufs[i], n->sizes[i]);
    n->bufs[i] = NULL;
    n->sizes[i] = 0;
}

void *qv_owned_array_alloc_buffer(struct ArrowArray *node, int64_t i, size_t size,
                                  struct qv_error *err) {
    if (check_node(node, i, "alloc buffer", err)) return NULL;
    struct owned_node *n = node->private_data;
    void *p = qv_alloc(n->block->res, size, err);
    if (!p) {
        qv_error_wrap(err, ENOMEM, "owned array: buffer %lld of %zu bytes: ", (long long)i, size);
        return NULL;
    }
    drop_buffer(n, i);
    n->bufs[i] = p;
    n->sizes[i] = size ? size : 1;
    return p;
}

int qv_owned_array_set_buffer(struct ArrowArray *node, int64_t i, void *ptr, size_t owned_size,
                              struct qv_error *err) {
    int rc = check_node(node, i, "set buffer", err);
    if (rc) return rc;
    struct owned_node *n = node->private_data;
    if (n->bufs[i] == ptr && n->sizes[i] == owned_size) return 0;
    drop_buffer(n, i);
    n->bufs[i] = ptr;
    n->sizes[i] = ptr ? owned_size : 0;
    return 0;
}
