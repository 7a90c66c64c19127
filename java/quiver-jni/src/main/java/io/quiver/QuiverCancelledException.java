package io.quiver;

/** An operation was cancelled (ECANCELED) ({@link ErrorKind#CANCELLED}). */
public class QuiverCancelledException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverCancelledException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverCancelledException(int errno, String message, Throwable cause) {
        super(ErrorKind.CANCELLED, errno, message, cause);
    }
}
