package io.quiver;

/** A bad argument or input (EINVAL, ERANGE, EOVERFLOW) ({@link ErrorKind#INVALID_ARGUMENT}). */
public class QuiverInvalidArgumentException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverInvalidArgumentException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverInvalidArgumentException(int errno, String message, Throwable cause) {
        super(ErrorKind.INVALID_ARGUMENT, errno, message, cause);
    }
}
