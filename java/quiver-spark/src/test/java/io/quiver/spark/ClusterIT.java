package io.quiver.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.quiver.QuiverWriter;
import io.quiver.WriterOptions;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * format("quiver") on a real standalone cluster: a Master and two Workers
 * (1 core, 1 GiB each) started from pyspark's Spark distribution with
 * {@code sbin/spark-daemon.sh}, everything on 127.0.0.1 and on free ports, and
 * {@link ClusterJob} submitted with the shaded quiver-spark jar as the only
 * extra jar. What a local[2] test cannot show: the jar is complete (quiver-jni,
 * its native library and arrow-c-data inside), the connector's plan and
 * partitions serialize to other JVMs, and the native library loads in each
 * executor. Run by Failsafe after {@code package} (system property
 * {@code quiver.spark.jar}); pyspark is installed by scripts/setup.sh --java.
 */
class ClusterIT {
    private static final String MASTER = "org.apache.spark.deploy.master.Master";
    private static final String WORKER = "org.apache.spark.deploy.worker.Worker";
    private static final String[] REGIONS = {"east", "north", "west"};
    private static final int FILES_PER_REGION = 2;
    private static final int ROWS_PER_FILE = 20_000;

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 6, unit = TimeUnit.MINUTES)
    void jobReadsQuiverInTwoExecutors() throws Exception {
        String jarProperty = System.getProperty("quiver.spark.jar");
        assertTrue(jarProperty != null && Files.isRegularFile(Path.of(jarProperty)),
                "the shaded quiver-spark jar (system property quiver.spark.jar, set by the pom): " + jarProperty);
        Path sparkHome = sparkHome();
        Path data = tmp.resolve("data");
        Map<String, long[]> expected = writeDataset(data);
        Path appJar = appJar(tmp.resolve("cluster-job.jar"));

        Cluster cluster = new Cluster(sparkHome, tmp.resolve("spark"));
        long started = System.nanoTime();
        try {
            cluster.start(2);
            System.out.printf("ClusterIT: master and 2 workers up in %.1f s%n", (System.nanoTime() - started) / 1e9);
            long submitted = System.nanoTime();
            List<String> out = cluster.submit(Path.of(jarProperty), appJar, data, Duration.ofMinutes(4));
            System.out.printf("ClusterIT: job done in %.1f s%n", (System.nanoTime() - submitted) / 1e9);
            check(out, expected);
        } catch (Throwable t) {
            cluster.printLogs();
            throw t;
        } finally {
            cluster.stop();
            System.out.printf("ClusterIT: %.1f s in all%n", (System.nanoTime() - started) / 1e9);
        }
    }

    private static void check(List<String> out, Map<String, long[]> expected) {
        Map<String, long[]> agg = new TreeMap<>();
        Set<String> executors = new HashSet<>();
        Set<Long> pids = new HashSet<>();
        long taskRows = 0;
        boolean done = false;
        for (String line : out) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "AGG" -> agg.put(f[1], new long[] {Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])});
                case "TASK" -> {
                    long rows = Long.parseLong(f[3]);
                    assertFalse(f[4].equals("not-loaded"), "a task read Quiver rows without the library: " + line);
                    if (rows > 0) {
                        executors.add(f[1]);
                        pids.add(Long.parseLong(f[2]));
                    }
                    taskRows += rows;
                }
                case "DONE" -> done = true;
                default -> { }
            }
        }
        assertTrue(done, "the job did not finish: " + out);
        assertEquals(expected.keySet(), agg.keySet(), "regions");
        for (Map.Entry<String, long[]> e : expected.entrySet()) {
            long[] want = e.getValue();
            long[] got = agg.get(e.getKey());
            assertEquals(want[0], got[0], "rows with amount >= 0 in " + e.getKey());
            assertEquals(want[1], got[1], "sum(id) in " + e.getKey());
            assertEquals(want[2], got[2], "count(name) in " + e.getKey());
        }
        assertEquals((long) REGIONS.length * FILES_PER_REGION * ROWS_PER_FILE, taskRows, "rows read by the tasks");
        assertEquals(2, executors.size(), "executors that read Quiver data: " + executors);
        assertEquals(2, pids.size(), "executor JVMs (pids) that read Quiver data: " + pids);
        assertFalse(pids.contains(ProcessHandle.current().pid()), "tasks ran in this JVM");
    }

    /**
     * region=<r>/part-<k>.qvr: id (int64, unique over the dataset), amount
     * (float64, negative for every seventh row) and name (utf8, null for every
     * fifth row). Returns, per region, the rows with amount >= 0, their sum of
     * id and their non-null names.
     */
    private static Map<String, long[]> writeDataset(Path data) throws IOException {
        Schema schema = new Schema(List.of(
                new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                new Field("amount", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)), null),
                new Field("name", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)));
        Map<String, long[]> expected = new TreeMap<>();
        long id = 0;
        try (BufferAllocator a = new RootAllocator()) {
            for (String region : REGIONS) {
                Path folder = Files.createDirectories(data.resolve("region=" + region));
                long[] want = new long[3];
                for (int k = 0; k < FILES_PER_REGION; k++) {
                    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, a);
                            QuiverWriter w = QuiverWriter.open(a, folder.resolve("part-" + k + ".qvr"), schema,
                                    WriterOptions.builder().rowGroupRows(4096).build())) {
                        root.allocateNew();
                        BigIntVector ids = (BigIntVector) root.getVector("id");
                        Float8Vector amounts = (Float8Vector) root.getVector("amount");
                        VarCharVector names = (VarCharVector) root.getVector("name");
                        for (int i = 0; i < ROWS_PER_FILE; i++, id++) {
                            double amount = id % 7 == 0 ? -1.5 * id : 0.25 * id;
                            ids.setSafe(i, id);
                            amounts.setSafe(i, amount);
                            if (id % 5 == 0) {
                                names.setNull(i);
                            } else {
                                names.setSafe(i, (region + "-" + id).getBytes(StandardCharsets.UTF_8));
                            }
                            if (amount >= 0) {
                                want[0]++;
                                want[1] += id;
                                if (id % 5 != 0) {
                                    want[2]++;
                                }
                            }
                        }
                        root.setRowCount(ROWS_PER_FILE);
                        w.write(root);
                        w.finish();
                    }
                }
                expected.put(region, want);
            }
        }
        return expected;
    }

    /** A jar with {@link ClusterJob} (the application spark-submit runs). */
    private static Path appJar(Path jar) throws IOException {
        String dir = ClusterJob.class.getPackageName().replace('.', '/');
        Path classes = Path.of(ClusterJob.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        try (OutputStream os = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(os);
                Stream<Path> files = Files.list(classes.resolve(dir))) {
            for (Path p : (Iterable<Path>) files::iterator) {
                String name = p.getFileName().toString();
                if (name.equals("ClusterJob.class") || name.startsWith("ClusterJob$")) {
                    out.putNextEntry(new JarEntry(dir + "/" + name));
                    out.write(Files.readAllBytes(p));
                    out.closeEntry();
                }
            }
        }
        return jar;
    }

    /** The installed pyspark package's folder: a Spark distribution (bin/, sbin/, jars/). */
    private static Path sparkHome() throws Exception {
        Process p = new ProcessBuilder("python3", "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))")
                .redirectErrorStream(true).start();
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
        }
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("python3 did not answer within 60 s");
        }
        assertEquals(0, p.exitValue(), "pyspark is not installed (scripts/setup.sh --java installs it): " + out);
        Path home = Path.of(out);
        assertTrue(Files.isRegularFile(home.resolve("sbin/spark-daemon.sh")), "no sbin/spark-daemon.sh in " + home);
        return home;
    }

    /** A free TCP port on 127.0.0.1 (free when asked; the daemons bind it a moment later). */
    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 0, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** The daemons of one standalone cluster, in folders of their own under {@code base}. */
    private static final class Cluster {
        private final Path home;
        private final Path base;
        private final Path logs;
        private final Path pids;
        private final Path work;
        private final Path conf;
        private final Set<Long> started = new HashSet<>();
        private int workers;
        private int masterPort;
        private int webPort;

        Cluster(Path home, Path base) throws IOException {
            this.home = home;
            this.base = base;
            this.logs = Files.createDirectories(base.resolve("logs"));
            this.pids = Files.createDirectories(base.resolve("pids"));
            this.work = Files.createDirectories(base.resolve("work"));
            this.conf = Files.createDirectories(base.resolve("conf"));
            // No REST submission server (it would take port 6066 on every run);
            // read by the daemons through SPARK_CONF_DIR.
            Files.writeString(conf.resolve("spark-defaults.conf"), "spark.master.rest.enabled false\n");
        }

        private ProcessBuilder command(String... args) {
            ProcessBuilder pb = new ProcessBuilder(args);
            Map<String, String> env = pb.environment();
            env.put("SPARK_HOME", home.toString());
            env.put("SPARK_LOCAL_IP", "127.0.0.1");
            env.put("SPARK_LOG_DIR", logs.toString());
            env.put("SPARK_PID_DIR", pids.toString());
            env.put("SPARK_WORKER_DIR", work.toString());
            env.put("SPARK_CONF_DIR", conf.toString());
            env.put("SPARK_IDENT_STRING", "quiver-it");
            env.remove("SPARK_NO_DAEMONIZE");
            env.remove("PYSPARK_PYTHON");
            return pb.directory(base.toFile());
        }

        /** Runs a command to its end (bounded); its output goes to a log file. */
        private void run(String name, Duration limit, String... args) throws Exception {
            Path log = logs.resolve(name + ".log");
            Process p = command(args).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            if (!p.waitFor(limit.toSeconds(), TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                fail(name + " did not finish within " + limit + ": " + Files.readString(log));
            }
            assertEquals(0, p.exitValue(), name + " failed: " + Files.readString(log));
        }

        private void daemon(String action, String clazz, int instance, String... args) throws Exception {
            List<String> cmd = new ArrayList<>(List.of(home.resolve("sbin/spark-daemon.sh").toString(), action, clazz,
                    Integer.toString(instance)));
            cmd.addAll(List.of(args));
            run(action + "-" + clazz.substring(clazz.lastIndexOf('.') + 1) + "-" + instance, Duration.ofSeconds(60),
                    cmd.toArray(String[]::new));
            if (action.equals("start")) {
                Long pid = pid(clazz, instance);
                if (pid != null) {
                    started.add(pid);
                }
            }
        }

        /** The pid spark-daemon.sh wrote for a daemon (spark-$IDENT-$CLASS-$INSTANCE.pid), or null. */
        private Long pid(String clazz, int instance) throws IOException {
            Path f = pids.resolve("spark-quiver-it-" + clazz + "-" + instance + ".pid");
            if (!Files.exists(f)) {
                return null;
            }
            return Long.parseLong(Files.readString(f).trim());
        }

        void start(int workerCount) throws Exception {
            masterPort = freePort();
            webPort = freePort();
            daemon("start", MASTER, 1, "--host", "127.0.0.1", "--port", Integer.toString(masterPort), "--webui-port",
                    Integer.toString(webPort));
            for (int i = 1; i <= workerCount; i++) {
                daemon("start", WORKER, i, "--host", "127.0.0.1", "--port", Integer.toString(freePort()),
                        "--webui-port", Integer.toString(freePort()), "--cores", "1", "--memory", "1g",
                        "spark://127.0.0.1:" + masterPort);
                workers = i;
            }
            awaitWorkers(workerCount, Duration.ofSeconds(120));
        }

        /** Polls the master's JSON status until `count` workers are ALIVE, within `limit`. */
        private void awaitWorkers(int count, Duration limit) throws Exception {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + webPort + "/json/"))
                    .timeout(Duration.ofSeconds(5)).build();
            Pattern alive = Pattern.compile("\"aliveworkers\"\\s*:\\s*(\\d+)");
            long deadline = System.nanoTime() + limit.toNanos();
            String last = "(no answer)";
            while (System.nanoTime() < deadline) {
                try {
                    last = http.send(req, HttpResponse.BodyHandlers.ofString()).body();
                    Matcher m = alive.matcher(last);
                    if (m.find() && Integer.parseInt(m.group(1)) >= count) {
                        return;
                    }
                } catch (IOException e) {
                    last = e.toString();
                }
                Thread.sleep(500);
            }
            fail(count + " workers did not register within " + limit + "; master said: " + last);
        }

        /** spark-submit of ClusterJob; returns its stdout lines. */
        List<String> submit(Path quiverJar, Path appJar, Path data, Duration limit) throws Exception {
            Path out = logs.resolve("submit.out");
            Path err = logs.resolve("submit.err");
            Process p = command(home.resolve("bin/spark-submit").toString(),
                    "--master", "spark://127.0.0.1:" + masterPort,
                    "--class", ClusterJob.class.getName(),
                    "--jars", quiverJar.toString(),
                    "--driver-java-options", "-Djava.io.tmpdir=" + base,
                    "--conf", "spark.driver.host=127.0.0.1",
                    "--conf", "spark.driver.bindAddress=127.0.0.1",
                    "--conf", "spark.ui.enabled=false",
                    "--conf", "spark.executor.memory=512m",
                    "--conf", "spark.executor.cores=1",
                    "--conf", "spark.cores.max=2",
                    // Tasks start only when both executors are up, so both read data.
                    "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
                    "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=120s",
                    // Small splits: several tasks per file, more tasks than cores.
                    "--conf", "spark.sql.files.maxPartitionBytes=65536",
                    "--conf", "spark.sql.files.openCostInBytes=0",
                    "--conf", "spark.task.maxFailures=1",
                    "--conf", "spark.memory.offHeap.enabled=true",
                    "--conf", "spark.memory.offHeap.size=128m",
                    appJar.toString(), data.toString())
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(limit.toSeconds(), TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                fail("spark-submit did not finish within " + limit);
            }
            assertEquals(0, p.exitValue(), "spark-submit failed");
            return Files.readAllLines(out);
        }

        /** spark-daemon.sh stop for every daemon, then kills whatever this cluster started and still runs. */
        void stop() {
            List<ProcessHandle> all = new ArrayList<>();
            for (long pid : started) {
                ProcessHandle.of(pid).ifPresent(h -> {
                    all.add(h);
                    h.descendants().forEach(all::add);
                });
            }
            for (int i = workers; i >= 1; i--) {
                try {
                    daemon("stop", WORKER, i);
                } catch (Throwable t) {
                    System.err.println("ClusterIT: stopping worker " + i + ": " + t);
                }
            }
            try {
                daemon("stop", MASTER, 1);
            } catch (Throwable t) {
                System.err.println("ClusterIT: stopping the master: " + t);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            for (ProcessHandle h : all) {
                while (h.isAlive() && System.nanoTime() < deadline) {
                    try {
                        h.onExit().get(1, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        // still running: checked again until the deadline
                    }
                }
                if (h.isAlive()) {
                    System.err.println("ClusterIT: killing leftover process " + h.pid());
                    h.destroyForcibly();
                }
            }
        }

        /** The tails of every daemon log, the executors' stderr and the submit's output. */
        void printLogs() {
            try (Stream<Path> files = Stream.concat(Files.walk(logs), Files.walk(work))) {
                files.filter(Files::isRegularFile).filter(f -> !f.toString().endsWith(".jar"))
                        .sorted(Comparator.naturalOrder()).forEach(f -> {
                    try {
                        List<String> lines = Files.readAllLines(f, StandardCharsets.ISO_8859_1);
                        // The first errors (a stack trace's head), then the tail.
                        System.err.println("==== " + f + " (" + lines.size() + " lines; errors, then the last 40)");
                        lines.stream().filter(l -> l.contains("Exception") || l.contains("ERROR")).limit(20)
                                .forEach(l -> System.err.println("! " + l));
                        lines.subList(Math.max(0, lines.size() - 40), lines.size()).forEach(System.err::println);
                    } catch (IOException e) {
                        System.err.println("==== " + f + ": " + e);
                    }
                });
            } catch (IOException e) {
                System.err.println("ClusterIT: listing the logs: " + e);
            }
        }
    }
}
