package io.quiver.bench;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.launcher.JavaModuleOptions;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * bench/run jvm: runs AllocationBench through JMH's Runner API and prints the
 * seed's table (ns per buffer, ratio to no listener, task memory manager calls
 * per iteration); {@code --json FILE} writes the same figures as DESIGN.md's
 * flat records (a JSON array; later benchmarks of the same run append to it).
 */
public final class JvmBench {
    private JvmBench() {
    }

    /** Figures of one case and variant, over every measured iteration of every fork. */
    private static final class Figures {
        final List<Double> nsPerBuffer = new ArrayList<>();
        final List<Double> cpuNsPerBuffer = new ArrayList<>();
        final List<Double> acquires = new ArrayList<>();
        final List<Double> releases = new ArrayList<>();
    }

    public static void main(String[] args) throws RunnerException, IOException {
        boolean quick = false;
        String json = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--print-jvm-args":
                    // For bench/run: the flags every JVM running Spark's and
                    // Arrow's memory code needs, from Spark's own launcher.
                    System.out.println(String.join(" ", jvmArgs()));
                    return;
                case "--quick":
                    quick = true;
                    break;
                case "--json":
                    if (i + 1 >= args.length) {
                        usage("--json needs a file");
                    }
                    json = args[++i];
                    break;
                default:
                    usage("unknown argument " + args[i]);
            }
        }
        ChainedOptionsBuilder opts = new OptionsBuilder()
                .include(AllocationBench.class.getName() + ".allocateThenFree")
                .jvmArgsAppend(jvmArgs().toArray(new String[0]))
                .jvmArgsAppend("-Xms1g", "-Xmx1g")
                .verbosity(VerboseMode.SILENT)
                .shouldFailOnError(true);
        if (quick) {
            // A smoke run: every case in this JVM (no forks; bench/run gives it
            // the same flags), so the figures are indicative only: the
            // listeners' call sites see all three variants.
            opts.forks(0).warmupIterations(3).warmupTime(TimeValue.milliseconds(200))
                    .measurementIterations(3).measurementTime(TimeValue.milliseconds(200));
        } else {
            opts.forks(2).warmupIterations(5).warmupTime(TimeValue.milliseconds(500))
                    .measurementIterations(8).measurementTime(TimeValue.milliseconds(500));
        }
        int runs = AllocationBench.CASES.length * AllocationBench.VARIANTS.length;
        System.out.printf(Locale.ROOT, "bench jvm: %d JMH runs (%s), Arrow Java 19.0.0 on Spark 4.2.0's TaskMemoryManager%n",
                runs, quick ? "quick: no fork, 3 x 200 ms, indicative only" : "2 forks, 8 x 500 ms after 5 x 500 ms warm-up");
        Collection<RunResult> results = new Runner(opts.build()).run();

        Map<String, Map<String, Figures>> byCase = new TreeMap<>();
        for (RunResult rr : results) {
            BenchmarkParams p = rr.getParams();
            String shape = p.getParam("shape");
            String variant = p.getParam("variant");
            int count = Integer.parseInt(shape.substring(0, shape.indexOf('x')));
            Figures f = byCase.computeIfAbsent(shape, k -> new TreeMap<>())
                    .computeIfAbsent(variant, k -> new Figures());
            for (BenchmarkResult br : rr.getBenchmarkResults()) {
                for (IterationResult ir : br.getIterationResults()) {
                    f.nsPerBuffer.add(ir.getPrimaryResult().getScore() / count);
                    double inv = score(ir, "invocations");
                    if (inv > 0) {
                        f.acquires.add(score(ir, "acquires") / inv);
                        f.releases.add(score(ir, "releases") / inv);
                        f.cpuNsPerBuffer.add(score(ir, "cpuNanos") / inv / count);
                    }
                }
            }
        }

        BenchRecords records = new BenchRecords("jvm");
        System.out.println();
        System.out.println("Targets: block <= 1.05x none on 512x128B, <= 1.10x on 8x1MiB+rival, 0 manager calls per"
                + " iteration when warm.");
        System.out.println("Seed's figures: 512x128B 146-150 ns -> 159-169 ns per buffer (one manager call each);"
                + " contended 3.7-5.1 us -> 4.8-7.8 us per 8 x 1 MiB;");
        System.out.println("                its block design made 1+1, 8+8, 8+8, 13+2 manager calls per iteration"
                + " (acquire+release), at 1.09x on 512x128B and 1.3-1.5x contended.");
        System.out.println();
        System.out.printf(Locale.ROOT, "%-13s %-9s %9s %9s %8s %9s %8s %9s %13s %12s%n", "case", "variant",
                "wall min", "wall med", "x none", "cpu min", "x none", "cpu med", "acq+rel/iter", "max acq+rel");
        for (String shape : AllocationBench.CASES) {
            Map<String, Figures> variants = byCase.get(shape);
            if (variants == null) {
                continue;
            }
            Figures none = variants.get("none");
            double noneMedian = none == null ? Double.NaN : BenchRecords.median(none.nsPerBuffer);
            double noneCpu = none == null || none.cpuNsPerBuffer.isEmpty() ? Double.NaN
                    : Collections.min(none.cpuNsPerBuffer);
            for (String variant : AllocationBench.VARIANTS) {
                Figures f = variants.get(variant);
                if (f == null) {
                    continue;
                }
                double min = Collections.min(f.nsPerBuffer);
                double med = BenchRecords.median(f.nsPerBuffer);
                double ratio = med / noneMedian;
                double cpuMin = f.cpuNsPerBuffer.isEmpty() ? Double.NaN : Collections.min(f.cpuNsPerBuffer);
                double cpu = BenchRecords.median(f.cpuNsPerBuffer);
                double cpuRatio = cpuMin / noneCpu;
                double acqMed = BenchRecords.median(f.acquires);
                double relMed = BenchRecords.median(f.releases);
                double acqMax = f.acquires.isEmpty() ? 0 : Collections.max(f.acquires);
                double relMax = f.releases.isEmpty() ? 0 : Collections.max(f.releases);
                System.out.printf(Locale.ROOT, "%-13s %-9s %9.1f %9.1f %7.3fx %9.1f %7.3fx %9.1f %13s %12s%n",
                        shape, variant, min, med, ratio, cpuMin, cpuRatio, cpu,
                        calls(acqMed) + "+" + calls(relMed), calls(acqMax) + "+" + calls(relMax));
                records.add(shape, variant, "ns_per_buffer", "min", min, "ns");
                records.add(shape, variant, "ns_per_buffer", "median", med, "ns");
                records.add(shape, variant, "ratio_to_none", "median", ratio, "x");
                records.add(shape, variant, "cpu_ns_per_buffer", "min", cpuMin, "ns");
                records.add(shape, variant, "cpu_ns_per_buffer", "median", cpu, "ns");
                records.add(shape, variant, "cpu_ratio_to_none", "min", cpuRatio, "x");
                records.add(shape, variant, "manager_acquires_per_iteration", "median", acqMed, "calls");
                records.add(shape, variant, "manager_acquires_per_iteration", "max", acqMax, "calls");
                records.add(shape, variant, "manager_releases_per_iteration", "median", relMed, "calls");
                records.add(shape, variant, "manager_releases_per_iteration", "max", relMax, "calls");
            }
        }
        System.out.println();
        System.out.println("ns per buffer (one allocate, one free): wall time from JMH, and the measured thread's CPU"
                + " time (steadier on a shared machine: wall time");
        System.out.println("also counts waiting for a core); min and median over every measured iteration of every"
                + " fork; x none: ratio of wall medians and of CPU minimums.");
        System.out.println("Calls: task memory manager");
        System.out.println("acquires+releases per iteration (allocate N, free N), counted by the consumer, median and"
                + " max over measured iterations.");
        System.out.printf(Locale.ROOT, "load average when done: %s%n", BenchRecords.loadAverage());
        if (json != null) {
            records.write(Path.of(json));
            System.out.println("wrote " + records.size() + " records to " + json);
        }
    }

    private static List<String> jvmArgs() {
        List<String> args = new ArrayList<>(List.of(JavaModuleOptions.defaultModuleOptionArray()));
        args.add("-XX:+IgnoreUnrecognizedVMOptions");
        return args;
    }

    private static double score(IterationResult ir, String name) {
        var r = ir.getSecondaryResults().get(name);
        return r == null ? 0 : r.getScore();
    }

    private static String calls(double x) {
        if (Double.isNaN(x)) {
            return "-";
        }
        return x == Math.rint(x) ? Long.toString((long) x) : String.format(Locale.ROOT, "%.2f", x);
    }

    private static void usage(String why) {
        System.err.println("bench jvm: " + why);
        System.err.println("usage: JvmBench [--quick] [--json FILE]");
        System.exit(2);
    }
}
