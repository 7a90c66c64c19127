package io.quiver;

/** No such file, column or field (ENOENT) ({@link ErrorKind#NOT_FOUND}). */
public class QuiverNotFoundException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverNotFoundException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverNotFoundException(int errno, String message, Throwable cause) {
        super(ErrorKind.NOT_FOUND, errno, message, cause);
    }
}
