package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One pgwire session once authenticated: who it is, the settings it acts on ({@link SessionSettings}, and the fields
 * read from them), and its transaction state with the transitions PostgreSQL makes: {@link #begin} (BEGIN),
 * {@link #fail} (an error inside a block), {@link #commit} and {@link #rollback} (COMMIT, ROLLBACK), and the
 * implicit block of a simple query of several statements ({@link #queryStarts}, {@link #statementStarts},
 * {@link #queryEnds}). A change of a reported setting (application_name, client_encoding) is written to the
 * {@code reports} consumer a transition takes, as the ParameterStatus PostgreSQL sends. Touched on the connection's
 * event loop only.
 */
final class PgSession implements SessionQueries.Session {
    /** The session setting that bounds this connection's calls: {@code SET thresher.call_deadline_ms = 5000}. */
    static final String CALL_DEADLINE_SETTING = "thresher.call_deadline_ms";
    /** The session setting that turns the call id notice on (the default) or off: {@code SET thresher.call_id_notice = off}. */
    static final String CALL_ID_NOTICE_SETTING = "thresher.call_id_notice";
    static final String APPLICATION_NAME_SETTING = "application_name";
    static final String CLIENT_ENCODING_SETTING = "client_encoding";
    /** The server version a session reports ({@code server_version}). */
    static final String SERVER_VERSION = "16.0 (Thresher 0.1)";
    /** {@code server_version_num} of {@link #SERVER_VERSION}. */
    static final String SERVER_VERSION_NUM = "160000";

    /** The transaction status of ReadyForQuery, as PostgreSQL tracks it. */
    enum TransactionStatus {
        /** Not in a transaction block. */
        IDLE('I'),
        /** In a block after BEGIN. */
        IN_BLOCK('T'),
        /** In a block that failed, where only COMMIT and ROLLBACK are served. */
        FAILED('E');

        /** ReadyForQuery's letter. */
        final char letter;

        TransactionStatus(char letter) {
            this.letter = letter;
        }
    }

    private final Limits limits;
    private String user;
    private String database;
    private String tenant;
    private int processId;
    /** The settings this connection acts on, with their transaction semantics; the fields below follow them. */
    private final SessionSettings settings = new SessionSettings(Map.of(APPLICATION_NAME_SETTING, "",
            CLIENT_ENCODING_SETTING, "UTF8", CALL_DEADLINE_SETTING, "default", CALL_ID_NOTICE_SETTING, "on"));
    private TransactionStatus status = TransactionStatus.IDLE;
    /** A simple query of several statements runs in one implicit transaction block, as in PostgreSQL. */
    private boolean implicitBlock;
    /** The caller's deadline for this connection's calls, or empty for the configured default. */
    private Optional<Long> callDeadlineMs = Optional.empty();
    private String applicationName = "";
    /** UTF8, or SQL_ASCII (no conversion); text is decoded as strict UTF-8 either way. */
    private String clientEncoding = "UTF8";
    /** {@code SET thresher.call_id_notice}: tell the caller each call's id in a NoticeResponse once it is recorded. */
    private boolean callIdNotice = true;

    PgSession(Limits limits) {
        this.limits = limits;
    }

    // ---- who

    /** The session belongs to who authenticated; {@code processId} is its BackendKeyData's. */
    void authenticated(PgAuthentication.Authenticated who) {
        user = who.user();
        database = who.database();
        tenant = who.tenant();
    }

    void processId(int processId) {
        this.processId = processId;
    }

    @Override
    public String user() {
        return user;
    }

    @Override
    public String database() {
        return database;
    }

    /** The authenticated user's tenant: every call, table and journal query of the session happens in it. */
    String tenant() {
        return tenant;
    }

    @Override
    public int processId() {
        return processId;
    }

    /** The caller's deadline for this session's calls, or empty for the configured default. */
    Optional<Long> callDeadlineMs() {
        return callDeadlineMs;
    }

    boolean callIdNotice() {
        return callIdNotice;
    }

    // ---- transaction state

    TransactionStatus status() {
        return status;
    }

    /** Whether a block is open (BEGIN ran), failed or not, or the implicit block of a simple query is. */
    boolean inTransaction() {
        return status != TransactionStatus.IDLE || settings.inTransaction();
    }

    /**
     * In a failed block everything but COMMIT and ROLLBACK is refused with {@code 25P02}, as in PostgreSQL:
     * the error for {@code statement}, or null when it may run.
     */
    PgError refused(ParsedStatement statement) {
        if (status == TransactionStatus.FAILED && !(statement instanceof ParsedStatement.Transaction t
                && t.kind() != ParsedStatement.Transaction.Kind.BEGIN)) {
            return PgError.protocol(SqlStates.IN_FAILED_SQL_TRANSACTION,
                    "current transaction is aborted, commands ignored until end of transaction block");
        }
        return null;
    }

    /** BEGIN: a block opens (BEGIN inside a block only warns in PostgreSQL; the block goes on). */
    void begin() {
        status = TransactionStatus.IN_BLOCK;
        settings.begin();
    }

    /** An error: inside a block, the block fails; outside one, nothing changes. */
    void fail() {
        if (status == TransactionStatus.IN_BLOCK) {
            status = TransactionStatus.FAILED;
        }
    }

    /**
     * COMMIT: the block's SETs stay and its SET LOCALs end; a failed block rolls back instead, as in PostgreSQL.
     *
     * @return the command tag, {@code COMMIT} or {@code ROLLBACK}
     */
    String commit(Consumer<BackendMessage> reports) {
        if (status == TransactionStatus.FAILED) {
            rollback(reports);
            return "ROLLBACK";
        }
        settings.commit();
        status = TransactionStatus.IDLE;
        settingsChanged(reports);
        return "COMMIT";
    }

    /** ROLLBACK: the block's SETs are undone and its SET LOCALs end. */
    void rollback(Consumer<BackendMessage> reports) {
        settings.rollback();
        status = TransactionStatus.IDLE;
        settingsChanged(reports);
    }

    /** A simple query of {@code statements} statements starts: several run in one implicit block. */
    void queryStarts(int statements) {
        implicitBlock = statements > 1;
    }

    /** One of a simple query's statements starts: the statements of one query share a transaction. */
    void statementStarts() {
        if (implicitBlock) {
            settings.begin();
        }
    }

    /**
     * A simple query ends its implicit transaction block, as PostgreSQL does: committed when it ran to its end, rolled
     * back (its SETs undone) when it failed. Nothing happens for a query of one statement or inside an explicit block.
     */
    void queryEnds(boolean ranToEnd, Consumer<BackendMessage> reports) {
        if (implicitBlock && status == TransactionStatus.IDLE && settings.inTransaction()) {
            if (ranToEnd) {
                settings.commit();
            } else {
                settings.rollback();
            }
            settingsChanged(reports);
        }
        implicitBlock = false;
    }

    // ---- settings

    /**
     * The startup packet's settings, as PostgreSQL takes them: every parameter but {@code user}, {@code database},
     * {@code replication}, {@code options} and the protocol's {@code _pq_.*} names a setting, and {@code options}
     * holds {@code -c name=value} and {@code --name=value} (spaces escaped with a backslash). Those this session
     * acts on are checked and kept as the values RESET goes back to; the others (DateStyle, TimeZone,
     * extra_float_digits, search_path, ...) are accepted and ignored.
     *
     * @param ignored told each name ignored
     * @throws ThresherException for a value a kept setting does not take, or malformed options
     */
    void startupSettings(Map<String, String> parameters, Consumer<String> ignored) {
        for (var p : parameters.entrySet()) {
            switch (p.getKey()) {
                case "user", "database", "replication" -> { }
                case "options" -> {
                    for (var option : StartupOptions.parse(p.getValue()).entrySet()) {
                        startupSetting(option.getKey(), option.getValue(), ignored);
                    }
                }
                default -> {
                    if (!p.getKey().startsWith("_pq_.")) {
                        startupSetting(p.getKey(), p.getValue(), ignored);
                    }
                }
            }
        }
        settingsChanged(message -> { }); // reported at startup with the others
        settings.startupDone();
    }

    private void startupSetting(String name, String value, Consumer<String> ignored) {
        String kept = keptSetting(name);
        if (kept != null) {
            settings.set(kept, settingValue(kept, value));
        } else {
            ignored.accept(name);
        }
    }

    /**
     * SET: a setting this session acts on is checked and kept (until the end of the transaction for SET LOCAL,
     * which outside a transaction block only warns, as in PostgreSQL); any other is accepted and ignored.
     *
     * @return whether the setting is one kept here
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} or {@link ErrorCode#INVALID_DEADLINE} for a value
     *     the setting does not take
     */
    boolean set(ParsedStatement.Set s, Consumer<BackendMessage> out) {
        if (s.local() && !settings.inTransaction()) {
            out.accept(new BackendMessage.NoticeResponse("WARNING", SqlStates.NO_ACTIVE_SQL_TRANSACTION,
                    "SET LOCAL can only be used in transaction blocks", null));
        }
        String name = keptSetting(s.name());
        if (name == null) {
            return false;
        }
        String value = s.value().equalsIgnoreCase("default") ? null : settingValue(name, s.value());
        if (s.local()) {
            settings.setLocal(name, value != null ? value : settings.initial(name));
        } else if (value == null) {
            settings.reset(name);
        } else {
            settings.set(name, value);
        }
        settingsChanged(out);
        return true;
    }

    /** RESET name: false when the setting is not one kept here (and nothing changed). */
    boolean reset(String name, Consumer<BackendMessage> reports) {
        String kept = keptSetting(name);
        if (kept == null) {
            return false;
        }
        settings.reset(kept);
        settingsChanged(reports);
        return true;
    }

    /** RESET ALL (and DISCARD ALL's part of it). */
    void resetAll(Consumer<BackendMessage> reports) {
        settings.resetAll();
        settingsChanged(reports);
    }

    /** The name under which {@code name} is kept in {@link #settings} (SET NAMES sets client_encoding), or null. */
    private String keptSetting(String name) {
        String n = name.toLowerCase(java.util.Locale.ROOT);
        if (n.equals("names")) {
            return CLIENT_ENCODING_SETTING;
        }
        return settings.has(n) ? n : null;
    }

    /**
     * A kept setting's value in its canonical text.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} or {@link ErrorCode#INVALID_DEADLINE} for a value
     *     the setting does not take
     */
    private String settingValue(String name, String value) {
        return switch (name) {
            case CLIENT_ENCODING_SETTING -> {
                String served = servedEncoding(value);
                if (served == null) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, unsupportedEncoding(value));
                }
                yield served;
            }
            case CALL_DEADLINE_SETTING -> parseDeadline(value).map(String::valueOf).orElse("default");
            case CALL_ID_NOTICE_SETTING -> parseOnOff(CALL_ID_NOTICE_SETTING, value, true) ? "on" : "off";
            case APPLICATION_NAME_SETTING -> applicationName(value);
            default -> value;
        };
    }

    /** The bytes an application name keeps: PostgreSQL's {@code NAMEDATALEN - 1}. */
    static final int APPLICATION_NAME_MAX_BYTES = 63;

    /**
     * An application name as PostgreSQL keeps it: every byte outside printable ASCII written as {@code \xNN} (its
     * {@code pg_clean_ascii}), then cut to {@link #APPLICATION_NAME_MAX_BYTES}, as {@code pg_stat_activity} shows it.
     * So a session's name, echoed in every ParameterStatus, holds at most 63 bytes whatever the client sent.
     */
    static String applicationName(String value) {
        StringBuilder clean = new StringBuilder(Math.min(value.length(), APPLICATION_NAME_MAX_BYTES));
        for (byte b : value.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            if (clean.length() >= APPLICATION_NAME_MAX_BYTES) {
                break;
            }
            int c = b & 0xff;
            if (c >= 32 && c <= 126) {
                clean.append((char) c);
            } else {
                clean.append(String.format("\\x%02x", c));
            }
        }
        return clean.length() > APPLICATION_NAME_MAX_BYTES ? clean.substring(0, APPLICATION_NAME_MAX_BYTES) : clean.toString();
    }

    /**
     * The fields the session reads follow the settings in effect; a change of application_name or client_encoding is
     * reported in a ParameterStatus, as PostgreSQL does.
     */
    private void settingsChanged(Consumer<BackendMessage> reports) {
        callDeadlineMs = parseDeadline(settings.get(CALL_DEADLINE_SETTING));
        callIdNotice = settings.get(CALL_ID_NOTICE_SETTING).equals("on");
        String name = settings.get(APPLICATION_NAME_SETTING);
        if (!name.equals(applicationName)) {
            reports.accept(new BackendMessage.ParameterStatus(APPLICATION_NAME_SETTING, name));
        }
        applicationName = name;
        String encoding = settings.get(CLIENT_ENCODING_SETTING);
        if (!encoding.equals(clientEncoding)) {
            reports.accept(new BackendMessage.ParameterStatus(CLIENT_ENCODING_SETTING, encoding));
        }
        clientEncoding = encoding;
    }

    /** The parameters reported in ParameterStatus at startup, with their current values, in report order. */
    Map<String, String> reportedParameters() {
        Map<String, String> parameters = new LinkedHashMap<>();
        parameters.put("server_version", SERVER_VERSION);
        parameters.put("server_encoding", "UTF8");
        parameters.put("client_encoding", clientEncoding);
        parameters.put("DateStyle", "ISO, MDY");
        parameters.put("IntervalStyle", "postgres");
        parameters.put("integer_datetimes", "on");
        parameters.put("standard_conforming_strings", "on");
        parameters.put("TimeZone", "UTC");
        parameters.put("is_superuser", "off");
        parameters.put("session_authorization", user);
        parameters.put("application_name", applicationName);
        // libpq's target_session_attrs and pgjdbc's targetServerType read these two without a query.
        parameters.put("default_transaction_read_only", "off");
        parameters.put("in_hot_standby", "off");
        return parameters;
    }

    /**
     * What {@code SHOW name} answers: the parameter's canonical name (the column name, as PostgreSQL
     * names it) and its value. Names are matched without regard to case.
     *
     * @throws ThresherException {@link ErrorCode#UNKNOWN_SETTING} for a parameter this server does not have,
     *     {@link ErrorCode#UNSUPPORTED_STATEMENT} for {@code SHOW ALL}
     */
    Map.Entry<String, String> shown(String name) {
        if (name.equalsIgnoreCase("all")) {
            throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "SHOW ALL is not supported; SHOW one parameter");
        }
        Map<String, String> shown = reportedParameters();
        shown.put("transaction_isolation", "read committed");
        shown.put("transaction_read_only", "off");
        shown.put("default_transaction_isolation", "read committed");
        shown.put("server_version_num", SERVER_VERSION_NUM);
        shown.put("search_path", "\"$user\", public");
        shown.put(CALL_DEADLINE_SETTING, Long.toString(callDeadlineMs.orElse(limits.callDeadlineMs())));
        shown.put(CALL_ID_NOTICE_SETTING, callIdNotice ? "on" : "off");
        for (var setting : shown.entrySet()) {
            if (setting.getKey().equalsIgnoreCase(name)) {
                return setting;
            }
        }
        throw new ThresherException(ErrorCode.UNKNOWN_SETTING, "unrecognized configuration parameter \""
                + Quoted.of(name) + "\"");
    }

    @Override
    public String setting(String name) {
        return shown(name).getValue();
    }

    /**
     * A boolean setting's value as PostgreSQL spells booleans ({@code on}, {@code off}, {@code true}, {@code false},
     * {@code yes}, {@code no}, {@code 1}, {@code 0}, any case), or {@code DEFAULT}.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} for anything else
     */
    private static boolean parseOnOff(String setting, String value, boolean defaultValue) {
        return switch (value.strip().toLowerCase(java.util.Locale.ROOT)) {
            case "default" -> defaultValue;
            case "on", "true", "yes", "1" -> true;
            case "off", "false", "no", "0" -> false;
            default -> throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "parameter \"" + setting
                    + "\" requires a Boolean value (on or off), not '" + Quoted.of(value) + "'");
        };
    }

    /**
     * The client encoding served for a requested one, or null: UTF8 (under PostgreSQL's names for
     * it), and SQL_ASCII, which an interactive psql in a C locale asks for and which, as in
     * PostgreSQL, means no conversion: the bytes must still be valid UTF-8.
     */
    private static String servedEncoding(String encoding) {
        // PostgreSQL compares encoding names by their letters and digits only: 'utf-8' (as asyncpg sends it) is UTF8
        String e = encoding.replaceAll("[^A-Za-z0-9]", "").toLowerCase(java.util.Locale.ROOT);
        if (e.equals("utf8") || e.equals("unicode")) {
            return "UTF8";
        }
        return e.equals("sqlascii") ? "SQL_ASCII" : null;
    }

    private static String unsupportedEncoding(String encoding) {
        return "invalid value for parameter \"client_encoding\": \"" + Quoted.of(encoding)
                + "\"; Thresher serves the UTF8 client encoding (and SQL_ASCII, unconverted) only";
    }

    private Optional<Long> parseDeadline(String value) {
        if (value.equalsIgnoreCase("default")) {
            return Optional.empty();
        }
        long max = limits.maxCallDeadlineMs();
        try {
            long ms = Long.parseLong(value.trim());
            if (ms > 0 && ms <= max) {
                return Optional.of(ms);
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new ThresherException(ErrorCode.INVALID_DEADLINE, CALL_DEADLINE_SETTING + " is 1.." + max
                + " milliseconds or DEFAULT, not '" + Quoted.of(value) + "'");
    }
}
