/* Error records: every failure carries a code and a message naming what and where. */
#include <stdio.h>
#include <string.h>

#include "base/corrupt.h"
#include "quiver/base.h"

void qv_error_clear(struct qv_error *err) {
    if (!err) return;
    err->code = 0;
    err->kind = QV_ERROR_NONE;
    err->message[0] = '\0';
}

static int error_vset(struct qv_error *err, int code, enum qv_error_kind kind, const char *fmt,
                      va_list ap) {
    err->code = code;
    err->kind = kind;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return code;
}

int qv_error_set(struct qv_error *err, int code, const char *fmt, ...) {
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, qv_error_kind_of(code), fmt, ap);
    va_end(ap);
    return code;
}

int qv_error_set_kind(struct qv_error *err, int code, enum qv_error_kind kind, const char *fmt,
                      ...) {
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, kind, fmt, ap);
    va_end(ap);
    return code;
}

enum qv_error_kind qv_error_kind_of(int code) {
    switch (code) {
    case 0: return QV_ERROR_NONE;
    case ENOENT: return QV_ERROR_NOT_FOUND;
    case ENOMEM: return QV_ERROR_OUT_OF_MEMORY;
    case EINVAL:
    case ERANGE:
    case EOVERFLOW: return QV_ERROR_INVALID_ARGUMENT;
    case ENOSYS:
#if defined(ENOTSUP) && ENOTSUP != ENOSYS
    case ENOTSUP:
#endif
        return QV_ERROR_NOT_SUPPORTED;
    case ECANCELED: return QV_ERROR_CANCELLED;
    case ESTALE: return QV_ERROR_CHANGED;
    default: return QV_ERROR_IO;
    }
}

const char *qv_error_kind_name(enum qv_error_kind kind) {
    switch (kind) {
    case QV_ERROR_NONE: return "none";
    case QV_ERROR_NOT_FOUND: return "not_found";
    case QV_ERROR_CORRUPT: return "corrupt";
    case QV_ERROR_IO: return "io";
    case QV_ERROR_OUT_OF_MEMORY: return "out_of_memory";
    case QV_ERROR_INVALID_ARGUMENT: return "invalid_argument";
    case QV_ERROR_NOT_SUPPORTED: return "not_supported";
    case QV_ERROR_CANCELLED: return "cancelled";
    case QV_ERROR_CHANGED: return "changed";
    }
    return "unknown";
}

int qv_error_wrap(struct qv_error *err, int code, const char *fmt, ...) {
    if (!err) return code;
    if (err->code == 0) {
        err->code = code;
        err->kind = qv_error_kind_of(code);
    }
    char prefix[QV_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0) return err->code;
    /* Shift the old message right and put the prefix in front, truncating
     * the tail when the two do not fit. */
    size_t plen = strlen(prefix), mlen = strlen(err->message), cap = sizeof err->message - 1;
    if (plen > cap) plen = cap;
    if (plen + mlen > cap) mlen = cap - plen;
    memmove(err->message + plen, err->message, mlen);
    memcpy(err->message, prefix, plen);
    err->message[plen + mlen] = '\0';
    return err->code;
}

const char *qv_errno_name(int code) {
    switch (code) {
    case 0: return "OK";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EIO: return "EIO";
    case ECANCELED: return "ECANCELED";
    case ENOSYS: return "ENOSYS";
    case EOVERFLOW: return "EOVERFLOW";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case ERANGE: return "ERANGE";
    case EACCES: return "EACCES";
    case ENOSPC: return "ENOSPC";
    /* What opening, writing and renaming files can also report. */
    case EPERM: return "EPERM";
    case EISDIR: return "EISDIR";
    case ENOTDIR: return "ENOTDIR";
    case EFBIG: return "EFBIG";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ELOOP: return "ELOOP";
    case EROFS: return "EROFS";
    case EDQUOT: return "EDQUOT";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EXDEV: return "EXDEV";
    case ENXIO: return "ENXIO";
    case ETXTBSY: return "ETXTBSY";
    case EAGAIN: return "EAGAIN";
    case EINTR: return "EINTR";
    case EBADF: return "EBADF";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ESTALE: return "ESTALE";
    default: return "E?";
    }
}

/* ---- corrupt input (base/corrupt.h) ---- */

int qv__corrupt_setv(struct qv_error *err, const char *fmt, va_list ap) {
    if (!err) return EIO;
    return error_vset(err, EIO, QV_ERROR_CORRUPT, fmt, ap);
}

int qv__corrupt_set(struct qv_error *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = qv__corrupt_setv(err, fmt, ap);
    va_end(ap);
    return rc;
}

int qv__corrupt_mark(struct qv_error *err) {
    if (err) {
        err->code = EIO;
        err->kind = QV_ERROR_CORRUPT;
    }
    return EIO;
}
