package io.quiver;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.LinkOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Loads Quiver's JNI library, {@code libquiver_jni.so}, once per JVM (more
 * precisely: once per class loader, see below). Every class with native
 * methods calls {@link #load()} before its first native call; the call is
 * cheap after the first and safe from any number of threads.
 *
 * <p>Where the library comes from, in order:
 * <ol>
 * <li>{@code java.library.path} ({@code System.loadLibrary("quiver_jni")}),
 *     so a deployment can supply its own build;</li>
 * <li>the jar: {@code /native/<os>-<os.arch>/libquiver_jni.so} (for example
 *     {@code /native/linux-amd64/}) is copied to a new file with a unique
 *     name in {@code <java.io.tmpdir>/quiver-jni-<user>/}, loaded, and the
 *     file deleted at once (the loaded library stays mapped). A JVM that dies
 *     between the copy and the delete leaves its copy behind; the next load
 *     in any JVM deletes the copies whose process is gone (their names carry
 *     the process id).</li>
 * </ol>
 *
 * <p>Failures are {@link QuiverNotSupportedException}s whose cause is the
 * JVM's {@link UnsatisfiedLinkError}: a platform the jar has no library for
 * (the message names the platform and the folder looked in), or a library
 * already loaded by another class loader of the same JVM, which JNI forbids
 * (the message says so). A failure is remembered: later calls throw again
 * without retrying.
 */
public final class NativeLibrary {
    /** The library's base name, as for System.loadLibrary. */
    public static final String NAME = "quiver_jni";

    private static final Pattern COPY = Pattern.compile("lib" + NAME + "-(\\d+)-.*");

    private static volatile boolean loaded;
    private static QuiverException failure; // guarded by NativeLibrary.class
    private static String source;            // guarded by NativeLibrary.class

    private NativeLibrary() {}

    /**
     * Loads the library unless this class already did. Throws
     * {@link QuiverNotSupportedException} when it cannot be loaded.
     */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLibrary.class) {
            if (loaded) {
                return;
            }
            if (failure != null) {
                throw QuiverException.create(failure.kind(), 0, failure.getMessage(), failure.getCause());
            }
            try {
                source = loadOnce();
                loaded = true;
            } catch (QuiverException e) {
                failure = e;
                throw e;
            }
        }
    }

    /** Whether the library is loaded (by this class loader's NativeLibrary). */
    public static boolean isLoaded() {
        return loaded;
    }

    /**
     * Where the library was loaded from: {@code "java.library.path"} or
     * {@code "jar:/native/<platform>/<file>"}; null before it was loaded.
     */
    public static synchronized String source() {
        return source;
    }

    /** The native library's version (QV_VERSION_STRING), loading it first. */
    public static String version() {
        load();
        return new String(nativeVersion(), StandardCharsets.UTF_8);
    }

    /**
     * The platform's folder name in the jar: {@code <os>-<os.arch>}, with
     * os.arch as the JVM reports it ({@code amd64} on x86-64, not
     * {@code x86_64}), for example {@code linux-amd64}.
     */
    public static String platform() {
        String os = System.getProperty("os.name", "unknown").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) {
            os = "linux";
        } else if (os.startsWith("mac")) {
            os = "macos";
        } else if (os.startsWith("windows")) {
            os = "windows";
        } else {
            os = os.replaceAll("[^a-z0-9]", "");
        }
        String arch = System.getProperty("os.arch", "unknown").toLowerCase(Locale.ROOT);
        return os + "-" + arch;
    }

    /** The resource the jar holds the library under on this platform. */
    public static String resourcePath() {
        return "/native/" + platform() + "/" + System.mapLibraryName(NAME);
    }

    private static String loadOnce() {
        UnsatisfiedLinkError fromPath;
        try {
            System.loadLibrary(NAME);
            return "java.library.path";
        } catch (UnsatisfiedLinkError e) {
            if (isOtherClassLoader(e)) {
                throw otherClassLoader(e);
            }
            fromPath = e;
        }
        String resource = resourcePath();
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new QuiverNotSupportedException(0, "Quiver has no native library for platform "
                        + platform() + ": the jar has no " + resource + " (looked in the folder /native/"
                        + platform() + "/), and java.library.path ("
                        + System.getProperty("java.library.path") + ") has no "
                        + System.mapLibraryName(NAME), fromPath);
            }
            Path dir = extractionDir(tmpDir());
            cleanStaleCopies(dir);
            long pid = ProcessHandle.current().pid();
            Path copy = Files.createTempFile(dir, "lib" + NAME + "-" + pid + "-", ".so");
            try {
                Files.copy(in, copy, StandardCopyOption.REPLACE_EXISTING);
                System.load(copy.toAbsolutePath().toString());
            } catch (UnsatisfiedLinkError e) {
                throw new QuiverNotSupportedException(0, "Quiver's native library " + resource
                        + " (copied to " + copy + ") could not be loaded on " + platform() + ": "
                        + e.getMessage(), e);
            } finally {
                // Linux keeps a loaded library mapped after its file is gone.
                if (!deleteQuietly(copy)) {
                    copy.toFile().deleteOnExit();
                }
            }
            return "jar:" + resource;
        } catch (IOException e) {
            throw new QuiverIOException(0, "Quiver's native library " + resource
                    + " could not be copied to a temporary file under " + tmpDir() + ": " + e, e);
        }
    }

    private static boolean isOtherClassLoader(UnsatisfiedLinkError e) {
        String m = e.getMessage();
        return m != null && m.contains("another classloader");
    }

    private static QuiverException otherClassLoader(UnsatisfiedLinkError e) {
        return new QuiverNotSupportedException(0, "Quiver's native library " + System.mapLibraryName(NAME)
                + " is already loaded by another class loader in this JVM, and JNI lets only one class"
                + " loader load a native library: load the quiver-jni classes from one class loader"
                + " (for example put the jar on the application or executor class path once, not in"
                + " two isolated class loaders); the JVM said: " + e.getMessage(), e);
    }

    private static Path tmpDir() {
        return Paths.get(System.getProperty("java.io.tmpdir", "/tmp"));
    }

    /**
     * {@code <tmp>/quiver-jni-<user>}, created private to the user. When that
     * name is already taken by something that is not a private folder of
     * this user (a symbolic link, a folder of another user, or one others
     * may write to: anyone can create the name first in a shared /tmp),
     * another user could swap the library between its copy and its load and
     * run code in this JVM; a new private folder with a random name is used
     * instead.
     */
    static Path extractionDir(Path tmp) throws IOException {
        String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
        Path dir = tmp.resolve("quiver-jni-" + user);
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")));
            } catch (UnsupportedOperationException e) {
                Files.createDirectories(dir);
            } catch (FileAlreadyExistsException e) {
                // made meanwhile, by another JVM or someone else: checked below
            }
        }
        if (isPrivateFolder(dir)) {
            return dir;
        }
        try {
            return Files.createTempDirectory(tmp, "quiver-jni-", PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
        } catch (UnsupportedOperationException e) {
            return Files.createTempDirectory(tmp, "quiver-jni-");
        }
    }

    /** A real folder (not a link) owned by this process's user, writable by nobody else. */
    private static boolean isPrivateFolder(Path dir) throws IOException {
        PosixFileAttributes a;
        try {
            a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (UnsupportedOperationException e) {
            return Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS); // not a POSIX file system
        }
        if (!a.isDirectory()) {
            return false;
        }
        Set<PosixFilePermission> p = a.permissions();
        if (p.contains(PosixFilePermission.GROUP_WRITE) || p.contains(PosixFilePermission.OTHERS_WRITE)) {
            return false;
        }
        // The owner of a file this process creates is its user, whatever user.name says.
        Path probe = Files.createTempFile(dir.getParent(), ".quiver-jni-owner-", "");
        try {
            return Files.getOwner(probe, LinkOption.NOFOLLOW_LINKS).equals(a.owner());
        } finally {
            Files.deleteIfExists(probe);
        }
    }

    /**
     * Deletes the copies of JVMs that are gone: a file named
     * lib&lt;name&gt;-&lt;pid&gt;-*.so whose process no longer runs. A copy of a live
     * process (a JVM between its copy and its load) is never touched; a pid
     * reused by another process only delays the cleaning.
     */
    static int cleanStaleCopies(Path dir) {
        long self = ProcessHandle.current().pid();
        int deleted = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                Matcher m = COPY.matcher(f.getFileName().toString());
                if (!m.matches()) {
                    continue;
                }
                long pid;
                try {
                    pid = Long.parseLong(m.group(1));
                } catch (NumberFormatException e) {
                    continue;
                }
                if (pid != self && ProcessHandle.of(pid).isEmpty() && deleteQuietly(f)) {
                    deleted++;
                }
            }
        } catch (IOException | SecurityException e) {
            // Cleaning is a courtesy; loading does not depend on it.
        }
        return deleted;
    }

    private static boolean deleteQuietly(Path f) {
        try {
            Files.deleteIfExists(f);
            return true;
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    private static native byte[] nativeVersion();
}
