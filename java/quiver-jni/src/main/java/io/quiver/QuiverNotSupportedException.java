package io.quiver;

/** Valid, but not supported (ENOSYS), such as a platform without a native library in the jar ({@link ErrorKind#NOT_SUPPORTED}). */
public class QuiverNotSupportedException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverNotSupportedException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverNotSupportedException(int errno, String message, Throwable cause) {
        super(ErrorKind.NOT_SUPPORTED, errno, message, cause);
    }
}
