package io.quiver.memory;

import io.quiver.FileOptions;
import io.quiver.QuiverFile;
import io.quiver.QuiverScanReader;
import io.quiver.ScanOptions;

import java.nio.file.Path;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * The child JVM of NativeThreadsTest: scans a file with two native workers
 * under a Java-hosted pool, reports which threads called the budget and
 * whether any of the library's attached threads is still known to the JVM
 * after the scan, then returns from main. A worker attached as a non-daemon
 * thread, or never detached, would keep this JVM from exiting.
 */
public final class NativeThreadsChild {
    private NativeThreadsChild() {}

    public static void main(String[] args) throws Exception {
        HostBudget b = new HostBudget(Long.MAX_VALUE);
        long rows = 0;
        try (BufferAllocator root = new RootAllocator();
                NativePool p = NativePool.create("child", b, 64 << 10);
                QuiverFile f = QuiverFile.open(Path.of(args[0]), FileOptions.defaults().pool(p));
                QuiverScanReader r = f.scan(root, ScanOptions.builder().batchRows(2048).threads(2).build())) {
            while (r.loadNextBatch()) {
                rows += r.getVectorSchemaRoot().getRowCount();
            }
        }
        long lingering = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("quiver-native")).count();
        System.out.println("rows=" + rows);
        System.out.println("native-callers=" + b.threads.contains("quiver-native"));
        System.out.println("native-daemon=" + b.nativeDaemon);
        System.out.println("lingering=" + lingering);
        System.out.println("outstanding=" + b.outstanding.get());
        // Returning from main: the JVM must exit now (no non-daemon thread left).
    }
}
