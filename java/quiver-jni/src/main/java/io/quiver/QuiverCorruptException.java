package io.quiver;

/** Bytes that fail a check: a magic number, a checksum, a bound; the message names the file, column and row group ({@link ErrorKind#CORRUPT}). */
public class QuiverCorruptException extends QuiverException {
    private static final long serialVersionUID = 1L;

    public QuiverCorruptException(int errno, String message) {
        this(errno, message, null);
    }

    public QuiverCorruptException(int errno, String message, Throwable cause) {
        super(ErrorKind.CORRUPT, errno, message, cause);
    }
}
