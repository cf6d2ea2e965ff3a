package dev.thresher.cellhost;

import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The host side of one {@code handle}: the response the guest builds ({@code http_status}, {@code http_header},
 * {@code http_body}) and its nested calls ({@code call}, {@code call_result_len}). Lives on the invoking thread only.
 */
final class HandlerInvocation {
    /** Headers one response may set, and their bytes (names and values) in all. */
    static final int HEADERS_MAX = 32;
    static final int HEADER_BYTES_MAX = 16 * 1024;
    /** Bytes of a descriptor ({@code name} or {@code name@version}). */
    static final int DESCRIPTOR_MAX_BYTES = 256;
    /** Headers the host sets itself, or that would change how the response is framed: a guest may not set them. */
    static final Set<String> RESERVED_HEADERS = Set.of("content-length", "transfer-encoding", "connection", "keep-alive",
            "upgrade", "te", "trailer", "proxy-connection");

    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}");

    private final Limits limits;
    private final WasmEngine.WasmSandbox sandbox;
    private final GuestIo io;
    private final NestedCalls nested;
    private final Deadline deadline;
    private int status = 200;
    private final List<Map.Entry<String, String>> headers = new ArrayList<>();
    private int headerBytes;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private int calls;
    private NestedCalls.Outcome last;
    private long nestedNanos;
    private ThresherException decided;
    private String failMessage;

    HandlerInvocation(Limits limits, WasmEngine.WasmSandbox sandbox, GuestIo io, NestedCalls nested, Deadline deadline) {
        this.limits = limits;
        this.sandbox = sandbox;
        this.io = io;
        this.nested = nested;
        this.deadline = deadline;
    }

    int status() {
        return status;
    }

    List<Map.Entry<String, String>> headers() {
        return headers;
    }

    byte[] body() {
        return body.toByteArray();
    }

    int calls() {
        return calls;
    }

    /** Time spent waiting for nested calls, not guest time. */
    long nestedNanos() {
        return nestedNanos;
    }

    /** The last nested call's outcome, or null when none was made. */
    NestedCalls.Outcome last() {
        return last;
    }

    /** A failure the host decided while the guest ran on; it wins over whatever follows. */
    ThresherException decided() {
        return decided;
    }

    String failMessage() {
        return failMessage;
    }

    void fail(int msgPtr, int msgLen) {
        if (failMessage != null) {
            return;
        }
        int len = (int) Math.min(Integer.toUnsignedLong(msgLen), Invocation.FAIL_MESSAGE_MAX_BYTES);
        failMessage = new String(read(msgPtr, len), StandardCharsets.UTF_8).replace('\u0000', '\uFFFD');
    }

    void httpStatus(int s) {
        if (s < 200 || s > 599) {
            throw invalid("http_status(" + s + "): a status is 200 to 599");
        }
        status = s;
    }

    void httpHeader(int namePtr, int nameLen, int valuePtr, int valueLen) {
        long n = Integer.toUnsignedLong(nameLen);
        long v = Integer.toUnsignedLong(valueLen);
        if (headers.size() >= HEADERS_MAX || headerBytes + n + v > HEADER_BYTES_MAX) {
            throw invalid("http_header: a response sets at most " + HEADERS_MAX + " headers of " + HEADER_BYTES_MAX
                    + " bytes in all");
        }
        String name = new String(read(namePtr, (int) n), StandardCharsets.ISO_8859_1);
        if (!TOKEN.matcher(name).matches()) {
            throw invalid("http_header: '" + name + "' is not a header name (a token of at most 64 characters)");
        }
        name = name.toLowerCase(Locale.ROOT);
        if (RESERVED_HEADERS.contains(name)) {
            throw invalid("http_header: " + name + " is set by the host");
        }
        byte[] value = read(valuePtr, (int) v);
        for (byte b : value) {
            if ((b < 0x20 && b != '\t') || b == 0x7f) {
                throw invalid("http_header: the value of " + name + " holds a control character");
            }
        }
        headers.add(new AbstractMap.SimpleImmutableEntry<>(name, new String(value, StandardCharsets.ISO_8859_1)));
        headerBytes += (int) (n + v);
    }

    void httpBody(int ptr, int len) {
        long n = Integer.toUnsignedLong(len);
        if (body.size() + n > limits.httpResponseMaxBytes()) {
            if (decided == null) {
                decided = new ThresherException(ErrorCode.RESULT_TOO_LARGE, "the handler's response body passed "
                        + limits.httpResponseMaxBytes() + " bytes (limits.httpResponseMaxBytes)");
            }
            throw decided;
        }
        body.writeBytes(read(ptr, (int) n));
    }

    int call(int descPtr, int descLen, int argsPtr, int argsLen) {
        long d = Integer.toUnsignedLong(descLen);
        long a = Integer.toUnsignedLong(argsLen);
        calls++;
        NestedCalls.Outcome outcome;
        if (calls > limits.nestedCallsPerRequest()) {
            outcome = nested.refused(new ThresherException(ErrorCode.NESTED_CALL_LIMIT_EXCEEDED, "this request already made "
                    + limits.nestedCallsPerRequest() + " nested distributed call" + (limits.nestedCallsPerRequest() == 1 ? "" : "s")
                    + " (limits.nestedCallsPerRequest); call " + calls + " was not made"));
        } else if (d == 0 || d > DESCRIPTOR_MAX_BYTES) {
            outcome = nested.refused(new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a call descriptor is 1 to "
                    + DESCRIPTOR_MAX_BYTES + " bytes (a binding's name, or name@version), was " + d));
        } else if (a > limits.directCallPayloadBytes()) {
            checkRange(argsPtr, a); // a range outside memory traps, as anywhere else
            outcome = nested.refused(new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "the call's arguments are " + a
                    + " bytes; limits.directCallPayloadBytes is " + limits.directCallPayloadBytes()));
        } else {
            String descriptor = Utf8.decode(ByteBuffer.wrap(read(descPtr, (int) d))).orElse(null);
            String args = Utf8.decode(ByteBuffer.wrap(read(argsPtr, (int) a))).orElse(null);
            if (descriptor == null || args == null) {
                outcome = nested.refused(new ThresherException(ErrorCode.INVALID_TEXT_ENCODING, "the call's "
                        + (descriptor == null ? "descriptor" : "arguments") + " are not UTF-8"));
            } else {
                long t = System.nanoTime();
                outcome = nested.call(descriptor, args, deadline);
                nestedNanos += System.nanoTime() - t;
            }
        }
        last = outcome;
        io.replaceInput(outcome.bytes());
        return outcome.code();
    }

    int callResultLen() {
        return last == null ? 0 : last.bytes().length;
    }

    private void checkRange(int ptr, long len) {
        long address = Integer.toUnsignedLong(ptr);
        if (address + len > sandbox.memoryBytes()) {
            throw new ThresherException(ErrorCode.GUEST_TRAP, "guest passed bytes [" + address + ", " + (address + len)
                    + ") outside its memory of " + sandbox.memoryBytes() + " bytes");
        }
    }

    /** Reads guest memory; an out-of-bounds range is a trap, as the same access inside wasm would be. */
    private byte[] read(int ptr, int len) {
        checkRange(ptr, len);
        return sandbox.readMemory(Integer.toUnsignedLong(ptr), len);
    }

    private static ThresherException invalid(String message) {
        return new ThresherException(ErrorCode.GUEST_INVALID_RESULT, message);
    }
}
