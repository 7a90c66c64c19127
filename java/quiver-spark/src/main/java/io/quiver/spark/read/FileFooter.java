package io.quiver.spark.read;

import io.quiver.FileIdentity;
import io.quiver.QuiverFile;
import io.quiver.QuiverCorruptException;
import io.quiver.QuiverFileChangedException;
import io.quiver.QuiverNotFoundException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.sql.internal.SQLConf;
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

    /**
     * The footers of {@code paths}, read by a bounded number of threads, in
     * the order given. A file that vanished since listing is left out under
     * {@code spark.sql.files.ignoreMissingFiles}, one that is not a readable
     * Quiver file under {@code spark.sql.files.ignoreCorruptFiles} (as
     * Parquet's schema inference skips them); otherwise they fail the read.
     */
    public static List<FileFooter> readAll(List<String> paths) {
        SQLConf conf = SQLConf.get();
        boolean ignoreMissing = conf.ignoreMissingFiles();
        boolean ignoreCorrupt = conf.ignoreCorruptFiles();
        List<FileFooter> out = new ArrayList<>();
        for (FileFooter f : ParallelFiles.map(paths, p -> skippable(ignoreMissing, ignoreCorrupt, () -> read(p)))) {
            if (f != null) {
                out.add(f);
            }
        }
        return out;
    }

    /**
     * Runs {@code action} on one file; null instead of the failure when the
     * failure is one Spark's settings say to skip (a missing file, a corrupt
     * or changed one).
     */
    static <T> T skippable(boolean ignoreMissing, boolean ignoreCorrupt, Supplier<T> action) {
        try {
            return action.get();
        } catch (QuiverNotFoundException e) {
            if (ignoreMissing) {
                return null;
            }
            throw e;
        } catch (QuiverCorruptException | QuiverFileChangedException e) {
            if (ignoreCorrupt) {
                return null;
            }
            throw e;
        }
    }
}
