package io.quiver.spark.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * File-system steps of the commit protocol: removing a staging tree. A
 * tree that is already gone is not an error (abort and cleanup run again
 * after partial failures); symbolic links are removed, never followed.
 */
final class StagingFolders {
    private StagingFolders() {}

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
