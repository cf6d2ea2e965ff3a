package dev.thresher.pgwire;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Splits the bytes a server sent into messages, written independently of the server's encoder. */
final class BackendReader {

    /** One backend message: its type byte and body (after the length). */
    record Message(char type, byte[] body) {
        /** The fields of an ErrorResponse, keyed by field code. */
        Map<Character, String> errorFields() {
            Map<Character, String> fields = new LinkedHashMap<>();
            int i = 0;
            while (body[i] != 0) {
                char code = (char) body[i++];
                int end = indexOfZero(i);
                fields.put(code, new String(body, i, end - i, StandardCharsets.UTF_8));
                i = end + 1;
            }
            return fields;
        }

        String sqlState() {
            return errorFields().get('C');
        }

        /** The body as NUL-separated strings (CommandComplete, ParameterStatus). */
        List<String> strings() {
            List<String> strings = new ArrayList<>();
            int i = 0;
            while (i < body.length) {
                int end = indexOfZero(i);
                strings.add(new String(body, i, end - i, StandardCharsets.UTF_8));
                i = end + 1;
            }
            return strings;
        }

        /** The first column of a DataRow. */
        String firstColumn() {
            ByteBuffer b = ByteBuffer.wrap(body);
            b.getShort();
            int length = b.getInt();
            return new String(body, b.position(), length, StandardCharsets.UTF_8);
        }

        ByteBuffer buffer() {
            return ByteBuffer.wrap(body);
        }

        private int indexOfZero(int from) {
            for (int i = from; i < body.length; i++) {
                if (body[i] == 0) {
                    return i;
                }
            }
            throw new AssertionError("no terminator");
        }
    }

    /** The messages in {@code bytes}; a leading lone {@code 'N'} (answer to SSLRequest) is one message per byte. */
    static List<Message> read(byte[] bytes, int leadingSingleBytes) {
        List<Message> messages = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(bytes);
        for (int i = 0; i < leadingSingleBytes; i++) {
            messages.add(new Message((char) b.get(), new byte[0]));
        }
        while (b.hasRemaining()) {
            char type = (char) b.get();
            int length = b.getInt();
            byte[] body = new byte[length - 4];
            b.get(body);
            messages.add(new Message(type, body));
        }
        return messages;
    }

    static String types(List<Message> messages) {
        StringBuilder s = new StringBuilder();
        messages.forEach(m -> s.append(m.type()));
        return s.toString();
    }
}
