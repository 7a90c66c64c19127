package io.quiver.spark.write;

/**
 * The failures of a clean-up that must go on past each one (every child
 * aborted, every resource released, the staged folder removed): the first
 * is kept and the later ones are attached to it as suppressed, so that one
 * throw at the end reports them all. Only unchecked throwables
 * ({@link RuntimeException}, {@link Error}) are gathered: the writers' calls
 * throw nothing else.
 */
final class FirstFailure {
    private Throwable first;

    /** Keeps {@code t} if it is the first, else attaches it to the first. */
    void add(Throwable t) {
        if (first == null) {
            first = t;
        } else {
            first.addSuppressed(t);
        }
    }

    /** Throws the first failure as it was, if there was one. */
    void rethrow() {
        if (first instanceof Error err) {
            throw err;
        }
        if (first != null) {
            throw (RuntimeException) first;
        }
    }

    /** Attaches the first failure, if there was one, to {@code cause} (which the caller throws). */
    void suppressInto(Throwable cause) {
        if (first != null) {
            cause.addSuppressed(first);
        }
    }

    /**
     * Runs {@code abort} after {@code cause} ended a commit, so the commit
     * releases everything before it throws; a failure of the abort itself
     * is attached to {@code cause} rather than hiding it.
     */
    static void abortAfter(Throwable cause, Runnable abort) {
        try {
            abort.run();
        } catch (RuntimeException | Error s) {
            cause.addSuppressed(s);
        }
    }
}
