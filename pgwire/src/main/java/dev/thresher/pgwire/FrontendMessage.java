package dev.thresher.pgwire;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Every message a client sends, as {@link StartupDecoder} (untyped startup-phase packets) and
 * {@link FrontendMessageDecoder} (typed messages) produce it. Values are copied out of the network
 * buffers, so a message holds no reference-counted memory and can be queued freely.
 */
sealed interface FrontendMessage {

    /** {@code int32 len, int32 80877103}: the client asks for TLS. */
    record SslRequest() implements FrontendMessage {
    }

    /** {@code int32 len, int32 80877104}: the client asks for GSSAPI encryption. */
    record GssEncRequest() implements FrontendMessage {
    }

    /** {@code int32 16, int32 80877102, int32 pid, int32 key}: sent on a new connection to cancel a query. */
    record CancelRequest(int processId, int secretKey) implements FrontendMessage {
    }

    /** {@code int32 len, int32 version (major << 16 | minor), (cstring name, cstring value)*, 0}. */
    record Startup(int majorVersion, int minorVersion, Map<String, String> parameters) implements FrontendMessage {
        public Startup {
            parameters = Map.copyOf(parameters);
        }
    }

    /**
     * {@code 'p' int32 len, body}: PasswordMessage ({@code cstring password}), SASLInitialResponse
     * ({@code cstring mechanism, int32 n, byte[n] data}) or SASLResponse ({@code byte[] data}); which one only the
     * authentication phase knows, so the body is kept as it came.
     */
    record AuthResponse(byte[] body) implements FrontendMessage {
        public AuthResponse {
            Objects.requireNonNull(body, "body");
        }

        @Override
        public String toString() {
            return "AuthResponse[***]";
        }
    }

    /**
     * A well-framed message whose strings are not valid UTF-8 (the only client encoding served): answered
     * with an error ({@code 22021}) in place of the message, and the connection goes on.
     *
     * @param type the message's type byte
     */
    record InvalidText(char type, String message) implements FrontendMessage {
        public InvalidText {
            Objects.requireNonNull(message, "message");
        }
    }

    /** {@code 'Q' int32 len, cstring sql}: the simple query protocol. */
    record Query(String sql) implements FrontendMessage {
    }

    /** {@code 'P' int32 len, cstring name, cstring sql, int16 n, int32 typeOid[n]}. */
    record Parse(String statementName, String sql, List<Integer> parameterTypes) implements FrontendMessage {
        public Parse {
            parameterTypes = List.copyOf(parameterTypes);
        }
    }

    /**
     * {@code 'B' int32 len, cstring portal, cstring statement, int16 n, int16 formats[n], int16 p,
     * (int32 len (-1 = NULL), byte[len])[p], int16 r, int16 resultFormats[r]}.
     *
     * @param parameterValues the raw values; a {@code null} element is SQL NULL
     */
    record Bind(String portalName, String statementName, List<Short> parameterFormats, List<byte[]> parameterValues,
                List<Short> resultFormats) implements FrontendMessage {
        public Bind {
            parameterFormats = List.copyOf(parameterFormats);
            parameterValues = Collections.unmodifiableList(new ArrayList<>(parameterValues));
            resultFormats = List.copyOf(resultFormats);
        }
    }

    /** Whether Describe or Close names a prepared statement ({@code 'S'}) or a portal ({@code 'P'}). */
    enum Target {
        STATEMENT, PORTAL
    }

    /** {@code 'D' int32 len, byte 'S'|'P', cstring name}. */
    record Describe(Target target, String name) implements FrontendMessage {
    }

    /** {@code 'E' int32 len, cstring portal, int32 maxRows (0 = all)}. */
    record Execute(String portalName, int maxRows) implements FrontendMessage {
    }

    /** {@code 'C' int32 len, byte 'S'|'P', cstring name}. */
    record Close(Target target, String name) implements FrontendMessage {
    }

    /** {@code 'S' int32 4}. */
    record Sync() implements FrontendMessage {
    }

    /** {@code 'H' int32 4}. */
    record Flush() implements FrontendMessage {
    }

    /** {@code 'X' int32 4}. */
    record Terminate() implements FrontendMessage {
    }

    /** {@code 'd' int32 len, byte[len - 4]}: a piece of COPY FROM STDIN's data, cut anywhere. */
    record CopyData(byte[] data) implements FrontendMessage {
        @Override
        public String toString() {
            return "CopyData[" + data.length + " bytes]";
        }
    }

    /** {@code 'c' int32 4}: the end of COPY FROM STDIN's data. */
    record CopyDone() implements FrontendMessage {
    }

    /** {@code 'f' int32 len, cstring message}: the client gives COPY FROM STDIN up. */
    record CopyFail(String message) implements FrontendMessage {
    }
}
