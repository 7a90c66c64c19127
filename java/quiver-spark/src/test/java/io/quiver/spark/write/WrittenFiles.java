package io.quiver.spark.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
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

    /** Bytes of every regular file under {@code dir} (0 if it is null or does not exist). */
    static long bytesUnder(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return 0;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).mapToLong(f -> f.toFile().length()).sum();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String sha256(Path p) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
