package dev.thresher.pgwire;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Builds the bytes a PostgreSQL client sends, written independently of the server's decoders. */
final class FrontendBytes {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    byte[] toByteArray() {
        return out.toByteArray();
    }

    FrontendBytes raw(byte[] bytes) {
        out.writeBytes(bytes);
        return this;
    }

    FrontendBytes sslRequest() {
        return raw(ByteBuffer.allocate(8).putInt(8).putInt(80_877_103).array());
    }

    FrontendBytes gssEncRequest() {
        return raw(ByteBuffer.allocate(8).putInt(8).putInt(80_877_104).array());
    }

    FrontendBytes cancelRequest(int pid, int key) {
        return raw(ByteBuffer.allocate(16).putInt(16).putInt(80_877_102).putInt(pid).putInt(key).array());
    }

    FrontendBytes startup(Map<String, String> parameters) {
        return startup(3, 0, parameters);
    }

    FrontendBytes startup(int major, int minor, Map<String, String> parameters) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        parameters.forEach((k, v) -> {
            cstring(body, k);
            cstring(body, v);
        });
        body.write(0);
        out.writeBytes(ByteBuffer.allocate(8).putInt(8 + body.size()).putInt(major << 16 | minor).array());
        out.writeBytes(body.toByteArray());
        return this;
    }

    FrontendBytes password(String password) {
        return message('p', b -> cstring(b, password));
    }

    FrontendBytes query(String sql) {
        return message('Q', b -> cstring(b, sql));
    }

    FrontendBytes parse(String name, String sql, int... typeOids) {
        return message('P', b -> {
            cstring(b, name);
            cstring(b, sql);
            int16(b, typeOids.length);
            for (int oid : typeOids) {
                int32(b, oid);
            }
        });
    }

    /** A Bind with one text or binary parameter per value ({@code null} = SQL NULL) and one result format. */
    FrontendBytes bind(String portal, String statement, short paramFormat, short resultFormat, byte[]... values) {
        return message('B', b -> {
            cstring(b, portal);
            cstring(b, statement);
            int16(b, 1);
            int16(b, paramFormat);
            int16(b, values.length);
            for (byte[] v : values) {
                if (v == null) {
                    int32(b, -1);
                } else {
                    int32(b, v.length);
                    b.writeBytes(v);
                }
            }
            int16(b, 1);
            int16(b, resultFormat);
        });
    }

    FrontendBytes bindText(String portal, String statement, String... values) {
        byte[][] raw = new byte[values.length][];
        for (int i = 0; i < values.length; i++) {
            raw[i] = values[i].getBytes(StandardCharsets.UTF_8);
        }
        return bind(portal, statement, (short) 0, (short) 0, raw);
    }

    FrontendBytes describe(char target, String name) {
        return message('D', b -> {
            b.write(target);
            cstring(b, name);
        });
    }

    FrontendBytes execute(String portal) {
        return message('E', b -> {
            cstring(b, portal);
            int32(b, 0);
        });
    }

    FrontendBytes close(char target, String name) {
        return message('C', b -> {
            b.write(target);
            cstring(b, name);
        });
    }

    FrontendBytes sync() {
        return message('S', b -> { });
    }

    FrontendBytes flush() {
        return message('H', b -> { });
    }

    FrontendBytes terminate() {
        return message('X', b -> { });
    }

    FrontendBytes copyData(byte[] data) {
        return message('d', b -> b.writeBytes(data));
    }

    FrontendBytes copyDone() {
        return message('c', b -> { });
    }

    FrontendBytes copyFail(String message) {
        return message('f', b -> cstring(b, message));
    }

    FrontendBytes message(char type, java.util.function.Consumer<ByteArrayOutputStream> body) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        body.accept(b);
        out.write(type);
        int32(out, b.size() + 4);
        out.writeBytes(b.toByteArray());
        return this;
    }

    private static void cstring(ByteArrayOutputStream b, String s) {
        b.writeBytes(s.getBytes(StandardCharsets.UTF_8));
        b.write(0);
    }

    private static void int16(ByteArrayOutputStream b, int v) {
        b.write(v >>> 8);
        b.write(v);
    }

    private static void int32(ByteArrayOutputStream b, int v) {
        b.writeBytes(ByteBuffer.allocate(4).putInt(v).array());
    }
}
