package io.quiver;

import java.io.Serializable;

/**
 * What identifies the contents of a .qvr file: its size and the checksum of
 * its footer (struct qv_file_identity). A planner records it with its
 * {@link Split}s; a reader opening the file later passes it back
 * ({@link FileOptions#expect(FileIdentity)}) and gets a
 * {@link QuiverFileChangedException} when the file was replaced in between.
 * Both values are unsigned 64-bit numbers carried in longs.
 */
public record FileIdentity(long size, long footerChecksum) implements Serializable {
    @Override
    public String toString() {
        return Long.toUnsignedString(size) + " bytes, footer checksum " + String.format("%016x", footerChecksum);
    }
}
