package io.quiver.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Native scan workers that call a Java budget are attached as daemon
 * threads and detached when they exit: a JVM whose main returns after such
 * a scan exits at once, and no attached thread is left behind.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class NativeThreadsTest {
    @TempDir Path dir;

    @Test
    void jvmExitsPromptlyAfterAScanWithWorkers() throws Exception {
        Path file = dir.resolve("wide.qvr");
        try (BufferAllocator a = new RootAllocator()) {
            PoolFixtures.writeLongs(a, file, 8, 200_000, 16384);
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        // This JVM's options (Spark's --add-opens, a library path), not its agents or debugger.
        for (String o : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (!o.startsWith("-agentlib") && !o.startsWith("-javaagent") && !o.startsWith("-Xrunjdwp")) {
                cmd.add(o);
            }
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(NativeThreadsChild.class.getName());
        cmd.add(file.toString());
        Path log = dir.resolve("child.log");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        // Generous for a loaded machine; a JVM kept alive by a non-daemon
        // attached thread never exits at all.
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
            fail("the child JVM did not exit after main returned:\n" + Files.readString(log, StandardCharsets.UTF_8));
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("rows=200000"), out);
        assertTrue(out.contains("native-callers=true"), "the budget was never called from a native worker:\n" + out);
        assertTrue(out.contains("native-daemon=[true]"), "native workers must be attached as daemons:\n" + out);
        assertTrue(out.contains("lingering=0"), "attached threads were not detached:\n" + out);
        assertTrue(out.contains("outstanding=0"), out);
    }
}
