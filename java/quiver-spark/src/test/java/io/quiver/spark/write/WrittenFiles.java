package io.quiver.spark.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * What a write left on disk, for the tests that check a commit or an abort:
 * every regular file under a folder, hidden and staging ones included, by
 * path relative to the folder, with a SHA-256 of its bytes, so "nothing was
 * left" and "the prior dataset is untouched" are exact comparisons.
 */
final class WrittenFiles {
    private WrittenFiles() {}

    /** Relative path -> SHA-256 of the bytes, of every regular file under {@code dir} (empty if it does not exist). */
    static Map<String, String> under(Path dir) {
        Map<String, String> out = new TreeMap<>();
        if (!Files.exists(dir)) {
            return out;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                if (Files.isRegularFile(p)) {
                    out.put(dir.relativize(p).toString(), sha256(p));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /** Relative paths of every folder under {@code dir} (not {@code dir} itself). */
    static java.util.Set<String> foldersUnder(Path dir) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        if (!Files.exists(dir)) {
            return out;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                if (Files.isDirectory(p) && !p.equals(dir)) {
                    out.add(dir.relativize(p).toString());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /**
     * Bytes a running task attempt has written so far, measured from inside
     * the attempt (the retry test's UDF; local mode, so the same process):
     * the regular files under {@code target} inside a folder named
     * {@code attemptFolder} (named temporaries, finished files), plus the
     * unnamed files ({@code O_TMPFILE}, docs/format.md "Writing.") this
     * process holds open in such a folder, which no directory walk sees:
     * their {@code /proc/self/fd} link reads {@code <folder>/#<inode> (deleted)}.
     * Other tasks may be writing or deleting their own folders meanwhile, so
     * a file, folder or descriptor that vanishes mid-walk counts as 0.
     */
    static long attemptBytes(Path target, String attemptFolder) {
        if (target == null || !Files.exists(target)) {
            return 0;
        }
        long[] total = {0};
        try {
            Files.walkFileTree(target, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes a) {
                    if (a.isRegularFile() && inFolder(target, f, attemptFolder)) {
                        total[0] += a.size();
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path f, IOException e) throws IOException {
                    if (e instanceof NoSuchFileException) {
                        return FileVisitResult.CONTINUE;
                    }
                    throw e;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                    if (e != null && !(e instanceof NoSuchFileException)) {
                        throw e;
                    }
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (NoSuchFileException gone) {
            // the folder went away: what was counted stands
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Path fds = Path.of("/proc/self/fd");
        if (!Files.isDirectory(fds)) {
            return total[0];
        }
        String deleted = " (deleted)";
        try (Stream<Path> s = Files.list(fds)) {
            for (Path fd : (Iterable<Path>) s::iterator) {
                try {
                    String link = Files.readSymbolicLink(fd).toString();
                    if (!link.endsWith(deleted)) {
                        continue;
                    }
                    Path file = Path.of(link.substring(0, link.length() - deleted.length()));
                    if (file.getFileName().toString().startsWith("#") && inFolder(target, file, attemptFolder)) {
                        total[0] += Files.size(fd);
                    }
                } catch (IOException | java.nio.file.InvalidPathException closed) {
                    // closed (or not a path) since the listing: nothing to count
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return total[0];
    }

    /** Whether {@code f} lies under {@code target} inside a folder named {@code folder}. */
    private static boolean inFolder(Path target, Path f, String folder) {
        if (!f.startsWith(target)) {
            return false;
        }
        for (Path part : target.relativize(f)) {
            if (part.toString().equals(folder)) {
                return true;
            }
        }
        return false;
    }

    private static String sha256(Path p) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
