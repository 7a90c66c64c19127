package io.quiver.spark.write;

/**
 * A value that could not be written, with the path of the column it
 * belongs to ("s.items.element"). Field writers throw it; the row writer
 * adds the row number and turns it into the exception its caller sees.
 */
final class FieldWriteException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String path;

    FieldWriteException(String path, String message) {
        super(message);
        this.path = path;
    }

    FieldWriteException(String path, RuntimeException cause) {
        super(describe(cause), cause);
        this.path = path;
    }

    /** The dotted path of the column whose value failed. */
    String path() {
        return path;
    }

    private static String describe(RuntimeException cause) {
        String m = cause.getMessage();
        return m == null ? cause.getClass().getName() : cause.getClass().getSimpleName() + ": " + m;
    }
}
