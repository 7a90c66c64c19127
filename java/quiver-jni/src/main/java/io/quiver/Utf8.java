package io.quiver;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Text handed to the native library, encoded as UTF-8 strictly.
 * {@link String#getBytes(java.nio.charset.Charset)} replaces what UTF-8
 * cannot encode (an unpaired surrogate, U+D800..U+DFFF alone) with '?', so a
 * path would silently name another file ("x\uD800.qvr" became "x?.qvr"), a
 * filter literal would compare against another value and a column name
 * would find another column. Such a string is refused instead, as the JVM's
 * own file APIs refuse it (InvalidPathException).
 */
final class Utf8 {
    private static final int EINVAL = 22;

    private Utf8() {}

    /**
     * The UTF-8 bytes of {@code s}; a {@link QuiverInvalidArgumentException}
     * naming {@code what} and the offending position when {@code s} holds an
     * unpaired surrogate.
     */
    static byte[] encode(String s, String what) {
        try {
            ByteBuffer b = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(s));
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        } catch (CharacterCodingException e) {
            int at = 0;
            while (at < s.length()) {
                char c = s.charAt(at);
                if (Character.isHighSurrogate(c) && at + 1 < s.length() && Character.isLowSurrogate(s.charAt(at + 1))) {
                    at += 2;
                } else if (Character.isSurrogate(c)) {
                    break;
                } else {
                    at++;
                }
            }
            String shown = s.length() > 200 ? s.substring(0, 200) + "..." : s;
            throw new QuiverInvalidArgumentException(EINVAL, what + " '" + shown.replace('\0', ' ')
                    + "' holds an unpaired surrogate (U+" + String.format("%04X", (int) s.charAt(Math.min(at, s.length() - 1)))
                    + ") at index " + at + ", which has no UTF-8 form", e);
        }
    }
}
