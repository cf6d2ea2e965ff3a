package dev.thresher.cellhost;

import com.dylibso.chicory.wabt.Wat2Wasm;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Test guests compiled from WAT with Wat2Wasm, cached per source. */
final class TestGuests {
    private static final Map<String, Component> CACHE = new ConcurrentHashMap<>();

    private TestGuests() {
    }

    /** The script guest ({@code script_guest.wat}) answering {@code thresher_abi_version} with {@code version}. */
    static Component scriptGuest(int version) {
        return compile(resource("script_guest.wat").replace("@VERSION@", Integer.toString(version)));
    }

    static Component scriptGuest() {
        return scriptGuest(1);
    }

    /** The paged guest ({@code paged_guest.wat}, ABI v2's {@code run}) answering {@code thresher_abi_version} with {@code version}. */
    static Component pagedGuest(int version) {
        return compile(resource("paged_guest.wat").replace("@VERSION@", Integer.toString(version)));
    }

    static Component compile(String wat) {
        return CACHE.computeIfAbsent(wat, w -> Component.of(Wat2Wasm.parse(w)));
    }

    private static String resource(String name) {
        try (InputStream in = TestGuests.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Builds the input of the script guest; see the ops in {@code script_guest.wat}. */
    static final class Script {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Script emit(String key, double value) {
            return emit(key.getBytes(StandardCharsets.UTF_8), value);
        }

        Script emit(byte[] key, double value) {
            return op('E').bytes(key).f64(value);
        }

        Script emitOrStop(String key, double value) {
            return op('S').bytes(key.getBytes(StandardCharsets.UTF_8)).f64(value);
        }

        Script emitArguments() {
            return op('A');
        }

        Script fail(String message) {
            return op('F').bytes(message.getBytes(StandardCharsets.UTF_8));
        }

        Script status(int status) {
            return op('X').u32(status);
        }

        Script trap() {
            return op('T');
        }

        Script loopForever() {
            return op('L');
        }

        Script outOfBounds() {
            return op('M');
        }

        Script recurseForever() {
            return op('R');
        }

        Script beginObject() {
            return op('{');
        }

        Script endObject() {
            return op('}');
        }

        Script beginArray() {
            return op('[');
        }

        Script endArray() {
            return op(']');
        }

        Script key(String key) {
            return op('k').bytes(key.getBytes(StandardCharsets.UTF_8));
        }

        Script string(String s) {
            return op('s').bytes(s.getBytes(StandardCharsets.UTF_8));
        }

        Script stringBytes(byte[] s) {
            return op('s').bytes(s);
        }

        Script resultJson(String json) {
            return op('r').bytes(json.getBytes(StandardCharsets.UTF_8));
        }

        Script number(double v) {
            return op('n').f64(v);
        }

        Script integer(long v) {
            op('i');
            return raw(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
        }

        Script bool(boolean v) {
            return op('b').u32(v ? 1 : 0);
        }

        Script nul() {
            return op('z');
        }

        byte[] bytes() {
            return out.toByteArray();
        }

        private Script op(char c) {
            out.write(c);
            return this;
        }

        private Script bytes(byte[] b) {
            u32(b.length);
            return raw(b);
        }

        private Script u32(int v) {
            return raw(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
        }

        private Script f64(double v) {
            return raw(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(Double.doubleToRawLongBits(v)).array());
        }

        private Script raw(byte[] b) {
            out.writeBytes(b);
            return this;
        }
    }
}
