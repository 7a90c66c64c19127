package io.quiver;

/** The system failed a read or write (EIO, ENOSPC, EACCES, ...) ({@link ErrorKind#IO}). */
public class QuiverIOException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverIOException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverIOException(int errno, String message, Throwable cause) {
        super(ErrorKind.IO, errno, message, cause);
    }
}
