package dev.thresher.bindings.abi;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * Strict UTF-8: unpaired surrogates and malformed bytes are refused, never replaced. The guest ABI's
 * encodings use it, and so does every front door that turns a client's bytes into text.
 */
public final class Utf8 {
    private Utf8() {
    }

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
            throw new IllegalArgumentException(what + " is not valid Unicode (unpaired surrogate)", e);
        }
    }

    static String decode(byte[] bytes, int offset, int length, String what) {
        return decode(ByteBuffer.wrap(bytes, offset, length))
                .orElseThrow(() -> new IllegalArgumentException(what + " is not valid UTF-8"));
    }

    /** The text the buffer's remaining bytes encode, or empty when they are not valid UTF-8. */
    public static Optional<String> decode(ByteBuffer bytes) {
        try {
            return Optional.of(StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(bytes)
                    .toString());
        } catch (CharacterCodingException e) {
            return Optional.empty();
        }
    }
}
