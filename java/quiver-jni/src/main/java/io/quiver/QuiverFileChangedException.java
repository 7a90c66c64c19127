package io.quiver;

/** The file changed since it was planned: its identity is not the one expected (ESTALE) ({@link ErrorKind#CHANGED}). */
public class QuiverFileChangedException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverFileChangedException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverFileChangedException(int errno, String message, Throwable cause) {
        super(ErrorKind.CHANGED, errno, message, cause);
    }
}
