/*
 * Quiver base: errors, aligned allocation, bit utilities, checksums, and the
 * two system facts front ends ask for (CPU count, monotonic time).
 *
 * Error convention: a function that can fail returns int, 0 on success or an
 * errno value (EINVAL bad argument or input, ENOMEM memory limit or allocation
 * failure, EIO I/O or corrupt data, ECANCELED, ENOSYS unsupported, EOVERFLOW).
 * It also takes an optional `struct qv_error *` (NULL-safe) that receives a
 * message naming the object, the operation and the offending value.
 */
#ifndef QUIVER_BASE_H
#define QUIVER_BASE_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QV_VERSION_MAJOR 0
#define QV_VERSION_MINOR 1
#define QV_VERSION_PATCH 0
#define QV_VERSION_STRING "0.1.0"

/* Data buffers are aligned to and padded to this many bytes. */
#define QV_ALIGNMENT 64u

/* QV_API marks the library's exported functions: the shared library is
 * built with -fvisibility=hidden and exports exactly what carries it. */
#if defined(QV_BUILDING_LIBRARY) && defined(__GNUC__)
#define QV_API __attribute__((visibility("default")))
#else
#define QV_API
#endif

#define QV_ERROR_MESSAGE_MAX 1024

/* What kind of failure an error is: stable across releases, for front ends
 * to map to their own exception classes. The errno value says what the
 * system or the library saw; the kind says what the caller should think of
 * it (EIO, for one, is CORRUPT when bytes failed a check and IO when a read
 * failed). */
enum qv_error_kind {
    QV_ERROR_NONE = 0,
    QV_ERROR_NOT_FOUND,        /* ENOENT: no such file, column or field */
    QV_ERROR_CORRUPT,          /* bytes that fail a check: magic, checksum, bounds */
    QV_ERROR_IO,               /* the system failed a read or write (EIO, ENOSPC, EACCES, ...) */
    QV_ERROR_OUT_OF_MEMORY,    /* ENOMEM: a memory limit or an allocation */
    QV_ERROR_INVALID_ARGUMENT, /* EINVAL, ERANGE, EOVERFLOW: bad argument or input */
    QV_ERROR_NOT_SUPPORTED,    /* ENOSYS: valid, but not supported */
    QV_ERROR_CANCELLED,        /* ECANCELED */
    QV_ERROR_CHANGED           /* ESTALE: the file changed since it was planned */
};

/* Stack-allocatable error record. `code` mirrors the returned errno value;
 * `kind` is set with it (from the code, unless the site said otherwise). */
struct qv_error {
    int code;
    int kind; /* enum qv_error_kind */
    char message[QV_ERROR_MESSAGE_MAX];
};

/* Clears `err` (NULL-safe). */
QV_API void qv_error_clear(struct qv_error *err);

/* Records `code` and a printf-style message in `err` (NULL-safe) and returns
 * `code`, so a failure path can be `return qv_error_set(err, EINVAL, ...)`. */
QV_API int qv_error_set(struct qv_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prepends context ("reading column 'x': ") to an existing message, keeping
 * the code. Returns err->code (or `code` when err is NULL). */
QV_API int qv_error_wrap(struct qv_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* As qv_error_set, with an explicit kind (e.g. QV_ERROR_CORRUPT for EIO
 * raised by a failed check). */
QV_API int qv_error_set_kind(struct qv_error *err, int code, enum qv_error_kind kind,
                      const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The kind an errno value has when its site did not say: ENOENT NOT_FOUND,
 * ENOMEM OUT_OF_MEMORY, EINVAL / ERANGE / EOVERFLOW INVALID_ARGUMENT, ENOSYS /
 * ENOTSUP NOT_SUPPORTED, ECANCELED CANCELLED, ESTALE CHANGED, 0 NONE, any
 * other value IO. */
QV_API enum qv_error_kind qv_error_kind_of(int code);

/* Stable lower-case name of a kind ("not_found", "corrupt", ...). Never NULL. */
QV_API const char *qv_error_kind_name(enum qv_error_kind kind);

/* Name of an errno value as Quiver uses it ("EINVAL", ...). Never NULL. */
QV_API const char *qv_errno_name(int code);

/* ---- Aligned allocation (untracked; the memory part builds on these) ---- */

/* Rounds `n` up to a multiple of QV_ALIGNMENT; returns 0 on overflow. */
static inline size_t qv_align_up(size_t n) {
    size_t r = (n + (QV_ALIGNMENT - 1)) & ~(size_t)(QV_ALIGNMENT - 1);
    return r < n ? 0 : r;
}

/* 64-byte aligned allocation of `size` bytes (size rounded up to 64).
 * Returns NULL on failure or when size is 0. Release with qv_aligned_free. */
QV_API void *qv_aligned_alloc(size_t size);
QV_API void qv_aligned_free(void *ptr);

/* ---- Bit utilities ---- */

static inline int qv_bit_get(const uint8_t *bits, int64_t i) {
    return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void qv_bit_set(uint8_t *bits, int64_t i) {
    bits[i >> 3] = (uint8_t)(bits[i >> 3] | (1u << (i & 7)));
}
static inline void qv_bit_clear(uint8_t *bits, int64_t i) {
    bits[i >> 3] = (uint8_t)(bits[i >> 3] & ~(1u << (i & 7)));
}
static inline void qv_bit_put(uint8_t *bits, int64_t i, int v) {
    if (v) qv_bit_set(bits, i); else qv_bit_clear(bits, i);
}
/* Number of bytes holding `n` bits. */
static inline int64_t qv_bytes_for_bits(int64_t n) { return (n + 7) >> 3; }

/* Bits needed to represent v (0 for v == 0). */
static inline unsigned qv_bit_width64(uint64_t v) {
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}
static inline uint64_t qv_next_pow2_64(uint64_t v) {
    if (v <= 1) return 1;
    return v > (UINT64_C(1) << 63) ? 0 : UINT64_C(1) << (64 - __builtin_clzll(v - 1));
}
static inline uint64_t qv_zigzag_encode64(int64_t v) {
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t qv_zigzag_decode64(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}
/* Counts set bits in bits[offset, offset + length). */
QV_API int64_t qv_bits_count(const uint8_t *bits, int64_t offset, int64_t length);
/* Copies `length` bits from src at src_off to dst at dst_off. */
QV_API void qv_bits_copy(uint8_t *dst, int64_t dst_off, const uint8_t *src, int64_t src_off,
                  int64_t length);
/* Sets bits[offset, offset + length) to `value`. */
QV_API void qv_bits_fill(uint8_t *bits, int64_t offset, int64_t length, int value);

/* Checked arithmetic: return nonzero on overflow. */
static inline int qv_add_overflow_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return __builtin_add_overflow(a, b, out);
}
static inline int qv_mul_overflow_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return __builtin_mul_overflow(a, b, out);
}

/* ---- Checksums (xxHash, XXH3 64-bit) ---- */
QV_API uint64_t qv_hash64(const void *data, size_t len, uint64_t seed);

/* ---- System facts ----
 * Front ends use these (the default number of scan workers, progress and
 * timing in `qv`); the library's thread wrappers are internal
 * (core/src/base/thread.h). */
/* Number of online CPUs (at least 1). */
QV_API int qv_cpu_count(void);
/* Monotonic clock in nanoseconds. */
QV_API uint64_t qv_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* QUIVER_BASE_H */
