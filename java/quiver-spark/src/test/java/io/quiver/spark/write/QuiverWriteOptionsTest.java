package io.quiver.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QuiverWriteOptionsTest {
    @Test
    void defaults() {
        QuiverWriteOptions o = QuiverWriteOptions.parse(Map.of());
        assertEquals(0, o.rowGroupRows());
        assertEquals(QuiverWriteOptions.DEFAULT_BATCH_ROWS, o.batchRows());
        assertFalse(o.compact());
        assertFalse(o.randomAccess());
        assertEquals(0, o.maxInFlight());
        assertEquals(QuiverWriteOptions.DEFAULT_MAX_OPEN_FILES, o.maxOpenFiles());
        assertNull(o.partitionColumns());
    }

    @Test
    void valuesAreParsedIgnoringTheKeysCase() {
        QuiverWriteOptions o = QuiverWriteOptions.parse(Map.of("ROWGROUPROWS", "65536", "batchrows", " 1024 ",
                "Compact", "TRUE", "maxInFlight", "-1", "maxopenfiles", "3",
                "__partition_columns", "[\"a\",\"b c\"]"));
        assertEquals(65536, o.rowGroupRows());
        assertEquals(1024, o.batchRows());
        assertTrue(o.compact());
        assertEquals(-1, o.maxInFlight());
        assertEquals(3, o.maxOpenFiles());
        assertEquals(List.of("a", "b c"), o.partitionColumns());
    }

    @Test
    void badValuesAreRefusedNamingTheOption() {
        String[][] bad = {
            {"rowGroupRows", "-1"}, {"rowGroupRows", "many"}, {"batchRows", "0"}, {"batchRows", "3000000000"},
            {"compact", "yes"}, {"randomAccess", "1"}, {"maxInFlight", "-2"}, {"maxInFlight", "65"}, {"maxOpenFiles", "0"},
            {"maxOpenFiles", "1.5"}, {"__partition_columns", "a,b"}, {"__partition_columns", "[\"\"]"},
            {"__partition_columns", "{\"a\":1}"}, {"__partition_columns", "null"},
        };
        for (String[] kv : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> QuiverWriteOptions.parse(Map.of(kv[0], kv[1])), kv[0] + "=" + kv[1]);
            assertTrue(e.getMessage().contains("'" + kv[0] + "'"), e.getMessage());
        }
    }

    @Test
    void randomAccessIsParsedAndRefusedWithCompact() {
        assertTrue(QuiverWriteOptions.parse(Map.of("RANDOMACCESS", "true")).randomAccess());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> QuiverWriteOptions.parse(Map.of("compact", "true", "randomAccess", "true")));
        assertTrue(e.getMessage().contains("'compact' and 'randomAccess' exclude each other"), e.getMessage());
    }
}
