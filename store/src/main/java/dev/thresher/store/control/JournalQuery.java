package dev.thresher.store.control;

import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalScope;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalSelect.Filter;
import dev.thresher.bindings.JournalSelect.Literal;
import dev.thresher.bindings.JournalSelect.Now;
import dev.thresher.bindings.JournalSelect.Order;
import dev.thresher.bindings.JournalService;
import dev.thresher.bindings.JournalView;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The journal views over the control database ({@link JournalService}): the one query behind pgwire's
 * {@code SELECT ... FROM thresher.invocations}, HTTP's {@code /admin/invocations} and {@code thresher journal}.
 *
 * <p>A {@link JournalSelect} becomes one parameterised statement: the view is a subquery over the coordination
 * tables restricted to the tenant ({@code WHERE tenant = ?}), and the query's filter, order and page apply to that
 * subquery only, so no filter reaches another tenant's rows, nor the calls of a binding the reader may not see
 * ({@link JournalScope}). Identifiers come from this class's list of columns,
 * every literal is a bound parameter. The statement runs in a read-only transaction under
 * {@code statement_timeout} ({@value #STATEMENT_TIMEOUT_MS} ms by default) and answers at most
 * {@link JournalSelect#effectiveLimit()} rows (it reads one more to tell whether more exist).
 *
 * <p>{@code thresher.invocations} is {@code invocations} with the journaled reduction of each call;
 * {@code thresher.shard_runs} is every journaled shard outcome ({@code journal}, kind {@code shard}) with its
 * published slot ({@code shard_runs}) when there is one: a failed slot has a row with its error, a slot refused
 * before its guest ran (nothing journaled) has none.
 */
public final class JournalQuery implements JournalService {
    /** How long one query may run, by default. */
    public static final long STATEMENT_TIMEOUT_MS = 5_000;

    private static final String INVOCATIONS_FROM = """
            FROM invocations i
            LEFT JOIN journal r ON r.tenant = i.tenant AND r.wire_id = i.call_id::text || '/reduce' AND r.kind = 'reduce'
            WHERE i.tenant = ?""";
    private static final String SHARD_RUNS_FROM = """
            FROM journal j
            LEFT JOIN shard_runs s ON s.call_id = j.call_id AND s.wire_id = j.wire_id AND s.tenant = j.tenant
            WHERE j.tenant = ? AND j.kind = 'shard'""";

    /** Each view's columns as expressions over its FROM, in the view's column order. */
    private static final Map<JournalView, Map<String, String>> EXPRESSIONS = new EnumMap<>(JournalView.class);

    static {
        Map<String, String> i = new LinkedHashMap<>();
        i.put("call_id", "i.call_id");
        i.put("binding", "i.binding_name");
        i.put("binding_version", "i.binding_version");
        i.put("component_digest", "i.package_digest");
        i.put("principal", "i.principal");
        i.put("state", "i.state");
        i.put("error_code", "i.error_code");
        i.put("error_name", codeCase("i.error_code", Enum::name));
        i.put("error_category", codeCase("i.error_code", c -> c.category().name()));
        i.put("retry_class", codeCase("i.error_code", c -> c.retryClass().name()));
        i.put("error_message", "i.error_message");
        i.put("attempts", "i.attempts");
        i.put("slot_count", "i.shard_count");
        i.put("slots_published", "(SELECT count(*) FROM shard_runs p WHERE p.call_id = i.call_id AND p.tenant = i.tenant)");
        i.put("coordinator_host", "i.coordinator_host");
        i.put("published_by", "i.published_by");
        i.put("created_at", "i.created_at");
        i.put("deadline_at", "i.deadline_at");
        i.put("finished_at", "i.finished_at");
        i.put("deadline_ms", "i.deadline_ms");
        i.put("duration_ms", "round(extract(epoch FROM i.finished_at - i.created_at) * 1000)::bigint");
        i.put("reduce_host", "r.host_id");
        i.put("reduce_micros", "r.guest_micros");
        i.put("result", "i.result_json");
        EXPRESSIONS.put(JournalView.INVOCATIONS, i);

        Map<String, String> s = new LinkedHashMap<>();
        s.put("call_id", "j.call_id");
        s.put("run_index", "coalesce(j.run_index, s.run_index)");
        s.put("wire_id", "j.wire_id");
        s.put("partition_id", "j.partition_id");
        s.put("epoch", "j.epoch");
        s.put("host_id", "j.host_id");
        s.put("attempts", "j.attempt");
        s.put("state", "CASE WHEN NOT j.succeeded THEN 'failed' WHEN s.call_id IS NOT NULL THEN 'published'"
                + " ELSE 'unpublished' END");
        s.put("lease_until", "s.lease_until");
        s.put("rows_read", "j.row_count");
        s.put("emits", "j.emit_count");
        s.put("entries", "s.entry_count");
        s.put("read_micros", "j.read_micros");
        s.put("guest_micros", "j.guest_micros");
        s.put("guest_started_at", "j.guest_started_at");
        s.put("journaled_at", "j.recorded_at");
        s.put("published_at", "s.published_at");
        // a successful outcome is journaled with error code 0
        s.put("error_code", "CASE WHEN j.succeeded THEN NULL ELSE j.error_code END");
        s.put("error_name", "CASE WHEN j.succeeded THEN NULL ELSE " + codeCase("j.error_code", Enum::name) + " END");
        s.put("error_category", "CASE WHEN j.succeeded THEN NULL ELSE "
                + codeCase("j.error_code", c -> c.category().name()) + " END");
        s.put("retry_class", "CASE WHEN j.succeeded THEN NULL ELSE "
                + codeCase("j.error_code", c -> c.retryClass().name()) + " END");
        s.put("error_message", "CASE WHEN j.succeeded THEN NULL ELSE j.error_message END");
        EXPRESSIONS.put(JournalView.SHARD_RUNS, s);

        for (JournalView v : JournalView.values()) {
            List<String> names = v.columns().stream().map(JournalColumn::name).toList();
            if (!names.equals(List.copyOf(EXPRESSIONS.get(v).keySet()))) {
                throw new IllegalStateException(v.qualifiedName() + ": the view's columns " + names
                        + " differ from their expressions " + EXPRESSIONS.get(v).keySet());
            }
        }
    }

    /** {@code CASE <code> WHEN 1001 THEN 'SYNTAX_ERROR' ... END}, from the one error-code table. */
    private static String codeCase(String code, Function<ErrorCode, String> text) {
        StringBuilder b = new StringBuilder("CASE ").append(code);
        for (ErrorCode c : ErrorCode.values()) {
            b.append(" WHEN ").append(c.code()).append(" THEN '").append(text.apply(c)).append('\'');
        }
        return b.append(" END").toString();
    }

    private final DataSource db;
    private final long statementTimeoutMs;

    public JournalQuery(DataSource db) {
        this(db, STATEMENT_TIMEOUT_MS);
    }

    public JournalQuery(DataSource db, long statementTimeoutMs) {
        this.db = Objects.requireNonNull(db, "db");
        if (statementTimeoutMs < 1) {
            throw new IllegalArgumentException("statementTimeoutMs must be positive, was " + statementTimeoutMs);
        }
        this.statementTimeoutMs = statementTimeoutMs;
    }

    /** A statement and its parameters, in order. */
    record Compiled(String sql, List<Object> parameters) {
    }

    /**
     * The statement that answers {@code select} within {@code scope}: the tenant is always its first parameter, the
     * bindings the scope sees (when it does not see them all) the next ones.
     */
    static Compiled compile(JournalScope scope, JournalSelect select) {
        Objects.requireNonNull(scope, "scope");
        if (select.hasParameters()) {
            throw new IllegalArgumentException("the query still holds parameters " + select.parameterTypes().keySet());
        }
        JournalView view = select.view();
        Map<String, String> expressions = EXPRESSIONS.get(view);
        List<Object> parameters = new ArrayList<>();
        parameters.add(scope.tenant());
        StringBuilder sql = new StringBuilder("SELECT ");
        List<JournalColumn> columns = select.resolvedColumns();
        for (int k = 0; k < columns.size(); k++) {
            sql.append(k == 0 ? "" : ", ").append(ref(view, expressions, columns.get(k).name()));
        }
        sql.append("\nFROM (SELECT ");
        boolean first = true;
        for (Map.Entry<String, String> e : expressions.entrySet()) {
            sql.append(first ? "" : ", ").append(e.getValue()).append(" AS ").append(quote(e.getKey()));
            first = false;
        }
        sql.append('\n').append(view == JournalView.INVOCATIONS ? INVOCATIONS_FROM : SHARD_RUNS_FROM);
        scope.bindings().ifPresent(names -> visibleBindings(view, names, sql, parameters));
        sql.append(") v");
        if (select.where().isPresent()) {
            sql.append("\nWHERE ");
            filter(select, select.where().get(), expressions, sql, parameters);
        }
        sql.append("\nORDER BY ");
        List<Order> order = select.totalOrder();
        for (int k = 0; k < order.size(); k++) {
            Order o = order.get(k);
            sql.append(k == 0 ? "" : ", ").append(ref(view, expressions, o.column()))
                    .append(o.descending() ? " DESC" : " ASC");
        }
        sql.append("\nLIMIT ? OFFSET ?");
        parameters.add((long) select.effectiveLimit() + 1); // one more: whether more rows exist
        parameters.add(select.offset());
        return new Compiled(sql.toString(), parameters);
    }

    /**
     * Restricts the view's subquery to the calls of {@code names}: for {@code thresher.shard_runs}, whose journal rows
     * carry no binding, through their call's invocation. The names are one bound array; none: no row.
     */
    private static void visibleBindings(JournalView view, Set<String> names, StringBuilder sql,
                                        List<Object> parameters) {
        sql.append(view == JournalView.INVOCATIONS ? " AND i.binding_name = ANY (?::text[])"
                : " AND j.call_id IN (SELECT b.call_id FROM invocations b"
                + " WHERE b.tenant = j.tenant AND b.binding_name = ANY (?::text[]))");
        parameters.add(new java.util.TreeSet<>(names).toArray(String[]::new));
    }

    /** {@code v."name"} for a column of the view; nothing else is ever written into the statement. */
    private static String ref(JournalView view, Map<String, String> expressions, String column) {
        String current = view.currentName(column); // a former name reads the column it names now
        if (!expressions.containsKey(current)) {
            throw new ThresherException(ErrorCode.UNKNOWN_COLUMN, "column \"" + column + "\" does not exist");
        }
        return "v." + quote(current);
    }

    private static String quote(String identifier) {
        if (!identifier.matches("[a-z_][a-z0-9_]*")) {
            throw new IllegalStateException("not a column name: " + identifier);
        }
        return '"' + identifier + '"';
    }

    private static void filter(JournalSelect select, Filter f, Map<String, String> expressions, StringBuilder sql,
                               List<Object> parameters) {
        JournalView view = select.view();
        switch (f) {
            case JournalSelect.Compare c -> {
                sql.append(ref(view, expressions, c.column())).append(' ').append(c.op().sql()).append(' ');
                value(select, c.column(), c.value(), sql, parameters);
            }
            case JournalSelect.Null n -> sql.append(ref(view, expressions, n.column())).append(n.negated() ? " IS NOT NULL" : " IS NULL");
            case JournalSelect.In in -> {
                sql.append(ref(view, expressions, in.column())).append(in.negated() ? " NOT IN (" : " IN (");
                for (int k = 0; k < in.values().size(); k++) {
                    sql.append(k == 0 ? "" : ", ");
                    value(select, in.column(), in.values().get(k), sql, parameters);
                }
                sql.append(')');
            }
            case JournalSelect.Like l -> {
                boolean text = select.view().column(l.column()).orElseThrow().type() == dev.thresher.bindings.JournalType.TEXT;
                sql.append(ref(view, expressions, l.column())).append(text ? "" : "::text").append(l.negated() ? " NOT" : "")
                        .append(l.caseInsensitive() ? " ILIKE ?" : " LIKE ?");
                parameters.add(((JournalSelect.Text) l.pattern()).value());
            }
            case JournalSelect.And a -> {
                sql.append('(');
                filter(select, a.left(), expressions, sql, parameters);
                sql.append(" AND ");
                filter(select, a.right(), expressions, sql, parameters);
                sql.append(')');
            }
            case JournalSelect.Or o -> {
                sql.append('(');
                filter(select, o.left(), expressions, sql, parameters);
                sql.append(" OR ");
                filter(select, o.right(), expressions, sql, parameters);
                sql.append(')');
            }
            case JournalSelect.Not n -> {
                sql.append("(NOT ");
                filter(select, n.filter(), expressions, sql, parameters);
                sql.append(')');
            }
        }
    }

    /** One literal as a bound parameter of its column's type. */
    private static void value(JournalSelect select, String column, Literal literal, StringBuilder sql,
                              List<Object> parameters) {
        Object v = JournalSelect.value(select.view().column(column).orElseThrow(), literal);
        switch (v) {
            case Now now -> {
                sql.append("(now() + ?::bigint * interval '1 microsecond')");
                parameters.add(now.offsetMicros());
            }
            case Instant t -> {
                sql.append('?');
                parameters.add(OffsetDateTime.ofInstant(t, ZoneOffset.UTC));
            }
            case String s -> {
                sql.append('?');
                parameters.add(s);
            }
            case Long n -> {
                sql.append('?');
                parameters.add(n);
            }
            case BigDecimal n -> {
                sql.append('?');
                parameters.add(n);
            }
            case UUID u -> {
                sql.append('?');
                parameters.add(u);
            }
            default -> throw new IllegalArgumentException("no parameter for " + v);
        }
    }

    @Override
    public JournalRows select(JournalScope scope, JournalSelect select) {
        Compiled compiled = compile(scope, select);
        List<JournalColumn> columns = select.resolvedColumns();
        int limit = select.effectiveLimit();
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                try (Statement s = c.createStatement()) {
                    s.execute("SET TRANSACTION READ ONLY");
                    s.execute("SET LOCAL statement_timeout = " + statementTimeoutMs);
                }
                List<List<Object>> rows = new ArrayList<>();
                boolean more = false;
                try (PreparedStatement ps = c.prepareStatement(compiled.sql())) {
                    for (int k = 0; k < compiled.parameters().size(); k++) {
                        ps.setObject(k + 1, compiled.parameters().get(k));
                    }
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            if (rows.size() == limit) {
                                more = true;
                                break;
                            }
                            rows.add(row(rs, columns));
                        }
                    }
                }
                return new JournalRows(columns, rows, more);
            } finally {
                c.rollback(); // read only: nothing to keep
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw failure(e);
        }
    }

    private ThresherException failure(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        if (state.equals("57014")) {
            return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the journal query ran longer than its "
                    + statementTimeoutMs + " ms statement timeout; narrow it (a WHERE on call_id or created_at)", e);
        }
        if (state.startsWith("22")) { // data exception: a value out of its type's range
            return new ThresherException(ErrorCode.INVALID_ARGUMENTS, "the journal query's values: " + e.getMessage(), e);
        }
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e);
    }

    private static List<Object> row(ResultSet rs, List<JournalColumn> columns) throws SQLException {
        List<Object> row = new ArrayList<>(columns.size());
        for (int k = 0; k < columns.size(); k++) {
            int at = k + 1;
            Object v = switch (columns.get(k).type()) {
                case TEXT, JSON -> rs.getString(at);
                case INT4 -> {
                    int n = rs.getInt(at);
                    yield rs.wasNull() ? null : n;
                }
                case INT8 -> {
                    long n = rs.getLong(at);
                    yield rs.wasNull() ? null : n;
                }
                case UUID -> rs.getObject(at, UUID.class);
                case TIMESTAMPTZ -> {
                    OffsetDateTime t = rs.getObject(at, OffsetDateTime.class);
                    yield t == null ? null : t.toInstant();
                }
            };
            row.add(v);
        }
        return row;
    }
}
