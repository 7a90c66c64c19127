/* Bitmap helpers for Arrow validity and boolean buffers (LSB-first bit order). */
#include <string.h>

#include "base/cpu_internal.h"
#include "quiver/base.h"

/* Counting is a popcount per word: without POPCNT (baseline x86-64) the
 * compiler calls a bit-twiddling routine four times slower, so an
 * SSE4.2/POPCNT variant is chosen at run time (base/cpu_internal.h). */
static QV__ALWAYS_INLINE int64_t bits_count_body(const uint8_t *bits, int64_t offset,
                                                 int64_t length) {
    int64_t count = 0, i = offset, end = offset + length;
    while (i < end && (i & 7)) count += qv_bit_get(bits, i++);
    while (i + 64 <= end) {
        uint64_t w;
        memcpy(&w, bits + (i >> 3), 8);
        count += __builtin_popcountll(w);
        i += 64;
    }
    while (i + 8 <= end) {
        count += __builtin_popcount(bits[i >> 3]);
        i += 8;
    }
    while (i < end) count += qv_bit_get(bits, i++);
    return count;
}

static int64_t bits_count_generic(const uint8_t *bits, int64_t offset, int64_t length) {
    return bits_count_body(bits, offset, length);
}
#if QV__X86_DISPATCH
static QV__TARGET_SSE42 int64_t bits_count_sse42(const uint8_t *bits, int64_t offset,
                                                 int64_t length) {
    return bits_count_body(bits, offset, length);
}
#endif

int64_t qv_bits_count(const uint8_t *bits, int64_t offset, int64_t length) {
    return QV__DISPATCH_SSE42(bits_count, bits, offset, length);
}

void qv_bits_copy(uint8_t *dst, int64_t dst_off, const uint8_t *src, int64_t src_off,
                  int64_t length) {
    if (length <= 0) return;
    if ((dst_off & 7) == 0 && (src_off & 7) == 0) {
        int64_t whole = length >> 3;
        memcpy(dst + (dst_off >> 3), src + (src_off >> 3), (size_t)whole);
        for (int64_t i = whole << 3; i < length; i++)
            qv_bit_put(dst, dst_off + i, qv_bit_get(src, src_off + i));
        return;
    }
    for (int64_t i = 0; i < length; i++)
        qv_bit_put(dst, dst_off + i, qv_bit_get(src, src_off + i));
}

void qv_bits_fill(uint8_t *bits, int64_t offset, int64_t length, int value) {
    int64_t i = offset, end = offset + length;
    while (i < end && (i & 7)) qv_bit_put(bits, i++, value);
    if (i + 8 <= end) {
        int64_t nbytes = (end - i) >> 3;
        memset(bits + (i >> 3), value ? 0xff : 0, (size_t)nbytes);
        i += nbytes << 3;
    }
    while (i < end) qv_bit_put(bits, i++, value);
}
