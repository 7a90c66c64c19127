/* Internals shared by the files of the arrow part. */
#ifndef QV_ARROW_INTERNAL_H
#define QV_ARROW_INTERNAL_H

#include <stdatomic.h>

#include "base/limits.h"
#include "quiver/arrow.h"

/* A dotted field path ("tags.item") built while walking a tree, for
 * messages. Overlong paths are truncated with "..." rather than failing. */
struct qv__path {
    size_t len;
    char buf[256];
};
static inline void qv__path_init(struct qv__path *p) {
    p->len = 0;
    p->buf[0] = '\0';
}
/* Appends ".name" (or "name" at the top); returns the length to restore. */
size_t qv__path_push(struct qv__path *p, const char *name);
static inline void qv__path_pop(struct qv__path *p, size_t len) {
    p->len = len;
    p->buf[len] = '\0';
}
/* The path for messages: "<root>" for the root itself. */
static inline const char *qv__path_str(const struct qv__path *p) {
    return p->len ? p->buf : "<root>";
}

/* Buffers an array of this type has in the C Data Interface. */
int64_t qv__type_n_buffers(enum qv_type type);
/* Bytes per value of a fixed-width field (FIXED_BINARY: its byte_width,
 * which may be 0); -1 for booleans, variable-width and nested types. */
int qv__field_fixed_width(const struct qv_field *f);
/* Children a field of this type must have; -1 when any number (STRUCT). */
int64_t qv__type_n_children(enum qv_type type);
/* Nodes in the tree rooted at `f` (1 + all descendants). */
int64_t qv__field_count_nodes(const struct qv_field *f);
/* 10^p as an unsigned 128-bit value split in halves, p in 0..38. */
void qv__pow10_128(int p, uint64_t *lo, uint64_t *hi);
/* Nonzero when the 128-bit decimal (hi:lo) lies outside [-b1, b1], for
 * b1 = 10^p - 1 < 2^63 (p <= 18): hi is not lo's sign extension (hi plus
 * the sign bit does not wrap to 0), or lo + b1 > 2 b1 unsigned. Branch
 * free, for the loops that check a buffer at once (validate.c, decimal.c). */
static inline uint64_t qv__decimal_unfit_bits(uint64_t lo, uint64_t hi, uint64_t b1) {
    return (uint64_t)(lo + b1 > 2 * b1) | (hi + (lo >> 63));
}
/* Whether the unscaled decimal (hi:lo) has at most `precision` digits. */
bool qv__decimal_fits(uint64_t lo, int64_t hi, int precision);
/* The first valid slot of a decimal128 array (its buffers only are read:
 * offset, length, validity, values) whose value has more than `precision`
 * digits, or -1 (validate.c; the full tier's check, also the writer's). */
int64_t qv__decimal_first_unfit(const struct ArrowArray *a, int precision);
/* Widens n int64 values at the start of p (8 n bytes) in place to 128-bit
 * two's complement decimals (16 n bytes; p has room for them). */
void qv__decimal_widen64(void *p, int64_t n);
/* The same from in[0..n) into the 16 n bytes at out (apart from in). */
void qv__decimal_widen64_to(const int64_t *in, int64_t n, void *out);
/* The other way: n 128-bit decimals at src to their low 64 bits at out
 * (every one copied); true when every value, nulls included, has at most
 * `precision` (1..18) digits. On false the caller asks
 * qv__decimal_first_unfit, which skips nulls. */
bool qv__decimal_narrow64(const void *src, int64_t n, int precision, int64_t *out);

/* ---- Schema trees (schema.c) ---- */

/* Schemas nest at most QV__MAX_NESTING levels below the root (base/limits.h,
 * the format's limit): walks recurse, and what the Arrow layer accepts is
 * what a file can hold. */

/* A bump allocator over one block: a pass with base == NULL measures (every
 * take returns NULL), a second pass over the allocated block fills. */
struct qv__arena {
    char *base;
    size_t off;
};
void *qv__arena_take(struct qv__arena *a, size_t size, size_t align);
const char *qv__arena_str(struct qv__arena *a, const char *s, size_t n);
/* Checks one node's type, parameters, child count and metadata table. */
int qv__field_check_node(const struct qv_field *f, const struct qv__path *path, int depth,
                         struct qv_error *err);
/* The node check over a whole subtree, extending `path` as it descends. */
int qv__field_check_tree(const struct qv_field *f, struct qv__path *path, int depth,
                         struct qv_error *err);
/* Allocates a schema of the measured a->off bytes and rewinds `a` over it,
 * past the qv_schema header, ready for the filling pass. */
int qv__schema_alloc(struct qv__arena *a, struct qv_reservation *r, struct qv_schema **out,
                     struct qv_error *err);

/* ---- The batch builder (builder.c) ---- */

/* Forgets the sizes of the batches before: the next batch starts every
 * buffer at the configured initial capacity again. For a consumer whose
 * batches are far apart in time (the writer between row groups), where a
 * row group's worth of capacity held for the next one is memory idle. Call
 * between batches (nothing in progress). */
void qv__builder_restart(struct qv_builder *b);

/* ---- Owned array trees (owned_array.c) ---- */

/* Creates an owned tree shaped like `field` into `out` and, when `preorder`
 * is non-NULL, stores a pointer to every node in preorder there (preorder[0]
 * == out; the caller sizes it with qv__field_count_nodes). */
int qv__owned_tree_create(struct ArrowArray *out, const struct qv_field *field,
                          struct qv_reservation *r, struct ArrowArray **preorder,
                          struct qv_error *err);
/* Sets buffer i of an owned node without checks (the builder's fast export).
 * owned_size 0 = borrowed. */
void qv__owned_set(struct ArrowArray *node, int64_t i, void *ptr, size_t owned_size);
/* When `root` is a node of an owned tree (not yet released), makes fn(arg)
 * run once the tree's last node is released (children moved out by a
 * consumer included) and returns true; the previous callback goes to
 * *prev_fn / *prev_arg (each may be NULL) so that callers can chain. False
 * for any other array. Called before the tree is shared across threads. */
bool qv__owned_tree_on_free(struct ArrowArray *root, void (*fn)(void *), void *arg,
                            void (**prev_fn)(void *), void **prev_arg);

/* ---- UTF-8 (validate.c) ---- */
/* Length of the valid UTF-8 sequence that starts s[0..n) (n >= 1), 0 when
 * it is not one: overlongs, surrogates and code points past U+10FFFF are
 * not. One definition for validation and for the display form of names. */
static inline int64_t qv__utf8_seq(const uint8_t *s, int64_t n) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    int64_t more;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) more = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        more = 2;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        else if (c == 0xED) hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        more = 3;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        else if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
    } else {
        return 0;
    }
    if (n <= more) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int64_t k = 2; k <= more; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    return 1 + more;
}
bool qv__utf8_valid(const uint8_t *s, int64_t n);

#endif
