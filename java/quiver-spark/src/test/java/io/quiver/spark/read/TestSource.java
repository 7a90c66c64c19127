package io.quiver.spark.read;

import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A test-only DataSource V2 that runs QuiverPartitionReaderFactory over
 * partitions and a ReadConfig the test made itself (registered here under an
 * id passed as the option "id"; local mode runs tasks in the test's JVM, but
 * the factory and partitions are still serialized to the tasks as in a
 * cluster). It stands in for the driver side, which another branch builds.
 */
public final class TestSource implements TableProvider {
    record Plan(ReadConfig config, List<QuiverInputPartition> partitions) {}

    private static final Map<String, Plan> PLANS = new ConcurrentHashMap<>();
    private static final AtomicInteger IDS = new AtomicInteger();

    /** Registers a plan; read it with spark.read().format(TestSource.class.getName()).option("id", id).load(). */
    static String register(ReadConfig config, List<QuiverInputPartition> partitions) {
        String id = "plan" + IDS.incrementAndGet();
        PLANS.put(id, new Plan(config, partitions));
        return id;
    }

    static StructType outputSchema(ReadConfig c) {
        StructType s = c.dataSchema();
        for (StructField f : c.partitionSchema().fields()) {
            s = s.add(f);
        }
        return s;
    }

    private static Plan plan(Map<String, String> options) {
        Plan p = PLANS.get(options.get("id"));
        if (p == null) {
            throw new IllegalArgumentException("TestSource: no plan registered under " + options.get("id"));
        }
        return p;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return outputSchema(plan(options).config());
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        Plan p = plan(properties);
        return new SupportsRead() {
            @Override
            public String name() {
                return "quiver-test";
            }

            @Override
            @SuppressWarnings("deprecation")
            public StructType schema() {
                return outputSchema(p.config());
            }

            @Override
            public Set<TableCapability> capabilities() {
                return EnumSet.of(TableCapability.BATCH_READ);
            }

            @Override
            public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
                return () -> new Scan() {
                    @Override
                    public StructType readSchema() {
                        return outputSchema(p.config());
                    }

                    @Override
                    public CustomMetric[] supportedCustomMetrics() {
                        return QuiverMetrics.all();
                    }

                    @Override
                    public Batch toBatch() {
                        return new Batch() {
                            @Override
                            public InputPartition[] planInputPartitions() {
                                return p.partitions().toArray(new InputPartition[0]);
                            }

                            @Override
                            public PartitionReaderFactory createReaderFactory() {
                                return new QuiverPartitionReaderFactory(p.config());
                            }
                        };
                    }
                };
            }
        };
    }

    @Override
    public boolean supportsExternalMetadata() {
        return false;
    }
}
