package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

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
    /**
     * The extraction folder's name is predictable, so in a shared /tmp
     * anyone can create it first: a folder others may write to, a link to
     * one, or one of another user let them swap the library between its copy
     * and its load. Such a folder was used as it was; now a fresh private
     * folder is.
     */
    @Test
    void anExtractionFolderOthersCouldWriteIsNotUsed(@TempDir Path tmp) throws Exception {
        String user = System.getProperty("user.name").replaceAll("[^A-Za-z0-9._-]", "_");
        Path named = tmp.resolve("quiver-jni-" + user);

        Path fresh = NativeLibrary.extractionDir(tmp); // created private
        assertEquals(named, fresh);
        assertEquals(PosixFilePermissions.fromString("rwx------"), Files.getPosixFilePermissions(fresh));
        assertEquals(named, NativeLibrary.extractionDir(tmp)); // and used again

        Files.setPosixFilePermissions(named, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertPrivateOther(tmp, named, NativeLibrary.extractionDir(tmp));

        Files.delete(named);
        Path elsewhere = Files.createDirectory(tmp.resolve("elsewhere"));
        Files.createSymbolicLink(named, elsewhere);
        assertPrivateOther(tmp, named, NativeLibrary.extractionDir(tmp));

        Files.delete(named);
        Files.createDirectory(named, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        if (user.equals("root")) { // only root can give a folder away
            Files.setOwner(named, tmp.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody"));
            assertPrivateOther(tmp, named, NativeLibrary.extractionDir(tmp));
        }
    }

    private static void assertPrivateOther(Path tmp, Path named, Path got) throws Exception {
        assertTrue(!got.equals(named) && got.getParent().equals(tmp), got.toString());
        assertTrue(Files.isDirectory(got, LinkOption.NOFOLLOW_LINKS), got.toString());
        Set<PosixFilePermission> p = Files.getPosixFilePermissions(got);
        assertEquals(PosixFilePermissions.fromString("rwx------"), p, got.toString());
    }
}
