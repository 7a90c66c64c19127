package io.quiver;

/** A memory limit or an allocation failed (ENOMEM); the message names the pool or budget ({@link ErrorKind#OUT_OF_MEMORY}). */
public class QuiverOutOfMemoryException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverOutOfMemoryException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverOutOfMemoryException(int errno, String message, Throwable cause) {
        super(ErrorKind.OUT_OF_MEMORY, errno, message, cause);
    }
}
