package dev.thresher.cellhost;

import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The host side of one {@code run} or {@code reduce}: what the guest's imports may do in it and what they
 * collected. Lives on the invoking thread only.
 */
final class Invocation implements HostImports {
    enum Kind { RUN, REDUCE }

    /** A guest's failure message is kept to this many bytes. */
    static final int FAIL_MESSAGE_MAX_BYTES = 4096;

    private final Kind kind;
    private final Limits limits;
    private final WasmEngine.WasmSandbox sandbox;
    private final List<Partial> partials = new ArrayList<>();
    private final ResultWriter result;
    private int emitCount;
    /** Emits and partial bytes one run may make: the binding's budgets within the node's limits. */
    private final int emitLimit;
    private final long outputBytesLimit;
    private long outputBytes;
    private ThresherException decided;
    private String failMessage;

    Invocation(Kind kind, Limits limits, Budgets budgets, WasmEngine.WasmSandbox sandbox) {
        this.kind = kind;
        this.limits = limits;
        this.emitLimit = budgets.emits(limits);
        this.outputBytesLimit = budgets.outputBytesOrMax();
        this.sandbox = sandbox;
        this.result = kind == Kind.REDUCE ? new ResultWriter(limits.resultMaxBytes()) : null;
    }

    /** A failure the host decided while the guest ran on (the emit limit); it wins over whatever follows. */
    ThresherException decided() {
        return decided;
    }

    String failMessage() {
        return failMessage;
    }

    List<Partial> partials() {
        return partials;
    }

    int emitCount() {
        return emitCount;
    }

    String resultJson() {
        return result.finish();
    }

    @Override
    public int emit(int keyPtr, int keyLen, double value) {
        if (kind != Kind.RUN) {
            throw invalid("emit called during reduce");
        }
        emitCount++;
        if (emitCount > emitLimit) {
            if (decided == null) {
                decided = new ThresherException(ErrorCode.EMIT_LIMIT_EXCEEDED, "run emitted more than " + emitLimit
                        + " partials" + (emitLimit < limits.emitsPerInvocation() ? " (its binding's budgets.emits)" : ""));
            }
            return 1;
        }
        long len = Integer.toUnsignedLong(keyLen);
        if (len == 0 || len > limits.partialKeyMaxBytes()) {
            throw new ThresherException(ErrorCode.PARTIAL_MALFORMED,
                    "partial key of " + len + " bytes; keys have 1 to " + limits.partialKeyMaxBytes() + " UTF-8 bytes");
        }
        outputBytes += len + 8;
        if (outputBytes > outputBytesLimit) {
            if (decided == null) {
                decided = new ThresherException(ErrorCode.SLOT_TOO_LARGE, "run's partials passed " + outputBytesLimit
                        + " bytes (its binding's budgets.outputBytes: each key's bytes and 8 per value)");
            }
            return 1;
        }
        String key = utf8(read(keyPtr, (int) len), ErrorCode.PARTIAL_MALFORMED, "partial key");
        partials.add(new Partial(key, value));
        return 0;
    }

    @Override
    public void fail(int msgPtr, int msgLen) {
        if (failMessage != null) {
            return;
        }
        int len = (int) Math.min(Integer.toUnsignedLong(msgLen), FAIL_MESSAGE_MAX_BYTES);
        // Lenient on purpose: a message about a failure should survive bad bytes.
        // NUL cannot be stored in the journal's text: it reads as U+FFFD
        failMessage = new String(read(msgPtr, len), StandardCharsets.UTF_8).replace('\u0000', '\uFFFD');
    }

    @Override
    public void jsonBeginObject() {
        writer("json_begin_object").beginObject();
    }

    @Override
    public void jsonEndObject() {
        writer("json_end_object").endObject();
    }

    @Override
    public void jsonBeginArray() {
        writer("json_begin_array").beginArray();
    }

    @Override
    public void jsonEndArray() {
        writer("json_end_array").endArray();
    }

    @Override
    public void jsonKey(int ptr, int len) {
        writer("json_key").key(guestText(ptr, len, "json_key"));
    }

    @Override
    public void jsonString(int ptr, int len) {
        writer("json_string").string(guestText(ptr, len, "json_string"));
    }

    @Override
    public void jsonNumber(double value) {
        writer("json_number").number(value);
    }

    @Override
    public void jsonInteger(long value) {
        writer("json_integer").integer(value);
    }

    @Override
    public void jsonBool(int value) {
        writer("json_bool").bool(value != 0);
    }

    @Override
    public void jsonNull() {
        writer("json_null").nullValue();
    }

    @Override
    public void resultJson(int ptr, int len) {
        writer("result_json").whole(guestText(ptr, len, "result_json"));
    }

    @Override
    public void httpStatus(int status) {
        throw invalid("http_status called during " + kindName());
    }

    @Override
    public void httpHeader(int namePtr, int nameLen, int valuePtr, int valueLen) {
        throw invalid("http_header called during " + kindName());
    }

    @Override
    public void httpBody(int ptr, int len) {
        throw invalid("http_body called during " + kindName());
    }

    @Override
    public int call(int descriptorPtr, int descriptorLen, int argsPtr, int argsLen) {
        throw invalid("call called during " + kindName() + ": only an HTTP handler makes nested calls");
    }

    @Override
    public int callResultLen() {
        throw invalid("call_result_len called during " + kindName());
    }

    private String kindName() {
        return kind == Kind.RUN ? "run" : "reduce";
    }

    private ResultWriter writer(String call) {
        if (result == null) {
            throw invalid(call + " called during run");
        }
        return result;
    }

    private String guestText(int ptr, int len, String call) {
        long n = Integer.toUnsignedLong(len);
        if (n > result.maxBytes()) {
            throw ResultWriter.tooLarge(result.maxBytes());
        }
        return utf8(read(ptr, (int) n), ErrorCode.GUEST_INVALID_RESULT, call + " text");
    }

    /** Reads guest memory; an out-of-bounds range is a trap, as the same access inside wasm would be. */
    private byte[] read(int ptr, int len) {
        long address = Integer.toUnsignedLong(ptr);
        if (address + len > sandbox.memoryBytes()) {
            throw new ThresherException(ErrorCode.GUEST_TRAP, "guest passed bytes [" + address + ", " + (address + len)
                    + ") outside its memory of " + sandbox.memoryBytes() + " bytes");
        }
        return sandbox.readMemory(address, len);
    }

    private static String utf8(byte[] bytes, ErrorCode code, String what) {
        return Utf8.decode(ByteBuffer.wrap(bytes)).orElseThrow(() -> new ThresherException(code, what + " is not valid UTF-8"));
    }

    private static ThresherException invalid(String message) {
        return new ThresherException(ErrorCode.GUEST_INVALID_RESULT, message);
    }
}
