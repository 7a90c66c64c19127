package io.quiver.spark.read;

import io.quiver.FileIdentity;
import io.quiver.QuiverFile;
import java.util.List;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.StructType;

/**
 * What the driver keeps of one file's footer: its identity (so the plan
 * reads the file that was inspected), rows, Arrow schema and the Spark schema
 * the scan delivers for it.
 */
public record FileFooter(String path, FileIdentity identity, long rows, Schema arrowSchema, StructType sparkSchema) {

    /** Reads the footer of {@code path}. */
    public static FileFooter read(String path) {
        try (QuiverFile f = QuiverFile.open(path)) {
            Schema schema = f.schema();
            return new FileFooter(path, f.identity(), f.numRows(), schema,
                    SparkSchemaConverter.convert(schema, path));
        }
    }

    /** The footers of {@code paths}, read by a bounded number of threads, in the order given. */
    public static List<FileFooter> readAll(List<String> paths) {
        return ParallelFiles.map(paths, FileFooter::read);
    }
}
