package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the tests share: .qvr files written by the qv command of this build
 * (target/native-build/cli/qv, built with the JNI library; the Java API has
 * no writer of its own in this module's tests), and child JVMs run with a
 * deadline.
 */
final class Fixtures {
    private Fixtures() {}

    static String property(String name) {
        String v = System.getProperty(name);
        if (v == null) {
            fail("system property " + name + " is not set (the tests run under Maven: see quiver-jni/pom.xml)");
        }
        return v;
    }

    /** Writes TPC-H lineitem at scale factor {@code sf} into {@code out}. */
    static Path lineitem(Path out, double sf, int rowGroupRows) throws IOException, InterruptedException {
        Result r = run(List.of(property("quiver.test.qv"), "gen", "lineitem", out.toString(), "--sf",
                Double.toString(sf), "--row-group-rows", Integer.toString(rowGroupRows)), 300);
        assertEquals(0, r.exit, "qv gen failed: " + r.output);
        assertTrue(Files.size(out) > 0);
        return out;
    }

    record Result(int exit, String output) {}

    /** Runs {@code command}, output and errors together, killed after {@code seconds}. */
    static Result run(List<String> command, int seconds) throws IOException, InterruptedException {
        Path log = Files.createTempFile("quiver-test-", ".log");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
                fail("no exit within " + seconds + " s: " + command + "\n"
                        + Files.readString(log, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /**
     * Runs {@code mainClass} in a fresh JVM (this JVM's java, the given class
     * path and JVM options) with a deadline; the environment is this one's
     * (so a sanitizer runtime preloaded here is preloaded there too).
     */
    static Result java(List<String> classPath, List<String> jvmOptions, String mainClass, String... args)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(String.join(File.pathSeparator, classPath));
        cmd.add(mainClass);
        cmd.addAll(List.of(args));
        return run(cmd, 180);
    }

    /** The folder of the test classes (for child JVMs). */
    static String testClasses() {
        try {
            return Paths.get(Fixtures.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
