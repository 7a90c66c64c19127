/* Logical equality of two Arrow arrays of one type: what a reader, a round
 * trip or a bulk copy must preserve. Physical layout (offsets, buffer
 * sharing, values under nulls) is free to differ. Floats compare by bit
 * pattern, because a round trip must keep NaN payloads and the sign of zero. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arrow/arrow_internal.h"

struct cctx {
    char *why;
    size_t cap;
    struct qv__path path;
};

static bool differ(struct cctx *c, int64_t row, const char *fmt, long long x, long long y) {
    if (c->why && c->cap) {
        char what[160];
        snprintf(what, sizeof what, fmt, x, y);
        snprintf(c->why, c->cap, "field '%s' index %lld: %s", qv__path_str(&c->path),
                 (long long)row, what);
    }
    return false;
}

static bool valid_at(const struct ArrowArray *a, const struct qv_field *f, int64_t phys) {
    if (f->type == QV_TYPE_NULL) return false;
    const uint8_t *v = a->buffers[0];
    return !v || qv_bit_get(v, phys);
}

static int64_t off_at(const struct ArrowArray *a, bool wide, int64_t i) {
    return wide ? ((const int64_t *)a->buffers[1])[i] : ((const int32_t *)a->buffers[1])[i];
}


/* Compares n slots: a's logical slots from ai, b's from bi (physical = the
 * array's offset + logical). */
static bool eq_range(struct cctx *c, const struct qv_field *f, const struct ArrowArray *a,
                     int64_t ai, const struct ArrowArray *b, int64_t bi, int64_t n);

static bool eq_child(struct cctx *c, const struct qv_field *f, const struct ArrowArray *a,
                     int64_t ai, const struct ArrowArray *b, int64_t bi, int64_t n) {
    size_t mark = qv__path_push(&c->path, f->name);
    bool ok = eq_range(c, f, a, ai, b, bi, n);
    if (ok) qv__path_pop(&c->path, mark);
    return ok; /* on a difference, keep the path for the message */
}

static bool eq_range(struct cctx *c, const struct qv_field *f, const struct ArrowArray *a,
                     int64_t ai, const struct ArrowArray *b, int64_t bi, int64_t n) {
    int w = qv__field_fixed_width(f);
    for (int64_t j = 0; j < n; j++) {
        int64_t pa = a->offset + ai + j, pb = b->offset + bi + j;
        bool va = valid_at(a, f, pa), vb = valid_at(b, f, pb);
        if (va != vb) return differ(c, ai + j, "validity %lld != %lld", va, vb);
        if (!va) continue;
        switch (f->type) {
        case QV_TYPE_BOOL: {
            int x = qv_bit_get(a->buffers[1], pa), y = qv_bit_get(b->buffers[1], pb);
            if (x != y) return differ(c, ai + j, "bool %lld != %lld", x, y);
            break;
        }
        case QV_TYPE_UTF8:
        case QV_TYPE_LARGE_UTF8:
        case QV_TYPE_BINARY:
        case QV_TYPE_LARGE_BINARY: {
            bool wide = f->type == QV_TYPE_LARGE_UTF8 || f->type == QV_TYPE_LARGE_BINARY;
            int64_t as = off_at(a, wide, pa), al = off_at(a, wide, pa + 1) - as;
            int64_t bs = off_at(b, wide, pb), bl = off_at(b, wide, pb + 1) - bs;
            if (al != bl) return differ(c, ai + j, "value lengths %lld != %lld", al, bl);
            if (al && memcmp((const uint8_t *)a->buffers[2] + as, (const uint8_t *)b->buffers[2] + bs,
                             (size_t)al) != 0)
                return differ(c, ai + j, "bytes of %lld-byte values differ", al, 0);
            break;
        }
        case QV_TYPE_STRUCT:
            for (int64_t k = 0; k < f->n_children; k++)
                if (!eq_child(c, &f->children[k], a->children[k], pa, b->children[k], pb, 1))
                    return false;
            break;
        case QV_TYPE_LIST:
        case QV_TYPE_LARGE_LIST:
        case QV_TYPE_MAP: {
            bool wide = f->type == QV_TYPE_LARGE_LIST;
            int64_t as = off_at(a, wide, pa), al = off_at(a, wide, pa + 1) - as;
            int64_t bs = off_at(b, wide, pb), bl = off_at(b, wide, pb + 1) - bs;
            if (al != bl) return differ(c, ai + j, "list sizes %lld != %lld", al, bl);
            if (!eq_child(c, &f->children[0], a->children[0], as, b->children[0], bs, al))
                return false;
            break;
        }
        case QV_TYPE_FIXED_LIST: {
            int64_t s = f->list_size;
            if (!eq_child(c, &f->children[0], a->children[0], pa * s, b->children[0], pb * s, s))
                return false;
            break;
        }
        default:
            if (w > 0 && memcmp((const uint8_t *)a->buffers[1] + pa * w,
                                (const uint8_t *)b->buffers[1] + pb * w, (size_t)w) != 0) {
                long long x = 0, y = 0;
                if (w <= 8) {
                    memcpy(&x, (const uint8_t *)a->buffers[1] + pa * w, (size_t)w);
                    memcpy(&y, (const uint8_t *)b->buffers[1] + pb * w, (size_t)w);
                }
                return differ(c, ai + j, "values differ (raw %lld != %lld)", x, y);
            }
            break;
        }
    }
    return true;
}

bool qv_arrow_array_equal(const struct qv_field *field, const struct ArrowArray *a,
                          const struct ArrowArray *b, char *why, size_t why_cap) {
    struct cctx c = {why, why_cap, {0}};
    qv__path_init(&c.path);
    if (why && why_cap) why[0] = '\0';
    if (!field || !a || !b || !a->release || !b->release) {
        if (why && why_cap) snprintf(why, why_cap, "a NULL or released argument");
        return false;
    }
    if (a->length != b->length) {
        if (why && why_cap)
            snprintf(why, why_cap, "lengths %lld != %lld", (long long)a->length, (long long)b->length);
        return false;
    }
    return eq_range(&c, field, a, 0, b, 0, a->length);
}
