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
     * Bytes of every regular file under {@code dir} (0 if it is null or does not exist).
     * Other tasks may be writing or deleting their own staging folders under
     * {@code dir} while this walks it (the retry test measures from inside a
     * running task), so a file or folder that vanishes mid-walk counts as 0.
     */
    static long bytesUnder(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return 0;
        }
        long[] total = {0};
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes a) {
                    if (a.isRegularFile()) {
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
            return total[0];
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return total[0];
    }

    private static String sha256(Path p) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
