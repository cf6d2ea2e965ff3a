package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.SessionTokens.Cursor;
import dev.thresher.pgwire.SessionTokens.Kind;
import dev.thresher.pgwire.SessionTokens.Tok;
import dev.thresher.pgwire.SessionTokens.Value;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;

/**
 * The {@code SELECT}s pgwire answers itself, from the session and a fixed catalog of builtin types: what drivers,
 * pools and tools send on connect, to check a connection, or to describe a value. Each is recognised by a strict
 * matcher over its tokens (keywords case-insensitive, whitespace and comments free); nothing is passed on as
 * written, and anything that does not match is left to the journal parser, which refuses it with
 * {@link ErrorCode#UNSUPPORTED_STATEMENT}.
 *
 * <ul>
 * <li>A select list without {@code FROM} of integer and string constants and the session functions
 *     {@code version()}, {@code current_schema[()]}, {@code current_database()}, {@code current_catalog},
 *     {@code current_user}, {@code session_user}, {@code user}, {@code current_role},
 *     {@code current_setting('name')}, {@code pg_backend_pid()} and {@code pg_advisory_unlock_all()} (asyncpg's pool
 *     sends it when a connection is released; Thresher takes no advisory locks), each optionally
 *     {@code pg_catalog.}-qualified and aliased: {@code SELECT 1}, {@code SELECT version()},
 *     {@code SELECT current_schema(), session_user}.</li>
 * <li>pgjdbc's type lookups ({@code TypeInfoCache}): a type's OID by name (for {@code setObject} of a
 *     {@code PGobject} of type {@code jsonb}), a type's kind and name by OID, and its schema and name by OID (for
 *     {@code ResultSetMetaData} of a column whose type pgjdbc does not know); the text pgjdbc 42.7 sends, the
 *     parameter as {@code $1} or inlined (its simple query mode).</li>
 * <li>psql's {@code \gdesc}: {@code SELECT name AS "Column", pg_catalog.format_type(tp, tpm) AS "Type" FROM (VALUES
 *     ('result', '114'::pg_catalog.oid, -1), ...) s(name, tp, tpm)}.</li>
 * </ul>
 */
final class SessionQueries {

    /** The builtin types the lookups know: OID, name, and the name {@code format_type} gives. */
    private record Type(int oid, String name, String formatted) {
    }

    private static final List<Type> TYPES = List.of(
            new Type(16, "bool", "boolean"), new Type(17, "bytea", "bytea"), new Type(18, "char", "\"char\""),
            new Type(19, "name", "name"), new Type(20, "int8", "bigint"), new Type(21, "int2", "smallint"),
            new Type(23, "int4", "integer"), new Type(25, "text", "text"), new Type(26, "oid", "oid"),
            new Type(114, "json", "json"), new Type(700, "float4", "real"), new Type(701, "float8", "double precision"),
            new Type(705, "unknown", "unknown"), new Type(1042, "bpchar", "character"),
            new Type(1043, "varchar", "character varying"), new Type(1082, "date", "date"),
            new Type(1114, "timestamp", "timestamp without time zone"),
            new Type(1184, "timestamptz", "timestamp with time zone"), new Type(1700, "numeric", "numeric"),
            new Type(2278, "void", "void"), new Type(2950, "uuid", "uuid"), new Type(3802, "jsonb", "jsonb"));

    /** What a query may ask of its session. */
    interface Session {
        String user();

        /** The database named at startup (the user name when none was). */
        String database();

        int processId();

        /**
         * {@code SHOW name}'s value.
         *
         * @throws ThresherException {@link ErrorCode#UNKNOWN_SETTING} for a parameter the server does not have
         */
        String setting(String name);
    }

    /** A result column. */
    record Column(String name, int typeOid) {
    }

    /** Computes the rows, each value as its text (null for NULL), from the session and the bound parameters' text. */
    interface Rows {
        List<List<String>> of(Session session, List<String> parameters);
    }

    /**
     * A matched query: its result columns, the types its {@code $n} parameters take when the client leaves them to
     * the server, and its rows.
     */
    record Query(String what, List<Column> columns, List<Integer> parameterTypes, Rows rows) {
        Query {
            columns = List.copyOf(columns);
            parameterTypes = List.copyOf(parameterTypes);
        }

        int parameterCount() {
            return parameterTypes.size();
        }
    }

    private SessionQueries() {
    }

    /** The query {@code sql.substring(from, to)} (a statement starting with SELECT, no semicolon), if it is one. */
    static Optional<Query> match(String sql, int from, int to) {
        List<Tok> tokens;
        try {
            tokens = SessionTokens.tokens(sql, from, to);
        } catch (SqlLexer.LexError e) {
            return Optional.empty(); // left to the journal parser, which says what is wrong
        }
        Optional<Query> q = TypeLookup.match(tokens);
        if (q.isEmpty()) {
            q = describe(tokens);
        }
        if (q.isEmpty()) {
            q = constants(tokens);
        }
        return q;
    }

    // ---- constants and session functions

    private record Item(Column column, Function<Session, String> value) {
    }

    private static Optional<Query> constants(List<Tok> t) {
        Cursor c = new Cursor(t);
        if (!c.word("select")) {
            return Optional.empty();
        }
        List<Item> items = new ArrayList<>();
        do {
            Item item = item(c);
            if (item == null) {
                return Optional.empty();
            }
            Column column = item.column();
            if (c.word("as")) {
                if (!c.at(Kind.WORD) && !c.at(Kind.QUOTED)) {
                    return Optional.empty();
                }
                column = new Column(c.next().text(), column.typeOid());
            } else if (c.at(Kind.QUOTED) || c.at(Kind.WORD) && !c.peek().text().equals("from")) {
                column = new Column(c.next().text(), column.typeOid());
            }
            items.add(new Item(column, item.value()));
        } while (c.symbol(","));
        if (!c.atEnd()) {
            return Optional.empty();
        }
        List<Column> columns = items.stream().map(Item::column).toList();
        return Optional.of(new Query("SELECT", columns, List.of(), (session, parameters) -> {
            List<String> row = new ArrayList<>(items.size());
            for (Item item : items) {
                row.add(item.value().apply(session));
            }
            return List.of(row);
        }));
    }

    private static Item item(Cursor c) {
        if (c.at(Kind.NUMBER) || c.atSymbol("-") && c.peek(1).kind() == Kind.NUMBER) {
            String digits = (c.symbol("-") ? "-" : "") + c.next().text();
            long value;
            try {
                value = Long.parseLong(digits);
            } catch (NumberFormatException e) {
                return null; // a decimal or a number past int8
            }
            int type = value == (int) value ? PgTypes.INT4_OID : PgTypes.INT8_OID;
            return new Item(new Column("?column?", type), s -> Long.toString(value));
        }
        if (c.at(Kind.STRING)) {
            String value = c.next().text();
            return new Item(new Column("?column?", PgTypes.TEXT_OID), s -> value);
        }
        if (!c.at(Kind.WORD)) {
            return null;
        }
        if (c.peek().text().equals("pg_catalog") && c.peek(1).is(Kind.SYMBOL, ".")) {
            c.next();
            c.next();
            if (!c.at(Kind.WORD)) {
                return null;
            }
        }
        String name = c.next().text();
        boolean call = c.symbol("(");
        String argument = null;
        if (call && c.at(Kind.STRING)) {
            argument = c.next().text();
        }
        if (call && !c.symbol(")")) {
            return null;
        }
        String setting = argument;
        Item item = switch (name) {
            case "version" -> call && argument == null
                    ? new Item(new Column(name, PgTypes.TEXT_OID), s -> "PostgreSQL " + PgSession.SERVER_VERSION) : null;
            case "current_schema" -> argument == null ? new Item(new Column(name, PgTypes.NAME_OID), s -> "public") : null;
            case "current_database" -> call && argument == null ? new Item(new Column(name, PgTypes.NAME_OID), Session::database) : null;
            case "current_catalog" -> !call ? new Item(new Column(name, PgTypes.NAME_OID), Session::database) : null;
            case "current_user", "session_user", "user", "current_role" ->
                    !call ? new Item(new Column(name, PgTypes.NAME_OID), Session::user) : null;
            case "current_setting" -> call && argument != null
                    ? new Item(new Column(name, PgTypes.TEXT_OID), s -> s.setting(setting.toLowerCase(Locale.ROOT))) : null;
            case "pg_backend_pid" -> call && argument == null
                    ? new Item(new Column(name, PgTypes.INT4_OID), s -> Integer.toString(s.processId())) : null;
            case "pg_advisory_unlock_all" -> call && argument == null ? new Item(new Column(name, PgTypes.VOID_OID), s -> "") : null;
            default -> null;
        };
        return item;
    }

    // ---- psql's \gdesc

    /**
     * {@code SELECT name AS "Column", pg_catalog.format_type(tp, tpm) AS "Type" FROM (VALUES (name, oid, typmod),
     * ...) s(name, tp, tpm)}: the two headers are psql's translations, so any quoted name is taken.
     */
    private static Optional<Query> describe(List<Tok> t) {
        Cursor c = new Cursor(t);
        if (!(c.word("select") && c.word("name") && c.word("as") && c.at(Kind.QUOTED))) {
            return Optional.empty();
        }
        String nameHeader = c.next().text();
        if (!(c.symbol(",") && c.word("pg_catalog") && c.symbol(".") && c.word("format_type") && c.symbol("(")
                && c.word("tp") && c.symbol(",") && c.word("tpm") && c.symbol(")") && c.word("as") && c.at(Kind.QUOTED))) {
            return Optional.empty();
        }
        String typeHeader = c.next().text();
        if (!(c.word("from") && c.symbol("(") && c.word("values"))) {
            return Optional.empty();
        }
        List<List<String>> rows = new ArrayList<>();
        do {
            if (!c.symbol("(")) {
                return Optional.empty();
            }
            Value name = c.value();
            Value oid = c.symbol(",") ? c.value() : null;
            Value typmod = c.symbol(",") ? c.value() : null;
            if (name == null || oid == null || typmod == null || name.parameter() != 0 || oid.parameter() != 0
                    || typmod.parameter() != 0 || !c.symbol(")")) {
                return Optional.empty();
            }
            rows.add(List.of(name.text(), formatType(oid.text())));
        } while (c.symbol(","));
        if (!(c.symbol(")") && c.word("s") && c.symbol("(") && c.word("name") && c.symbol(",") && c.word("tp")
                && c.symbol(",") && c.word("tpm") && c.symbol(")") && c.atEnd())) {
            return Optional.empty();
        }
        List<List<String>> answer = List.copyOf(rows);
        return Optional.of(new Query("SELECT", List.of(new Column(nameHeader, PgTypes.NAME_OID), new Column(typeHeader, PgTypes.TEXT_OID)),
                List.of(), (session, parameters) -> answer));
    }

    /** PostgreSQL's {@code format_type} of a builtin type, {@code ???} for an OID it does not know (as PostgreSQL). */
    private static String formatType(String oidText) {
        long oid = oid(oidText);
        return TYPES.stream().filter(type -> type.oid() == oid).map(Type::formatted).findFirst().orElse("???");
    }

    private static long oid(String text) {
        try {
            long oid = Long.parseLong(text.strip());
            if (oid >= 0 && oid <= 0xFFFF_FFFFL) {
                return oid;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "invalid input syntax for type oid: \"" + text + "\"");
    }

    // ---- pgjdbc's TypeInfoCache

    /** pgjdbc's lookups of builtin types, each its text with {@code ?} where it binds or inlines the parameter. */
    private enum TypeLookup {
        OID_BY_NAME("SELECT pg_type.oid, typname FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid,"
                + " ns.nspname, r.r from pg_namespace as ns join ( select s.r, (current_schemas(false))[s.r] as nspname"
                + " from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r using ( nspname ) )"
                + " as sp ON sp.nspoid = typnamespace WHERE typname = ? ORDER BY sp.r, pg_type.oid DESC LIMIT 1",
                List.of(new Column("oid", PgTypes.OID_OID), new Column("typname", PgTypes.NAME_OID)), PgTypes.TEXT_OID),
        KIND_BY_OID("SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid"
                + " FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r from pg_namespace as ns"
                + " join ( select s.r, (current_schemas(false))[s.r] as nspname from generate_series(1,"
                + " array_upper(current_schemas(false), 1)) as s(r) ) as r using ( nspname ) ) as sp"
                + " ON sp.nspoid = typnamespace WHERE pg_type.oid = ? ORDER BY sp.r, pg_type.oid DESC",
                List.of(new Column("is_array", PgTypes.BOOL_OID), new Column("typtype", PgTypes.CHAR_OID), new Column("typname", PgTypes.NAME_OID),
                        new Column("oid", PgTypes.OID_OID)), PgTypes.OID_OID),
        NAME_BY_OID("SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t"
                + " JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = ?",
                List.of(new Column("?column?", PgTypes.BOOL_OID), new Column("nspname", PgTypes.NAME_OID), new Column("typname", PgTypes.NAME_OID)), PgTypes.OID_OID);

        private final List<Tok> template;
        private final List<Column> columns;
        private final int parameterType;

        TypeLookup(String template, List<Column> columns, int parameterType) {
            this.template = SessionTokens.tokens(template, 0, template.length());
            this.columns = columns;
            this.parameterType = parameterType;
        }

        static Optional<Query> match(List<Tok> tokens) {
            for (TypeLookup lookup : values()) {
                Optional<Query> q = lookup.matches(tokens);
                if (q.isPresent()) {
                    return q;
                }
            }
            return Optional.empty();
        }

        private Optional<Query> matches(List<Tok> tokens) {
            Cursor c = new Cursor(tokens);
            Value value = null;
            for (Tok expected : template) {
                if (expected.is(Kind.SYMBOL, "?")) {
                    value = c.value();
                    if (value == null) {
                        return Optional.empty();
                    }
                } else if (!c.take(expected)) {
                    return Optional.empty();
                }
            }
            if (!c.atEnd() || value == null || value.parameter() > 1) {
                return Optional.empty();
            }
            Value bound = value;
            Rows rows = (session, parameters) -> {
                String key = bound.parameter() == 1 ? parameters.get(0) : bound.text();
                if (key == null) {
                    return List.of();
                }
                Optional<Type> type = this == OID_BY_NAME
                        ? TYPES.stream().filter(t -> t.name().equals(key)).findFirst()
                        : TYPES.stream().filter(t -> t.oid() == oid(key)).findFirst();
                return type.map(this::row).map(List::of).orElse(List.of());
            };
            return Optional.of(new Query("SELECT", columns, bound.parameter() == 1 ? List.of(parameterType) : List.of(),
                    rows));
        }

        private List<String> row(Type t) {
            String oid = Integer.toString(t.oid());
            return switch (this) {
                case OID_BY_NAME -> List.of(oid, t.name());
                case KIND_BY_OID -> List.of("f", t.oid() == PgTypes.VOID_OID || t.oid() == PgTypes.UNKNOWN_OID ? "p" : "b", t.name(), oid);
                case NAME_BY_OID -> List.of("t", "pg_catalog", t.name());
            };
        }
    }

    // ---- values on the wire

    /** A result value in text (0) or binary (1) format; null stays null. */
    static byte[] encode(int typeOid, String text, short format) {
        if (text == null) {
            return null;
        }
        if (format == 0) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        return switch (typeOid) {
            case PgTypes.BOOL_OID -> new byte[] {(byte) (text.equals("t") ? 1 : 0)};
            case PgTypes.CHAR_OID -> text.getBytes(StandardCharsets.US_ASCII);
            case PgTypes.INT4_OID -> ByteBuffer.allocate(4).putInt(Integer.parseInt(text)).array();
            case PgTypes.INT8_OID -> ByteBuffer.allocate(8).putLong(Long.parseLong(text)).array();
            case PgTypes.OID_OID -> ByteBuffer.allocate(4).putInt((int) Long.parseLong(text)).array();
            case PgTypes.VOID_OID -> new byte[0];
            default -> text.getBytes(StandardCharsets.UTF_8); // name, text, json: the binary format is the text
        };
    }

    /** A column's length in RowDescription: the fixed size of a fixed-size type, -1 for variable-length ones. */
    static short length(int typeOid) {
        return switch (typeOid) {
            case PgTypes.BOOL_OID, PgTypes.CHAR_OID -> 1;
            case PgTypes.INT4_OID, PgTypes.OID_OID, PgTypes.VOID_OID -> 4;
            case PgTypes.INT8_OID -> 8;
            case PgTypes.NAME_OID -> 64;
            default -> -1;
        };
    }

    /**
     * A matched query's answer, bound to a portal (or run by a simple query): its rows once it ran, and how many
     * were sent (Execute may ask for them a few at a time).
     */
    static final class Answer {
        private final Query query;
        private final List<String> parameters;
        private final List<Short> formats;
        private List<List<String>> rows;
        private int sent;

        Answer(Query query, List<String> parameters, List<Short> formats) {
            this.query = query;
            this.parameters = parameters;
            this.formats = List.copyOf(formats);
        }

        BackendMessage.RowDescription description() {
            return SessionQueries.description(query, formats);
        }

        /**
         * Computes the rows, once.
         *
         * @throws ThresherException what the query refuses ({@code current_setting} of an unknown parameter, an OID
         *     that is not a number)
         */
        void run(Session session) {
            if (rows == null) {
                rows = query.rows().of(session, parameters);
            }
        }

        /**
         * Runs the query the first time, then writes the rows not sent yet, at most {@code maxRows} (0: all), then
         * PortalSuspended when rows remain, else CommandComplete.
         */
        void send(Session session, int maxRows, java.util.function.Consumer<BackendMessage> out) {
            run(session);
            int total = rows.size();
            int end = maxRows > 0 ? (int) Math.min(total, (long) sent + maxRows) : total;
            for (int i = sent; i < end; i++) {
                List<String> row = rows.get(i);
                List<byte[]> values = new ArrayList<>(row.size());
                for (int col = 0; col < row.size(); col++) {
                    values.add(encode(query.columns().get(col).typeOid(), row.get(col), formats.get(col)));
                }
                out.accept(new BackendMessage.DataRow(values));
            }
            int written = end - sent;
            sent = end;
            out.accept(end < total ? new BackendMessage.PortalSuspended()
                    : new BackendMessage.CommandComplete(query.what() + " " + written));
        }
    }

    static BackendMessage.RowDescription description(Query query, List<Short> formats) {
        List<BackendMessage.Column> out = new ArrayList<>(query.columns().size());
        for (int i = 0; i < query.columns().size(); i++) {
            Column c = query.columns().get(i);
            out.add(new BackendMessage.Column(c.name(), c.typeOid(), length(c.typeOid()), formats.get(i)));
        }
        return new BackendMessage.RowDescription(out);
    }
}
