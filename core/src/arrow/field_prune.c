/* Pruned copies of a field: the type a nested projection hands out, a
 * struct with only the fields asked for. Masks are in pre-order over the
 * field's subtree, the order in which a reader numbers its nodes, so the
 * same mask tells the column reader which chunks to read. */
#include <string.h>

#include "quiver/arrow.h"

int64_t qv_field_count(const struct qv_field *f) {
    int64_t n = 1;
    for (int64_t i = 0; i < f->n_children; i++) n += qv_field_count(&f->children[i]);
    return n;
}

/* Checks the mask below the field at keep[0] (already known kept); counts
 * the kept fields into *kept and returns the subtree size, or -1 when a
 * marked field's parent is not marked. */
static int64_t check(const struct qv_field *f, const uint8_t *keep, int64_t *kept) {
    int64_t off = 1;
    (*kept)++;
    for (int64_t i = 0; i < f->n_children; i++) {
        const struct qv_field *c = &f->children[i];
        if (keep[off]) {
            int64_t n = check(c, keep + off, kept);
            if (n < 0) return -1;
            off += n;
        } else {
            int64_t n = qv_field_count(c);
            for (int64_t j = 1; j < n; j++)
                if (keep[off + j]) return -1;
            off += n;
        }
    }
    return off;
}

/* Fills *dst from f and keep (keep[0] set), taking children slots from
 * *next (a bump pointer into the block), so each struct's children are
 * contiguous. */
static void build(const struct qv_field *f, const uint8_t *keep, struct qv_field *dst,
                  struct qv_field **next) {
    *dst = *f;
    int64_t n = 0, off = 1;
    for (int64_t i = 0; i < f->n_children; i++) {
        if (keep[off]) n++;
        off += qv_field_count(&f->children[i]);
    }
    dst->n_children = n;
    if (n == 0) {
        dst->children = NULL;
        return;
    }
    struct qv_field *kids = *next;
    *next += n;
    dst->children = kids;
    off = 1;
    int64_t k = 0;
    for (int64_t i = 0; i < f->n_children; i++) {
        int64_t sz = qv_field_count(&f->children[i]);
        if (keep[off]) build(&f->children[i], keep + off, &kids[k++], next);
        off += sz;
    }
}

int qv_field_prune(const struct qv_field *field, const uint8_t *keep, struct qv_reservation *r,
                   struct qv_field **out, size_t *size, struct qv_error *err) {
    *out = NULL;
    *size = 0;
    if (!field || !keep || !keep[0])
        return qv_error_set(err, EINVAL, "prune field: the field itself must be kept");
    int64_t kept = 0;
    if (check(field, keep, &kept) < 0)
        return qv_error_set(err, EINVAL,
                            "prune field '%.200s': a kept field's parent is not kept",
                            field->name ? field->name : "");
    size_t bytes = (size_t)kept * sizeof(struct qv_field);
    struct qv_field *block = qv_alloc(r, bytes, err);
    if (!block) return ENOMEM;
    struct qv_field *next = block + 1;
    build(field, keep, block, &next);
    *out = block;
    *size = bytes;
    return 0;
}
