package dev.thresher.bindings.http;

import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Percent-decoding of request paths and queries (RFC 3986; a query as {@code application/x-www-form-urlencoded}). */
public final class UrlEncoding {
    private UrlEncoding() {
    }

    /**
     * The text {@code s} percent-encodes.
     *
     * @param plusIsSpace whether {@code +} reads as a space (in a query), or as itself (in a path)
     * @param what what is decoded, for the message
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} for a {@code %} not followed by two hex digits,
     *     {@link ErrorCode#INVALID_TEXT_ENCODING} when the bytes are not UTF-8
     */
    public static String decode(String s, boolean plusIsSpace, String what) {
        if (s.indexOf('%') < 0 && (!plusIsSpace || s.indexOf('+') < 0)) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%') {
                int hi = i + 2 < s.length() ? Character.digit(s.charAt(i + 1), 16) : -1;
                int lo = hi >= 0 ? Character.digit(s.charAt(i + 2), 16) : -1;
                if (lo < 0) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the " + what + " '" + s
                            + "' has a % not followed by two hex digits");
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else if (c == '+' && plusIsSpace) {
                out.write(' ');
            } else if (c < 0x80) {
                out.write(c);
            } else {
                byte[] b = String.valueOf(c).getBytes(java.nio.charset.StandardCharsets.UTF_8);
                out.write(b, 0, b.length);
            }
        }
        return Utf8.decode(ByteBuffer.wrap(out.toByteArray())).orElseThrow(() -> new ThresherException(
                ErrorCode.INVALID_TEXT_ENCODING, "the " + what + " '" + s + "' does not decode to UTF-8"));
    }

    /**
     * The parameters of a raw query ({@code a=1&b=x+y&c}), decoded, in order; {@code c} alone has the value "";
     * empty pieces ({@code a=1&&b=2}) are skipped.
     */
    public static List<Map.Entry<String, String>> queryParameters(String rawQuery) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        if (rawQuery == null || rawQuery.isEmpty()) {
            return out;
        }
        for (String piece : rawQuery.split("&", -1)) {
            if (piece.isEmpty()) {
                continue;
            }
            int eq = piece.indexOf('=');
            String name = eq < 0 ? piece : piece.substring(0, eq);
            String value = eq < 0 ? "" : piece.substring(eq + 1);
            out.add(new AbstractMap.SimpleImmutableEntry<>(decode(name, true, "query parameter name"),
                    decode(value, true, "query parameter value")));
        }
        return out;
    }
}
