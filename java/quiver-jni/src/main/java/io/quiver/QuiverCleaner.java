package io.quiver;

import java.lang.ref.Cleaner;

/**
 * The one {@link Cleaner} of Quiver's Java handles: it releases the native
 * side of a reader or writer that became unreachable without being closed.
 * Its actions refer only to native state, never to the handle they clean.
 */
final class QuiverCleaner {
    static final Cleaner CLEANER = Cleaner.create();

    private QuiverCleaner() {}
}
