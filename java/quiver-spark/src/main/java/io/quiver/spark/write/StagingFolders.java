package io.quiver.spark.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * File-system steps of the commit protocol: making the folders of a task
 * attempt and removing a staging tree. A tree that is already gone is not
 * an error (abort and cleanup run again after partial failures); symbolic
 * links are removed, never followed.
 */
final class StagingFolders {
    private StagingFolders() {}

    /**
     * Makes {@code dir} and the folders between it and {@code base}, which
     * must exist: when the job's staging folder {@code base} is gone (the job
     * was aborted while this task ran), the task fails naming it instead of
     * making it again.
     */
    static void createBelow(Path base, Path dir) {
        Path rel = base.relativize(dir);
        Path p = base;
        for (Path name : rel) {
            p = p.resolve(name);
            try {
                Files.createDirectory(p);
            } catch (FileAlreadyExistsException e) {
                if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    throw new UncheckedIOException("quiver: cannot stage a file in '" + p + "': not a folder", e);
                }
            } catch (NoSuchFileException e) {
                throw new UncheckedIOException("quiver: the staging folder '" + base
                        + "' is gone: the write job was aborted or committed while this task ran", e);
            } catch (IOException e) {
                throw new UncheckedIOException("quiver: cannot create the staging folder '" + p + "': " + e, e);
            }
        }
    }

    /**
     * Removes a job's staging tree even while tasks of the job may still be
     * writing in it (Spark aborts a job without waiting for its running
     * tasks): the tree is first renamed away, so no task can make files
     * under its old name ({@link #createBelow} refuses), then removed, again
     * a few times if a task still added a file during the walk.
     */
    static void deleteStaging(Path staging) {
        Path gone = staging.resolveSibling(staging.getFileName() + ".aborted");
        Path victim = staging;
        try {
            Files.move(staging, gone, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            victim = gone;
        } catch (NoSuchFileException e) {
            victim = gone; // renamed by an earlier abort, or never made
        } catch (IOException e) {
            // Not renamable (another file system, permissions): removed in place.
        }
        RuntimeException last = null;
        for (int i = 0; i < 5; i++) {
            try {
                deleteTree(victim);
                return;
            } catch (RuntimeException e) {
                last = e;
            }
        }
        throw last;
    }

    /** Removes {@code p} and everything under it; nothing when it does not exist. */
    static void deleteTree(Path p) {
        try {
            deleteTreeChecked(p);
        } catch (IOException e) {
            throw new UncheckedIOException("quiver: cannot remove '" + p + "': " + e.getMessage(), e);
        }
    }

    private static void deleteTreeChecked(Path p) throws IOException {
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(p)) {
                for (Path c : s) {
                    deleteTreeChecked(c);
                }
            } catch (NoSuchFileException e) {
                return;
            }
        }
        Files.deleteIfExists(p);
    }
}
