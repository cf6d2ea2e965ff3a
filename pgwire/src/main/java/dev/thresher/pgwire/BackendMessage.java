package dev.thresher.pgwire;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/** Every message the server sends; {@link BackendMessageEncoder} writes the bytes given on each record. */
sealed interface BackendMessage {

    /** The single byte {@code 'N'} (no length): the answer to SSLRequest and GSSENCRequest. */
    record EncryptionRefused() implements BackendMessage {
    }

    /** The single byte {@code 'S'} (no length): SSLRequest accepted, the TLS handshake follows. */
    record EncryptionAccepted() implements BackendMessage {
    }

    /** {@code 'R' int32 8, int32 0}. */
    record AuthenticationOk() implements BackendMessage {
    }

    /** {@code 'R' int32 8, int32 3}. */
    record AuthenticationCleartextPassword() implements BackendMessage {
    }

    /** {@code 'R' int32 len, int32 10, cstring mechanism..., byte 0}: the SASL mechanisms offered. */
    record AuthenticationSasl(List<String> mechanisms) implements BackendMessage {
        public AuthenticationSasl {
            mechanisms = List.copyOf(mechanisms);
        }
    }

    /** {@code 'R' int32 len, int32 11, byte[] data}: a SASL challenge (SCRAM's server-first-message). */
    record AuthenticationSaslContinue(byte[] data) implements BackendMessage {
        public AuthenticationSaslContinue {
            data = data.clone();
        }
    }

    /** {@code 'R' int32 len, int32 12, byte[] data}: SASL's outcome data (SCRAM's server-final-message). */
    record AuthenticationSaslFinal(byte[] data) implements BackendMessage {
        public AuthenticationSaslFinal {
            data = data.clone();
        }
    }

    /** {@code 'v' int32 len, int32 newestMinor, int32 n, cstring option[n]}. */
    record NegotiateProtocolVersion(int newestMinorVersion, List<String> unrecognizedOptions)
            implements BackendMessage {
        public NegotiateProtocolVersion {
            unrecognizedOptions = List.copyOf(unrecognizedOptions);
        }
    }

    /** {@code 'S' int32 len, cstring name, cstring value}. */
    record ParameterStatus(String name, String value) implements BackendMessage {
        public ParameterStatus {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
        }
    }

    /** {@code 'K' int32 12, int32 processId, int32 secretKey}. */
    record BackendKeyData(int processId, int secretKey) implements BackendMessage {
    }

    /** {@code 'Z' int32 5, byte status} with status {@code 'I'} (idle: Thresher has no transactions). */
    record ReadyForQuery(char status) implements BackendMessage {
    }

    /**
     * {@code 'T' int32 len, int16 n, n × (cstring name, int32 tableOid, int16 column, int32 typeOid,
     * int16 typeLen, int32 typeMod, int16 format)}.
     */
    record RowDescription(List<Column> columns) implements BackendMessage {
        public RowDescription {
            columns = List.copyOf(columns);
        }
    }

    /** One column of a {@link RowDescription}; {@code typeLength} -1 means variable length. */
    record Column(String name, int typeOid, short typeLength, short format) {
    }

    /** {@code 'D' int32 len, int16 n, n × (int32 len (-1 = NULL), byte[len])}. */
    record DataRow(List<byte[]> values) implements BackendMessage {
        public DataRow {
            values = Collections.unmodifiableList(new ArrayList<>(values));
        }
    }

    /** {@code 'C' int32 len, cstring tag}, e.g. {@code CALL}. */
    record CommandComplete(String tag) implements BackendMessage {
    }

    /**
     * {@code 'G' int32 len, int8 0 (text), int16 n, int16 0[n]}: the server is ready for COPY FROM STDIN's
     * data, {@code n} columns per row, all in text format (CSV included).
     */
    record CopyInResponse(int columns) implements BackendMessage {
    }

    /** {@code 'I' int32 4}. */
    record EmptyQueryResponse() implements BackendMessage {
    }

    /** {@code '1' int32 4}. */
    record ParseComplete() implements BackendMessage {
    }

    /** {@code '2' int32 4}. */
    record BindComplete() implements BackendMessage {
    }

    /** {@code '3' int32 4}. */
    record CloseComplete() implements BackendMessage {
    }

    /** {@code 'n' int32 4}. */
    record NoData() implements BackendMessage {
    }

    /** {@code 's' int32 4}: Execute's row limit was reached; the portal holds more rows. */
    record PortalSuspended() implements BackendMessage {
    }

    /** {@code 't' int32 len, int16 n, int32 typeOid[n]}. */
    record ParameterDescription(List<Integer> typeOids) implements BackendMessage {
        public ParameterDescription {
            typeOids = List.copyOf(typeOids);
        }
    }

    /**
     * {@code 'E' int32 len, (byte field, cstring value)*, 0} with fields {@code S} and {@code V} (severity),
     * {@code C} (SQLSTATE), {@code M} (message), {@code D} (detail) and {@code H} (hint); {@code callId} is the
     * failed call's id when its invocation was recorded (reported in the detail), else null.
     */
    record ErrorResponse(PgError error, String callId) implements BackendMessage {
        public ErrorResponse {
            Objects.requireNonNull(error, "error");
        }

        /** An error that is no call's, or a call's that failed before its invocation was recorded. */
        ErrorResponse(PgError error) {
            this(error, null);
        }

        /**
         * The detail field: the error's ({@code thresher_code=… category=… retry_class=…}), then
         * {@code call_id=<uuid>} for a call that failed after its invocation was recorded.
         */
        String detail() {
            return callId == null ? error.detail() : error.detail() + " call_id=" + callId;
        }
    }

    /**
     * {@code 'N' int32 len, (byte field, cstring value)*, 0} with fields {@code S} and {@code V} (severity:
     * {@code NOTICE}, {@code WARNING}), {@code C} (SQLSTATE: {@code 00000} for a notice), {@code M} (message) and
     * {@code D} (detail, left out when null). A notice may arrive at any time, between any two other messages;
     * clients hand it to the application (pgjdbc as an {@code SQLWarning}, psql on stderr, node-postgres as a
     * {@code notice} event).
     */
    record NoticeResponse(String severity, String sqlState, String message, String detail) implements BackendMessage {
        public NoticeResponse {
            Objects.requireNonNull(severity, "severity");
            Objects.requireNonNull(sqlState, "sqlState");
            Objects.requireNonNull(message, "message");
        }

        /** A {@code NOTICE} ({@code 00000}) with a detail. */
        NoticeResponse(String message, String detail) {
            this("NOTICE", "00000", message, Objects.requireNonNull(detail, "detail"));
        }
    }
}
