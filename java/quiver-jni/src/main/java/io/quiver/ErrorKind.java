package io.quiver;

/**
 * What kind of failure a {@link QuiverException} is: the Java face of
 * {@code enum qv_error_kind} (core/include/quiver/base.h), in the same order
 * and with the same codes. The kind says what the caller should think of a
 * failure; the errno value ({@link QuiverException#errno()}) says what the
 * system or the library saw.
 */
public enum ErrorKind {
    /** No error (code 0); never the kind of a thrown exception. */
    NONE(0),
    /** ENOENT: no such file, column or field. */
    NOT_FOUND(1),
    /** Bytes that fail a check: magic, checksum, bounds. */
    CORRUPT(2),
    /** The system failed a read or write (EIO, ENOSPC, EACCES, ...). */
    IO(3),
    /** ENOMEM: a memory limit or an allocation. */
    OUT_OF_MEMORY(4),
    /** EINVAL, ERANGE, EOVERFLOW: a bad argument or input. */
    INVALID_ARGUMENT(5),
    /** ENOSYS: valid, but not supported. */
    NOT_SUPPORTED(6),
    /** ECANCELED. */
    CANCELLED(7),
    /** ESTALE: the file changed since it was planned. */
    CHANGED(8);

    private final int code;

    ErrorKind(int code) {
        this.code = code;
    }

    /** The value of the C enum. */
    public int code() {
        return code;
    }

    /**
     * The kind with C value {@code code}; {@link #IO} for a value this
     * version does not know (a newer native library), as the C library
     * itself treats an unknown errno.
     */
    public static ErrorKind of(int code) {
        ErrorKind[] all = values();
        return code >= 0 && code < all.length ? all[code] : IO;
    }
}
