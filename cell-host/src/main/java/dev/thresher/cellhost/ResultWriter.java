package dev.thresher.cellhost;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * Builds a reduce result from the guest's {@code json_*} calls with Jackson's streaming generator, so
 * guests never format numbers or escape strings. Enforces one well-formed top-level value, no duplicate
 * keys, finite numbers, and the result size cap; or takes one whole value from {@code result_json}.
 */
final class ResultWriter {
    private static final JsonFactory JSON = JsonFactory.builder()
            .enable(StreamWriteFeature.STRICT_DUPLICATE_DETECTION)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            // Characters outside the BMP as 4-byte UTF-8, not as escaped surrogate pairs.
            .enable(JsonWriteFeature.COMBINE_UNICODE_SURROGATES_IN_UTF8)
            .build();

    private final int maxBytes;
    private final CappedBuffer out;
    private final JsonGenerator gen;
    private boolean started;
    private String raw;

    ResultWriter(int maxBytes) {
        this.maxBytes = maxBytes;
        this.out = new CappedBuffer(maxBytes);
        try {
            this.gen = JSON.createGenerator(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void beginObject() {
        write(() -> gen.writeStartObject(), "begin an object");
    }

    void endObject() {
        write(() -> gen.writeEndObject(), "end an object");
    }

    void beginArray() {
        write(() -> gen.writeStartArray(), "begin an array");
    }

    void endArray() {
        write(() -> gen.writeEndArray(), "end an array");
    }

    void key(String key) {
        write(() -> gen.writeFieldName(key), "write a key");
    }

    void string(String value) {
        write(() -> gen.writeString(value), "write a string");
    }

    void number(double value) {
        if (!Double.isFinite(value)) {
            throw invalid("json_number(" + value + "): JSON has no non-finite numbers");
        }
        write(() -> gen.writeNumber(value), "write a number");
    }

    void integer(long value) {
        write(() -> gen.writeNumber(value), "write an integer");
    }

    void bool(boolean value) {
        write(() -> gen.writeBoolean(value), "write a bool");
    }

    void nullValue() {
        write(() -> gen.writeNull(), "write null");
    }

    /** Takes a whole serialized value from the guest; it must be the only result. */
    void whole(String json) {
        if (started || raw != null) {
            throw invalid("result_json after the result was already started");
        }
        try (JsonParser p = JSON.createParser(json)) {
            if (p.nextToken() == null) {
                throw invalid("result_json: empty");
            }
            p.skipChildren();
            JsonToken trailing = p.nextToken();
            if (trailing != null) {
                throw invalid("result_json: more than one JSON value");
            }
        } catch (JsonProcessingException e) {
            throw invalid("result_json: not JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        raw = json.strip();
    }

    /** The result, once the guest returned success. */
    String finish() {
        if (raw != null) {
            return raw;
        }
        if (!started) {
            throw invalid("reduce returned success without writing a result");
        }
        if (!gen.getOutputContext().inRoot()) {
            throw invalid("the result is unbalanced: an object or array was left open");
        }
        try {
            gen.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private void write(JsonStep step, String what) {
        if (raw != null) {
            throw invalid("cannot " + what + " after result_json");
        }
        if (gen.getOutputContext().inRoot() && started) {
            throw invalid("cannot " + what + ": the result already holds one complete value");
        }
        started = true;
        try {
            step.run();
        } catch (JsonProcessingException e) {
            throw invalid("cannot " + what + " here: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ThresherException invalid(String message) {
        return new ThresherException(ErrorCode.GUEST_INVALID_RESULT, message);
    }

    static ThresherException tooLarge(int maxBytes) {
        return new ThresherException(ErrorCode.RESULT_TOO_LARGE, "reduce result exceeds " + maxBytes + " bytes");
    }

    int maxBytes() {
        return maxBytes;
    }

    @FunctionalInterface
    private interface JsonStep {
        void run() throws IOException;
    }

    /** Refuses to grow past the result cap, so a runaway guest cannot exhaust host memory. */
    private static final class CappedBuffer extends ByteArrayOutputStream {
        private final int cap;

        CappedBuffer(int cap) {
            super(256);
            this.cap = cap;
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            if (count + (long) len > cap) {
                throw tooLarge(cap);
            }
            super.write(b, off, len);
        }

        @Override
        public synchronized void write(int b) {
            if (count + 1L > cap) {
                throw tooLarge(cap);
            }
            super.write(b);
        }
    }
}
