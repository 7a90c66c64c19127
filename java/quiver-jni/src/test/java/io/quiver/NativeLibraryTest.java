package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Loading in this (Surefire's) JVM: from the class path's /native folder. */
@Timeout(120)
class NativeLibraryTest {
    @Test
    void loadsOnceAndReportsItsVersion() {
        NativeLibrary.load();
        NativeLibrary.load(); // idempotent
        assertTrue(NativeLibrary.isLoaded());
        assertEquals("jar:/native/linux-amd64/libquiver_jni.so", NativeLibrary.source());
        assertTrue(NativeLibrary.version().matches("\\d+\\.\\d+\\.\\d+"), NativeLibrary.version());
    }

    @Test
    void platformFolderUsesTheJvmArchName() {
        String arch = System.getProperty("os.arch");
        assertEquals("linux-" + arch, NativeLibrary.platform());
        assertEquals("/native/linux-" + arch + "/libquiver_jni.so", NativeLibrary.resourcePath());
    }
}
