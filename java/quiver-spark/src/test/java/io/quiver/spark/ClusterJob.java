package io.quiver.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;

import io.quiver.NativeLibrary;

import java.util.Iterator;
import java.util.List;

import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The application {@link ClusterIT} submits to its standalone cluster (driver
 * in spark-submit's JVM, tasks in two executor JVMs). It prints what the test
 * checks, one fact a line on stdout:
 * <ul>
 * <li>{@code AGG <region> <rows> <sum(id)> <count(name)>} per region of a filtered aggregate;</li>
 * <li>{@code TASK <executor id> <pid> <rows> <quiver version>} per partition of a plain read,
 * written by the task itself after it read Quiver data, so the native library
 * was loaded in that executor's JVM.</li>
 * </ul>
 */
public final class ClusterJob {
    private ClusterJob() {}

    public static void main(String[] args) {
        String dir = args[0];
        SparkSession spark = SparkSession.builder().appName("quiver-cluster-it").getOrCreate();
        try {
            Dataset<Row> df = spark.read().format("quiver").load(dir);
            List<Row> agg = df.where(col("amount").geq(0.0))
                    .groupBy("region")
                    .agg(count(lit(1)), sum("id"), count("name"))
                    .orderBy("region")
                    .collectAsList();
            for (Row r : agg) {
                System.out.println("AGG " + r.getString(0) + " " + r.getLong(1) + " " + r.getLong(2) + " "
                        + r.getLong(3));
            }
            FlatMapFunction<Iterator<Row>, String> where = rows -> {
                long n = 0;
                while (rows.hasNext()) {
                    rows.next();
                    n++;
                }
                String line = "TASK " + SparkEnv.get().executorId() + " " + ProcessHandle.current().pid() + " " + n
                        + " " + (NativeLibrary.isLoaded() ? NativeLibrary.version() : "not-loaded");
                return List.of(line).iterator();
            };
            for (String line : df.javaRDD().mapPartitions(where).collect()) {
                System.out.println(line);
            }
            System.out.println("DONE");
        } finally {
            spark.stop();
        }
    }
}
