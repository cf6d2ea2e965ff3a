package dev.thresher.pgwire;

import static dev.thresher.pgwire.PgTypes.JSON_OID;
import static dev.thresher.pgwire.PgTypes.TEXT_OID;

import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.CallResult;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/**
 * The rows pgwire answers and their descriptions: a call's one json column, SHOW's one text column, SHOW CALL's
 * columns and row, and what Describe answers for a prepared statement or a portal.
 */
final class PgRows {
    private PgRows() {
    }

    /** The name of a call's one column, and of SHOW CALL's json column. */
    static final String RESULT_COLUMN = "result";
    /** SHOW CALL's columns, in order: all text but {@code result}, which is json. */
    static final List<String> SHOW_CALL_COLUMNS = List.of("call_id", "binding", "state", "error_code", "error_message",
            RESULT_COLUMN, "created_at", "finished_at", "deadline_at");
    /** Times as PostgreSQL writes a timestamptz in the ISO style with TimeZone UTC, e.g. {@code 2025-01-31 09:15:02.5+00}. */
    private static final DateTimeFormatter SECONDS = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);

    static BackendMessage.RowDescription showCallDescription(short format) {
        List<BackendMessage.Column> columns = new ArrayList<>(SHOW_CALL_COLUMNS.size());
        for (String name : SHOW_CALL_COLUMNS) {
            // text's and json's binary formats are their text: the same bytes serve both result formats
            columns.add(new BackendMessage.Column(name, name.equals(RESULT_COLUMN) ? JSON_OID : TEXT_OID, (short) -1,
                    format));
        }
        return new BackendMessage.RowDescription(columns);
    }

    static List<byte[]> showCallRow(CallOutcome o) {
        List<byte[]> values = new ArrayList<>(SHOW_CALL_COLUMNS.size());
        values.add(bytes(o.callId().toString()));
        values.add(bytes(o.bindingName()));
        values.add(bytes(o.state()));
        values.add(o.errorCode() == null ? null : bytes(Integer.toString(o.errorCode())));
        values.add(o.errorMessage() == null ? null : bytes(o.errorMessage()));
        values.add(o.resultJson() == null ? null : bytes(o.resultJson()));
        values.add(timestamp(o.createdAt()));
        values.add(timestamp(o.finishedAt()));
        values.add(timestamp(o.deadlineAt()));
        return values;
    }

    /** A timestamptz's text in the ISO style, UTC: microseconds without trailing zeros, {@code +00}. */
    static byte[] timestamp(Instant t) {
        if (t == null) {
            return null;
        }
        StringBuilder s = new StringBuilder(SECONDS.format(t));
        int micros = t.getNano() / 1000;
        if (micros != 0) {
            String fraction = String.format("%06d", micros);
            int end = fraction.length();
            while (fraction.charAt(end - 1) == '0') {
                end--;
            }
            s.append('.').append(fraction, 0, end);
        }
        return bytes(s.append("+00").toString());
    }

    /** How many columns the statement's row has; 0 when it returns none. */
    static int columns(ParsedStatement statement) {
        return switch (statement) {
            case ParsedStatement.Call c -> 1;
            case ParsedStatement.Show s -> 1;
            case ParsedStatement.ShowCall s -> SHOW_CALL_COLUMNS.size();
            case ParsedStatement.Select s -> s.select().columns().size();
            case ParsedStatement.Answered a -> a.query().columns().size();
            default -> 0;
        };
    }

    /** The RowDescription of a statement that returns a row, NoData for the others. */
    static BackendMessage description(ParsedStatement statement, short format, PgSession session) {
        return switch (statement) {
            case ParsedStatement.Call c -> rowDescription(format);
            case ParsedStatement.Show s -> showDescription(session.shown(s.name()).getKey(), format);
            case ParsedStatement.ShowCall s -> showCallDescription(format);
            case ParsedStatement.Select s -> JournalResults.description(s.select().resolvedColumns(),
                    JournalResults.formats(List.of(format), s.select().columns().size()));
            case ParsedStatement.Empty e -> new BackendMessage.NoData();
            case ParsedStatement.Copy c -> new BackendMessage.NoData();
            case ParsedStatement.Insert i -> new BackendMessage.NoData();
            case ParsedStatement.TableStatement t -> new BackendMessage.NoData();
            case ParsedStatement.BindingStatement b -> new BackendMessage.NoData();
            case ParsedStatement.AccessStatement a -> new BackendMessage.NoData();
            case ParsedStatement.Set s -> new BackendMessage.NoData();
            case ParsedStatement.Transaction t -> new BackendMessage.NoData();
            case ParsedStatement.SessionCommand c -> new BackendMessage.NoData();
            case ParsedStatement.Answered a -> SessionQueries.description(a.query(),
                    java.util.Collections.nCopies(a.query().columns().size(), format));
        };
    }

    /** SHOW's one text column, named after the parameter; text's binary format is its text too. */
    static BackendMessage.RowDescription showDescription(String name, short format) {
        return new BackendMessage.RowDescription(List.of(new BackendMessage.Column(name, TEXT_OID, (short) -1, format)));
    }

    static BackendMessage.RowDescription rowDescription(short format) {
        return new BackendMessage.RowDescription(
                List.of(new BackendMessage.Column(RESULT_COLUMN, JSON_OID, (short) -1, format)));
    }

    /** json's binary format is its text, so the same bytes serve both result formats. */
    static BackendMessage.DataRow dataRow(CallResult result) {
        return new BackendMessage.DataRow(List.of(result.resultJson().getBytes(StandardCharsets.UTF_8)));
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
