/* Footer wire primitives: a growable buffer charged to a reservation, and a
 * cursor whose every read is bounds-checked (a bad read sets a sticky flag
 * and returns zeros, so parsers check once per structure, not per field). */
#include <string.h>

#include "format/format_internal.h"

void qv__wbuf_init(struct qv__wbuf *b, struct qv_reservation *r) {
    memset(b, 0, sizeof *b);
    b->r = r;
}

void qv__wbuf_free(struct qv__wbuf *b) {
    if (b->data) qv_free(b->r, b->data, b->cap);
    b->data = NULL;
    b->size = b->cap = 0;
}

void qv__wbuf_put(struct qv__wbuf *b, const void *p, size_t n) {
    if (b->failed || n == 0) return;
    if (b->size + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->size + n) cap *= 2;
        uint8_t *d = qv_realloc(b->r, b->data, b->cap, cap, &b->err);
        if (!d) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->size, p, n);
    b->size += n;
}

void qv__wbuf_u8(struct qv__wbuf *b, uint8_t v) { qv__wbuf_put(b, &v, 1); }

void qv__wbuf_u64le(struct qv__wbuf *b, uint64_t v) {
    uint8_t t[8];
    qv__put_u64le(t, v);
    qv__wbuf_put(b, t, 8);
}

void qv__wbuf_varint(struct qv__wbuf *b, uint64_t v) {
    uint8_t t[10];
    qv__wbuf_put(b, t, qv__varint_put(t, v));
}

void qv__wbuf_svarint(struct qv__wbuf *b, int64_t v) { qv__wbuf_varint(b, qv_zigzag_encode64(v)); }

void qv__wbuf_bytes(struct qv__wbuf *b, const void *p, size_t n) {
    qv__wbuf_varint(b, n);
    qv__wbuf_put(b, p, n);
}

void qv__wbuf_str(struct qv__wbuf *b, const char *s) { qv__wbuf_bytes(b, s, s ? strlen(s) : 0); }

uint8_t qv__cur_u8(struct qv__cursor *c) {
    if (c->bad || c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    return *c->p++;
}

uint64_t qv__cur_u64le(struct qv__cursor *c) {
    if (c->bad || c->end - c->p < 8) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = qv__get_u64le(c->p);
    c->p += 8;
    return v;
}

uint64_t qv__cur_varint(struct qv__cursor *c) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t byte = qv__cur_u8(c);
        if (c->bad) return 0;
        if (shift == 63 && byte > 1) break; /* would overflow 64 bits */
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return v;
    }
    c->bad = 1;
    return 0;
}

int64_t qv__cur_svarint(struct qv__cursor *c) { return qv_zigzag_decode64(qv__cur_varint(c)); }

const uint8_t *qv__cur_bytes(struct qv__cursor *c, uint64_t *n) {
    uint64_t len = qv__cur_varint(c);
    if (c->bad || len > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        *n = 0;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += len;
    *n = len;
    return p;
}
