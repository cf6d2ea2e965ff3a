package dev.thresher.pgwire;

import static dev.thresher.pgwire.PgTypes.JSONB_OID;
import static dev.thresher.pgwire.PgTypes.JSONB_VERSION;
import static dev.thresher.pgwire.PgTypes.JSON_OID;
import static dev.thresher.pgwire.PgTypes.TEXT_OID;
import static dev.thresher.pgwire.PgTypes.UNKNOWN_OID;
import static dev.thresher.pgwire.PgTypes.UNSPECIFIED_OID;
import static dev.thresher.pgwire.PgTypes.VARCHAR_OID;

import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import io.netty.channel.ChannelHandlerContext;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The extended query protocol's Parse, Bind, Describe and Close: statements prepared with their parameters' types,
 * portals bound with their values and formats, both described and closed. Execute runs a portal through the
 * connection's one dispatch of statements. An error is reported through {@code fail} (flushed at once, then
 * everything up to Sync discarded); a bound refused throws {@link ThresherException}, reported the same way by the
 * connection. Touched on the connection's event loop only.
 */
final class PgExtendedProtocol {
    private final ChannelHandlerContext ctx;
    private final PgSession session;
    private final PgStatements statementStore;
    private final Consumer<PgError> fail;

    PgExtendedProtocol(ChannelHandlerContext ctx, PgSession session, PgStatements statementStore,
                       Consumer<PgError> fail) {
        this.ctx = ctx;
        this.session = session;
        this.statementStore = statementStore;
        this.fail = fail;
    }

    private void fail(PgError error) {
        fail.accept(error);
    }

    void parse(FrontendMessage.Parse p) {
        if (p.statementName().isEmpty()) {
            // PostgreSQL drops the unnamed statement at the start of every Parse of it, so a failed Parse
            // leaves none behind and a later Bind to "" cannot run an older statement.
            statementStore.dropUnnamed();
        }
        ParsedStatement statement = CallStatementParser.parse(p.sql());
        PgError refused = session.refused(statement);
        if (refused != null) {
            fail(refused);
            return;
        }
        int count = statement.parameterCount();
        // PostgreSQL accepts more declared types than the statement uses; they are described and bound
        // (Bind must supply a value for each), and their values are ignored.
        int declared = Math.max(count, p.parameterTypes().size());
        List<Integer> types = new ArrayList<>(declared);
        for (int i = 0; i < declared; i++) {
            int oid = i < p.parameterTypes().size() ? p.parameterTypes().get(i) : UNSPECIFIED_OID;
            if (i < count && statement instanceof ParsedStatement.Insert) {
                types.add(oid == UNSPECIFIED_OID || oid == UNKNOWN_OID ? TEXT_OID : oid);
            } else if (i < count && statement instanceof ParsedStatement.Answered answered) {
                types.add(oid != UNSPECIFIED_OID && oid != UNKNOWN_OID ? oid : answered.query().parameterTypes().get(i));
            } else if (i < count && statement instanceof ParsedStatement.Select select) {
                // a parameter left to the server takes the type of the column it is compared with
                types.add(oid != UNSPECIFIED_OID && oid != UNKNOWN_OID ? oid : JournalResults.oid(select.select()
                        .parameterTypes().getOrDefault(i + 1, dev.thresher.bindings.JournalType.TEXT)));
            } else if (i < count) {
                types.add(parameterType(oid));
            } else if (oid == UNSPECIFIED_OID || oid == UNKNOWN_OID) {
                fail(PgError.protocol(SqlStates.INDETERMINATE_DATATYPE,
                        "could not determine data type of parameter $" + (i + 1)));
                return;
            } else {
                types.add(oid);
            }
        }
        if (!p.statementName().isEmpty() && statementStore.hasStatement(p.statementName())) {
            fail(PgError.protocol(SqlStates.DUPLICATE_PREPARED_STATEMENT,
                    "prepared statement \"" + Quoted.of(p.statementName()) + "\" already exists"));
            return;
        }
        statementStore.prepare(p.statementName(), p.sql(), statement, types);
        ctx.write(new BackendMessage.ParseComplete());
    }

    /** The type a parameter is described with: what the client declared, json where it left the choice to us. */
    private static int parameterType(int declared) {
        return switch (declared) {
            case UNSPECIFIED_OID, UNKNOWN_OID -> JSON_OID;
            case JSON_OID, JSONB_OID, TEXT_OID, VARCHAR_OID -> declared;
            default -> throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter $1 has type OID " + declared
                    + "; the arguments must be json, jsonb, text or varchar");
        };
    }

    void bind(FrontendMessage.Bind b) {
        PgStatements.Prepared prepared = statementStore.statement(b.statementName());
        if (prepared == null) {
            fail(PgError.protocol(SqlStates.INVALID_SQL_STATEMENT_NAME,
                    "prepared statement \"" + Quoted.of(b.statementName()) + "\" does not exist"));
            return;
        }
        PgError refused = session.refused(prepared.statement());
        if (refused != null) {
            fail(refused);
            return;
        }
        int count = prepared.parameterTypes().size();
        if (b.parameterValues().size() != count) {
            fail(PgError.error(ErrorCode.PROTOCOL_VIOLATION, "bind message supplies " + b.parameterValues().size()
                    + " parameters, but prepared statement \"" + Quoted.of(b.statementName()) + "\" requires " + count));
            return;
        }
        List<Short> formats = b.parameterFormats();
        if (formats.size() > 1 && formats.size() != count) {
            fail(PgError.error(ErrorCode.PROTOCOL_VIOLATION, "bind message has " + formats.size()
                    + " parameter formats but " + count + " parameters"));
            return;
        }
        String arguments = null;
        JournalResults.Cursor cursor = null;
        SessionQueries.Answer answer = null;
        if (prepared.statement() instanceof ParsedStatement.Answered answered) {
            List<String> values = new ArrayList<>(answered.parameterCount());
            for (int i = 0; i < answered.parameterCount(); i++) {
                byte[] value = b.parameterValues().get(i);
                values.add(value == null ? null : SqlLiterals.raw(prepared.parameterTypes().get(i),
                        formats.isEmpty() ? 0 : format(formats.get(formats.size() == 1 ? 0 : i)), value, i + 1));
            }
            answer = new SessionQueries.Answer(answered.query(), values,
                    JournalResults.formats(b.resultFormats(), answered.query().columns().size()));
        } else if (prepared.statement() instanceof ParsedStatement.Select select) {
            dev.thresher.bindings.JournalSelect query = select.select();
            if (select.parameterCount() > 0) {
                List<dev.thresher.bindings.JournalSelect.Literal> values = new ArrayList<>(select.parameterCount());
                for (int i = 0; i < select.parameterCount(); i++) {
                    values.add(JournalResults.literal(prepared.parameterTypes().get(i),
                            formats.isEmpty() ? 0 : format(formats.get(formats.size() == 1 ? 0 : i)),
                            b.parameterValues().get(i), i + 1));
                }
                query = query.bind(values);
            }
            cursor = new JournalResults.Cursor(query, JournalResults.formats(b.resultFormats(), query.columns().size()));
        } else if (prepared.statement() instanceof ParsedStatement.Insert insert && insert.parameterCount() > 0) {
            List<String> values = new ArrayList<>(insert.parameterCount());
            for (int i = 0; i < insert.parameterCount(); i++) {
                byte[] value = b.parameterValues().get(i);
                values.add(value == null ? null : SqlLiterals.raw(prepared.parameterTypes().get(i),
                        formats.isEmpty() ? 0 : format(formats.get(formats.size() == 1 ? 0 : i)), value, i + 1));
            }
            // the portal runs the INSERT with its values in their places
            prepared = new PgStatements.Prepared(insert.bind(values), prepared.parameterTypes(), prepared.bytes());
        } else if (prepared.statement().parameterCount() == 1) { // values past $1 are bound but not used
            arguments = argument(prepared.parameterTypes().get(0), formats.isEmpty() ? 0 : formats.get(0),
                    b.parameterValues().get(0));
        }
        int columns = PgRows.columns(prepared.statement());
        List<Short> resultFormats = b.resultFormats();
        if (resultFormats.size() > 1 && resultFormats.size() != columns) {
            fail(PgError.error(ErrorCode.PROTOCOL_VIOLATION, "bind message has " + resultFormats.size()
                    + " result formats but query has " + columns + " columns"));
            return;
        }
        short resultFormat = resultFormats.isEmpty() ? 0 : format(resultFormats.get(0));
        statementStore.bind(b.portalName(), prepared, arguments, resultFormat, cursor, answer, b.parameterValues());
        ctx.write(new BackendMessage.BindComplete());
    }

    private static short format(short code) {
        if (code != 0 && code != 1) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "unsupported format code: " + code);
        }
        return code;
    }

    /**
     * The JSON text of a bound argument. Text format and the binary formats of json, text and varchar
     * are the UTF-8 text itself; jsonb's binary format is the version byte {@code 0x01} then the text.
     */
    private static String argument(int typeOid, short formatCode, byte[] value) {
        if (value == null) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the arguments of a call must not be NULL");
        }
        int offset = 0;
        if (format(formatCode) == 1 && typeOid == JSONB_OID) {
            if (value.length == 0 || value[0] != JSONB_VERSION) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "unsupported jsonb binary version "
                        + (value.length == 0 ? "(empty value)" : Byte.toString(value[0])));
            }
            offset = 1;
        }
        return Utf8.decode(ByteBuffer.wrap(value, offset, value.length - offset))
                .orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the arguments are not valid UTF-8"));
    }

    void describe(FrontendMessage.Describe d) {
        switch (d.target()) {
            case STATEMENT -> {
                PgStatements.Prepared prepared = statementStore.statement(d.name());
                if (prepared == null) {
                    fail(PgError.protocol(SqlStates.INVALID_SQL_STATEMENT_NAME,
                            "prepared statement \"" + Quoted.of(d.name()) + "\" does not exist"));
                    return;
                }
                ctx.write(new BackendMessage.ParameterDescription(prepared.parameterTypes()));
                // Result formats are not known before Bind: described as text.
                ctx.write(PgRows.description(prepared.statement(), (short) 0, session));
            }
            case PORTAL -> {
                PgStatements.Portal portal = statementStore.portal(d.name());
                if (portal == null) {
                    fail(PgError.protocol(SqlStates.INVALID_CURSOR_NAME, "portal \"" + Quoted.of(d.name())
                            + "\" does not exist"));
                    return;
                }
                ctx.write(portal.cursor() != null ? portal.cursor().description()
                        : portal.answer() != null ? portal.answer().description()
                        : PgRows.description(portal.prepared().statement(), portal.resultFormat(), session));
            }
        }
    }

    void close(FrontendMessage.Close c) {
        switch (c.target()) {
            case STATEMENT -> {
                // Closing a statement closes the portals built from it (identity: equal statements may differ).
                statementStore.closeStatement(c.name());
            }
            case PORTAL -> statementStore.closePortal(c.name());
        }
        ctx.write(new BackendMessage.CloseComplete());
    }
}
