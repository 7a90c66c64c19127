/* LEB128 varints (at most 10 bytes), shared by the encodings' tree headers
 * and the file footer. Internal to the library. */
#ifndef QUIVER_BASE_VARINT_H
#define QUIVER_BASE_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes qv__varint_put writes for v (1..10). */
static inline size_t qv__varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}
/* Writes v at p (room for 10 bytes); returns the bytes written. */
static inline size_t qv__varint_put(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}
/* Reads a varint at *pos < end; 0 or -1 (truncated / overlong). */
static inline int qv__varint_get(const uint8_t *p, size_t end, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned i = 0, shift = 0; i < 10; i++, shift += 7) {
        if (*pos >= end) return -1;
        uint8_t b = p[(*pos)++];
        if (i == 9 && b > 1) return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

#endif
