package io.quiver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The Java face of Quiver's errors: kinds mirror base.h, messages decode safely. */
class QuiverExceptionTest {
    @Test
    void kindsMirrorTheCEnum() throws Exception {
        Path base = Path.of(Fixtures.property("quiver.test.root"), "core", "include", "quiver", "base.h");
        String text = Files.readString(base);
        String body = text.substring(text.indexOf("enum qv_error_kind {"), text.indexOf("};",
                text.indexOf("enum qv_error_kind {")));
        Matcher m = Pattern.compile("QV_ERROR_([A-Z_]+)").matcher(body);
        Map<String, Integer> c = new LinkedHashMap<>();
        while (m.find()) {
            c.put(m.group(1), c.size());
        }
        assertEquals(ErrorKind.values().length, c.size(), c.toString());
        for (ErrorKind k : ErrorKind.values()) {
            String cname = k == ErrorKind.CHANGED ? "CHANGED" : k.name();
            assertEquals(c.get(cname), k.code(), k + " vs base.h " + c);
            assertSame(k, ErrorKind.of(k.code()));
        }
        assertSame(ErrorKind.IO, ErrorKind.of(99), "an unknown kind reads as IO");
    }

    @Test
    void everyKindHasItsClass() {
        Map<ErrorKind, Class<?>> classes = Map.of(ErrorKind.NOT_FOUND, QuiverNotFoundException.class,
                ErrorKind.CORRUPT, QuiverCorruptException.class, ErrorKind.IO, QuiverIOException.class,
                ErrorKind.OUT_OF_MEMORY, QuiverOutOfMemoryException.class, ErrorKind.INVALID_ARGUMENT,
                QuiverInvalidArgumentException.class, ErrorKind.NOT_SUPPORTED, QuiverNotSupportedException.class,
                ErrorKind.CANCELLED, QuiverCancelledException.class, ErrorKind.CHANGED,
                QuiverFileChangedException.class);
        for (Map.Entry<ErrorKind, Class<?>> e : classes.entrySet()) {
            QuiverException ex = QuiverException.fromNative(e.getKey().code(), 5, "m".getBytes(StandardCharsets.UTF_8));
            assertSame(e.getValue(), ex.getClass());
            assertSame(e.getKey(), ex.kind());
            assertEquals(5, ex.errno());
            assertEquals("m", ex.getMessage());
        }
    }

    @Test
    void malformedMessageBytesAreReplacedNotThrown() {
        byte[] bytes = {'f', 'i', 'l', 'e', ' ', '\'', (byte) 0xff, (byte) 0xc3, '\'', ' ', (byte) 0xe6, (byte) 0x97,
            (byte) 0xa5};
        QuiverException e = QuiverException.fromNative(ErrorKind.NOT_FOUND.code(), 2, bytes);
        assertEquals("file '\uFFFD\uFFFD' \u65e5", e.getMessage());
        assertTrue(QuiverException.fromNative(1, 2, null).getMessage().isEmpty());
    }
}
