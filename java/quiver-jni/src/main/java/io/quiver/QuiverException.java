package io.quiver;

import java.nio.charset.StandardCharsets;

/**
 * A failure reported by Quiver's native library (or by the Java API for the
 * same reasons). Unchecked. Every native error arrives as the subclass of
 * its {@link ErrorKind}, with Quiver's message, which names the object, the
 * operation and the offending value (a file, a column, a row group).
 *
 * <p>Catch a subclass ({@link QuiverNotFoundException},
 * {@link QuiverCorruptException}, ...) to handle one kind, or this class and
 * switch on {@link #kind()}.
 */
public class QuiverException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorKind kind;
    private final int errno;

    /** An error of {@code kind} with errno value {@code errno} (0 when none applies). */
    public QuiverException(ErrorKind kind, int errno, String message) {
        this(kind, errno, message, null);
    }

    public QuiverException(ErrorKind kind, int errno, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind == null ? ErrorKind.IO : kind;
        this.errno = errno;
    }

    /** What kind of failure this is. */
    public ErrorKind kind() {
        return kind;
    }

    /** The errno value the native library returned (EINVAL, ENOENT, ...), or 0. */
    public int errno() {
        return errno;
    }

    /**
     * The exception for a native error: the subclass of {@code kind} with the
     * message decoded from UTF-8 bytes. Malformed bytes (a file name that is
     * not UTF-8) become U+FFFD; building the exception never fails on its
     * text. Called by the JNI library (jni_errors.c) and by Java code that
     * turns native error records into exceptions.
     */
    public static QuiverException fromNative(int kind, int errno, byte[] message) {
        String text = message == null ? "" : new String(message, StandardCharsets.UTF_8);
        return create(ErrorKind.of(kind), errno, text, null);
    }

    /** The subclass of {@code kind} with {@code message} and {@code cause}. */
    public static QuiverException create(ErrorKind kind, int errno, String message, Throwable cause) {
        switch (kind == null ? ErrorKind.IO : kind) {
            case NOT_FOUND:
                return new QuiverNotFoundException(errno, message, cause);
            case CORRUPT:
                return new QuiverCorruptException(errno, message, cause);
            case OUT_OF_MEMORY:
                return new QuiverOutOfMemoryException(errno, message, cause);
            case INVALID_ARGUMENT:
                return new QuiverInvalidArgumentException(errno, message, cause);
            case NOT_SUPPORTED:
                return new QuiverNotSupportedException(errno, message, cause);
            case CANCELLED:
                return new QuiverCancelledException(errno, message, cause);
            case CHANGED:
                return new QuiverFileChangedException(errno, message, cause);
            case IO:
            case NONE:
            default:
                return new QuiverIOException(errno, message, cause);
        }
    }
}
