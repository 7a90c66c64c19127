/* The builder's bulk path: copy a slice of an existing Arrow array into an
 * appender. Validity and values are copied as whole ranges; offsets are
 * rebased onto the batch's own data and every one is checked while it is
 * copied (monotone, inside the slice), so even a source that passed only the
 * cheap validation cannot make the builder write outside its buffers or
 * export an inconsistent batch. */
#include <stdio.h>
#include <string.h>

#include "arrow/builder_internal.h"

static int bad_source(struct qv_appender *a, const char *fmt, long long x, long long y) {
    char path[256], what[256];
    snprintf(what, sizeof what, fmt, x, y);
    return qv__builder_poison(a->builder, EINVAL, "column '%s': bulk source: %s",
                              qv__appender_path(a, path, sizeof path), what);
}

static int64_t read_offset(const void *offsets, bool wide, int64_t i) {
    return wide ? ((const int64_t *)offsets)[i] : ((const int32_t *)offsets)[i];
}

static int copy_range(struct qv_appender *a, const struct ArrowArray *src, int64_t at,
                      int64_t count);

/* Copies the offsets of source slots [at, at + count) rebased to start at
 * `dst_base`; reports the source range [*first, *last) they cover. */
static int copy_offsets(struct qv_appender *a, const struct ArrowArray *src, int64_t at,
                        int64_t count, int64_t dst_base, bool dst_wide, int64_t *first,
                        int64_t *last) {
    bool src_wide = dst_wide; /* same type, same offset width */
    const void *so = src->buffers[1];
    int64_t base = read_offset(so, src_wide, at), end = read_offset(so, src_wide, at + count);
    if (base < 0 || end < base) return bad_source(a, "offsets run from %lld to %lld", base, end);
    if (!dst_wide && dst_base + (end - base) > INT32_MAX) {
        char path[256];
        return qv__builder_poison(a->builder, EOVERFLOW,
                                  "column '%s': %lld values in one batch exceed the 2147483647 "
                                  "that 32-bit offsets address",
                                  qv__appender_path(a, path, sizeof path),
                                  (long long)(dst_base + (end - base)));
    }
    /* The common case in one pass without an exit, which vectorizes: every
     * offset rebased and stored, and whether any is out of order or past
     * the end noted on the way; only then does the loop below find the
     * first bad one for the message (the builder is poisoned either way,
     * so what was stored does not matter). */
    int bad = 0;
    if (dst_wide) {
        const int64_t *sp = (const int64_t *)so + at;
        int64_t *dp = (int64_t *)(void *)a->values + a->length;
        for (int64_t j = 1; j <= count; j++) {
            bad |= (sp[j] < sp[j - 1]) | (sp[j] > end);
            dp[j] = (int64_t)((uint64_t)dst_base + ((uint64_t)sp[j] - (uint64_t)base));
        }
    } else {
        const int32_t *sp = (const int32_t *)so + at;
        int32_t *dp = (int32_t *)(void *)a->values + a->length;
        /* 32-bit offsets: base, end and dst_base + (end - base) fit in
         * int32 (checked above), so the arithmetic stays in 32 bits
         * (unsigned: a bad source's offsets must not overflow). */
        const uint32_t b32 = (uint32_t)base, d32 = (uint32_t)dst_base;
        const int32_t e32 = (int32_t)end;
        for (int64_t j = 1; j <= count; j++) {
            bad |= (sp[j] < sp[j - 1]) | (sp[j] > e32);
            dp[j] = (int32_t)(d32 + ((uint32_t)sp[j] - b32));
        }
    }
    if (!bad) {
        *first = base;
        *last = end;
        return 0;
    }
    int64_t prev = base;
    for (int64_t j = 1; j <= count; j++) {
        int64_t o = read_offset(so, src_wide, at + j);
        if (o < prev || o > end)
            return bad_source(a, "offset %lld at slot %lld is out of order", o, at + j);
        int64_t v = dst_base + (o - base);
        if (dst_wide) ((int64_t *)(void *)a->values)[a->length + j] = v;
        else ((int32_t *)(void *)a->values)[a->length + j] = (int32_t)v;
        prev = o;
    }
    *first = base;
    *last = end;
    return 0;
}

/* Copies source slots [at, at + count), `at` being a physical index (the
 * source's offset already added). */
static int copy_range(struct qv_appender *a, const struct ArrowArray *src, int64_t at,
                      int64_t count) {
    if (count == 0) return 0;
    if (a->kind == QV__K_NULL) {
        a->length += count;
        a->null_count += count;
        return 0;
    }
    int rc = qv__appender_reserve(a, a->length + count);
    if (rc) return rc;
    const uint8_t *sv = src->buffers[0];
    int64_t nulls = sv && src->null_count != 0 ? count - qv_bits_count(sv, at, count) : 0;
    if (nulls) {
        if (!a->validity && (rc = qv__appender_activate_validity(a))) return rc;
        qv_bits_copy(a->validity, a->length, sv, at, count);
        a->null_count += nulls;
    } else if (a->validity) {
        qv_bits_fill(a->validity, a->length, count, 1);
    }
    int64_t first, last;
    switch (a->kind) {
    case QV__K_BOOL:
        qv_bits_copy(a->values, a->length, src->buffers[1], at, count);
        break;
    case QV__K_VAR32:
    case QV__K_VAR64: {
        bool wide = a->kind == QV__K_VAR64;
        /* Offsets first (they check the slice), then the bytes in one copy. */
        int64_t base = read_offset(src->buffers[1], wide, at);
        int64_t end = read_offset(src->buffers[1], wide, at + count);
        if (base < 0 || end < base) return bad_source(a, "offsets run from %lld to %lld", base, end);
        rc = qv__appender_reserve_data(a, a->data_length + (end - base));
        if (!rc) rc = copy_offsets(a, src, at, count, a->data_length, wide, &first, &last);
        if (rc) return rc;
        if (last > first)
            memcpy(a->data + a->data_length, (const uint8_t *)src->buffers[2] + first,
                   (size_t)(last - first));
        a->data_length += last - first;
        break;
    }
    case QV__K_STRUCT:
        for (int64_t c = 0; c < a->n_children; c++) {
            const struct ArrowArray *sc = src->children[c];
            rc = copy_range(&a->children[c], sc, sc->offset + at, count);
            if (rc) return rc;
        }
        break;
    case QV__K_LIST32:
    case QV__K_LIST64:
    case QV__K_MAP: {
        struct qv_appender *child = &a->children[0];
        const struct ArrowArray *sc = src->children[0];
        rc = copy_offsets(a, src, at, count, child->length, a->kind == QV__K_LIST64, &first, &last);
        if (!rc) rc = copy_range(child, sc, sc->offset + first, last - first);
        if (rc) return rc;
        break;
    }
    case QV__K_FIXLIST: {
        const struct ArrowArray *sc = src->children[0];
        int64_t size = a->field->list_size;
        rc = copy_range(&a->children[0], sc, sc->offset + at * size, count * size);
        if (rc) return rc;
        break;
    }
    default: /* fixed width */
        if (a->width > 0)
                memcpy(a->values + a->length * a->width,
                   (const uint8_t *)src->buffers[1] + at * a->width, (size_t)(count * a->width));
        break;
    }
    a->length += count;
    return 0;
}

/* Checks that apply to the slice as a whole before anything is written. */
static int check_slice(struct qv_appender *a, const struct ArrowArray *src, int64_t start,
                       int64_t count) {
    char path[256];
    struct qv_error e = {0};
    if (qv_arrow_array_validate(src, a->field, QV_VALIDATE_CHEAP, &e))
        return qv__builder_poison(a->builder, EINVAL, "column '%s': bulk source: %s",
                                  qv__appender_path(a, path, sizeof path), e.message);
    if (start < 0 || count < 0 || start > src->length - count)
        return bad_source(a, "slice of %lld rows at %lld is outside the array", count, start);
    if (a->open_at >= 0)
        return qv__builder_poison(a->builder, EINVAL,
                                  "column '%s': bulk append inside an open nested value",
                                  qv__appender_path(a, path, sizeof path));
    /* A top-level non-nullable column must not receive nulls. Deeper down
     * the source's validity is copied as is: Arrow allows slots under a null
     * parent to be null whatever the child's flag. */
    const uint8_t *sv = a->kind == QV__K_NULL ? NULL : src->buffers[0];
    if (a->top_level && !a->nullable && count > 0 &&
        (a->kind == QV__K_NULL || (sv && src->null_count != 0 &&
                                   qv_bits_count(sv, src->offset + start, count) != count)))
        return qv__builder_poison(a->builder, EINVAL,
                                  "column '%s': bulk source has nulls for a non-nullable column",
                                  qv__appender_path(a, path, sizeof path));
    return 0;
}

int qv_append_array(struct qv_appender *a, const struct ArrowArray *src, int64_t start,
                    int64_t count) {
    struct qv_builder *b = a->builder;
    if (b->poisoned) return b->poisoned;
    int rc = check_slice(a, src, start, count);
    if (rc) return rc;
    return copy_range(a, src, src->offset + start, count);
}

int qv_builder_append_batch(struct qv_builder *b, const struct ArrowArray *src, int64_t start,
                            int64_t count, struct qv_error *err) {
    if (!b) return qv_error_set(err, EINVAL, "builder append batch: NULL builder");
    if (b->poisoned) return qv_error_set(err, b->poisoned, "%s", b->error.message);
    struct qv_appender *root = &b->nodes[0];
    struct qv_error e = {0};
    int rc = 0;
    if (qv_arrow_array_validate(src, root->field, QV_VALIDATE_CHEAP, &e)) {
        rc = qv__builder_poison(b, EINVAL, "append batch: source: %s", e.message);
    } else if (start < 0 || count < 0 || start > src->length - count) {
        rc = qv__builder_poison(b, EINVAL, "append batch: slice of %lld rows at %lld is outside "
                                "the %lld-row source", (long long)count, (long long)start,
                                (long long)src->length);
    } else if (src->buffers[0] && src->null_count != 0 && count > 0 &&
               qv_bits_count(src->buffers[0], src->offset + start, count) != count) {
        /* A record batch has no null rows; a struct array with some is not
         * one, and its null rows have no meaning as rows. */
        rc = qv__builder_poison(b, EINVAL, "append batch: the source has null rows at the top level");
    }
    for (int64_t c = 0; rc == 0 && c < root->n_children; c++) {
        const struct ArrowArray *sc = src->children[c];
        rc = check_slice(&root->children[c], sc, src->offset + start, count);
    }
    for (int64_t c = 0; rc == 0 && c < root->n_children; c++) {
        const struct ArrowArray *sc = src->children[c];
        rc = copy_range(&root->children[c], sc, sc->offset + src->offset + start, count);
    }
    if (rc) return qv_error_set(err, rc, "%s", b->error.message);
    /* Without columns no child carries the row count: the root keeps it, so
     * a batch of rows with no columns (a count) is not emptied. */
    if (root->n_children == 0) root->length += count;
    return 0;
}
