package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The library loads in fresh JVMs (LoadProbe): from a jar, from
 * java.library.path, not twice through two class loaders, not at all on a
 * platform the jar has no library for; stale copies of dead JVMs are cleaned;
 * and a JNI_OnLoad that cannot find Quiver's classes fails cleanly.
 */
@Timeout(600)
class NativeLibraryLoadingTest {
    @TempDir
    static Path dir;
    static Path jar;

    /** The module's jar as `mvn package` makes it: the classes and /native/. */
    @BeforeAll
    static void makeJar() throws IOException {
        Path classes = Paths.get(Fixtures.property("quiver.test.classes"));
        jar = dir.resolve("quiver-jni-test.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(classes)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile).sorted()::iterator) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }

    private static Map<String, String> facts(Fixtures.Result r) {
        assertEquals(0, r.exit(), "the child JVM failed:\n" + r.output());
        Map<String, String> facts = new HashMap<>();
        for (String line : r.output().split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0 && !line.startsWith("WARNING")) {
                facts.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        assertEquals("clean", facts.get("exit"), r.output());
        return facts;
    }

    private static Path emptyDir(String name) throws IOException {
        return Files.createDirectories(dir.resolve(name));
    }

    private static long deadPid() throws IOException, InterruptedException {
        Process p = new ProcessBuilder("true").start();
        assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS));
        return p.pid();
    }

    @Test
    void loadsFromTheJarAndCleansStaleCopies() throws Exception {
        Path tmp = emptyDir("tmp-jar");
        Path copies = Files.createDirectories(tmp.resolve("quiver-jni-" + System.getProperty("user.name")));
        // A copy left by a JVM that died, and one of a live JVM (this one).
        Path stale = Files.writeString(copies.resolve("libquiver_jni-" + deadPid() + "-123.so"), "stale");
        Path live = Files.writeString(copies.resolve("libquiver_jni-" + ProcessHandle.current().pid() + "-9.so"),
                "in use");
        Path other = Files.writeString(copies.resolve("unrelated.txt"), "not ours");
        Map<String, String> f = facts(Fixtures.java(List.of(jar.toString(), Fixtures.testClasses()),
                List.of("-Djava.io.tmpdir=" + tmp, "-Djava.library.path=" + emptyDir("nolib")), "io.quiver.LoadProbe",
                "load"));
        assertTrue(f.get("first").matches("ok:\\d+\\.\\d+\\.\\d+"), f.toString());
        assertEquals("ok:jar:/native/linux-" + System.getProperty("os.arch") + "/libquiver_jni.so", f.get("source"));
        assertFalse(Files.exists(stale), "the dead JVM's copy was not cleaned");
        assertTrue(Files.exists(live), "a live JVM's copy was deleted");
        assertTrue(Files.exists(other));
        try (Stream<Path> left = Files.list(copies)) {
            // The child deleted its own copy after loading it.
            assertEquals(List.of(live, other).stream().sorted().toList(), left.sorted().toList());
        }
    }

    @Test
    void loadsFromJavaLibraryPathFirst() throws Exception {
        Path tmp = emptyDir("tmp-path");
        Map<String, String> f = facts(Fixtures.java(List.of(jar.toString(), Fixtures.testClasses()),
                List.of("-Djava.io.tmpdir=" + tmp, "-Djava.library.path=" + Fixtures.property("quiver.test.nativeDir")),
                "io.quiver.LoadProbe", "load"));
        assertTrue(f.get("first").startsWith("ok:"), f.toString());
        assertEquals("ok:java.library.path", f.get("source"));
        try (Stream<Path> left = Files.list(tmp)) {
            assertEquals(0, left.count(), "nothing is extracted when java.library.path has the library");
        }
    }

    @Test
    void twoClassLoadersFailWithAClearMessage() throws Exception {
        String classes = Fixtures.property("quiver.test.classes");
        Map<String, String> f = facts(Fixtures.java(List.of(Fixtures.testClasses()),
                List.of("-Djava.io.tmpdir=" + emptyDir("tmp-loaders"),
                        "-Djava.library.path=" + Fixtures.property("quiver.test.nativeDir")),
                "io.quiver.LoadProbe", "loaders", classes));
        assertTrue(f.get("loader1").startsWith("ok:"), f.toString());
        String second = f.get("loader2");
        assertTrue(second.startsWith("io.quiver.QuiverNotSupportedException:"), second);
        assertTrue(second.contains("already loaded by another class loader"), second);
        assertTrue(second.contains("cause=java.lang.UnsatisfiedLinkError"), second);
    }

    @Test
    void extractedCopiesServeTwoClassLoaders() throws Exception {
        // Without java.library.path each class loader extracts a copy of its
        // own, a different file, which JNI accepts.
        String classes = Fixtures.property("quiver.test.classes");
        Map<String, String> f = facts(Fixtures.java(List.of(Fixtures.testClasses()),
                List.of("-Djava.io.tmpdir=" + emptyDir("tmp-copies"), "-Djava.library.path=" + emptyDir("nolib2")),
                "io.quiver.LoadProbe", "loaders", classes));
        assertTrue(f.get("loader1").startsWith("ok:"), f.toString());
        assertTrue(f.get("loader2").startsWith("ok:"), f.toString());
    }

    @Test
    void aPlatformWithoutALibraryIsNamed() throws Exception {
        Map<String, String> f = facts(Fixtures.java(List.of(jar.toString(), Fixtures.testClasses()),
                List.of("-Dos.arch=sparcv9", "-Djava.io.tmpdir=" + emptyDir("tmp-sparc"),
                        "-Djava.library.path=" + emptyDir("nolib3")),
                "io.quiver.LoadProbe", "load"));
        String first = f.get("first");
        assertTrue(first.startsWith("io.quiver.QuiverNotSupportedException:"), first);
        assertTrue(first.contains("platform linux-sparcv9"), first);
        assertTrue(first.contains("/native/linux-sparcv9/libquiver_jni.so"), first);
        assertTrue(first.contains("cause=java.lang.UnsatisfiedLinkError"), first);
    }

    @Test
    void onLoadWithoutQuiverClassesFailsCleanly() throws Exception {
        // Only the probe on the class path: JNI_OnLoad cannot resolve
        // io.quiver.QuiverException and must fail with an exception, not crash.
        Path lib = Paths.get(Fixtures.property("quiver.test.nativeDir"), System.mapLibraryName("quiver_jni"));
        Map<String, String> f = facts(Fixtures.java(List.of(Fixtures.testClasses()), List.of(),
                "io.quiver.LoadProbe", "system", lib.toString()));
        String system = f.get("system");
        assertTrue(system.startsWith("java.lang.UnsatisfiedLinkError:libquiver_jni: JNI_OnLoad could not resolve"),
                system);
        assertTrue(system.contains("'errors' part"), system);
        assertTrue(system.contains("cause=java.lang.NoClassDefFoundError:io/quiver/QuiverException"), system);
    }

}
