/*
 * Reporting corrupt input: bytes of a file or an encoded buffer that break
 * a rule of docs/format.md. Such an error is EIO with the kind
 * QV_ERROR_CORRUPT, so a front end can tell "this file is damaged" from
 * "the system failed a read" (EIO of kind QV_ERROR_IO, which qv_error_set
 * gives EIO by default). Every check of untrusted bytes reports through
 * these functions; none assigns err->code itself, which would leave the kind
 * behind.
 */
#ifndef QV_BASE_CORRUPT_H
#define QV_BASE_CORRUPT_H

#include <stdarg.h>

#include "quiver/base.h"

/* Records EIO, kind QV_ERROR_CORRUPT, and the message (err may be NULL).
 * Returns EIO, so a check reads `return qv__corrupt_set(err, "...", ...)`. */
int qv__corrupt_set(struct qv_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int qv__corrupt_setv(struct qv_error *err, const char *fmt, va_list ap);

/* Turns an error a lower layer recorded while it looked at bytes of a file
 * (a schema check's EINVAL, say) into corruption: code EIO, kind
 * QV_ERROR_CORRUPT, message kept. Returns EIO. */
int qv__corrupt_mark(struct qv_error *err);

#endif
