package dev.thresher.store.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalScope;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalSelect.And;
import dev.thresher.bindings.JournalSelect.Compare;
import dev.thresher.bindings.JournalSelect.Filter;
import dev.thresher.bindings.JournalSelect.Op;
import dev.thresher.bindings.JournalSelect.Or;
import dev.thresher.bindings.JournalSelect.Text;
import dev.thresher.bindings.JournalView;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.Pools;
import dev.thresher.store.TestPostgres;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The journal views over a migrated control database holding the calls of two tenants: every query sees one
 * tenant's rows whatever its filter, values come typed, and a slot's journaled outcome shows with its publication.
 */
class JournalQueryTest {
    private static final String ACME = "acme";
    private static final String OTHER = "other";
    private static final JournalScope ACME_ALL = JournalScope.wholeTenant(ACME);
    private static final JournalScope OTHER_ALL = JournalScope.wholeTenant(OTHER);
    private static final UUID OK = UUID.fromString("00000000-0000-4000-8000-000000000001");
    private static final UUID TRAPPED = UUID.fromString("00000000-0000-4000-8000-000000000002");
    private static final UUID RUNNING = UUID.fromString("00000000-0000-4000-8000-000000000003");
    private static final UUID OTHERS = UUID.fromString("00000000-0000-4000-8000-000000000004");

    private static HikariDataSource pool;
    private static JournalQuery journal;

    @BeforeAll
    static void seed() throws Exception {
        pool = Pools.open("journal-query-test", TestPostgres.newDatabase(), null, null, 2);
        ControlStore.migrate(pool);
        journal = new JournalQuery(pool);
        try (Connection c = pool.getConnection()) {
            invocation(c, OK, ACME, "revenue", "succeeded", null, null, "{\"a\":1}", "-10 minutes", "-9 minutes -59.75 seconds");
            invocation(c, TRAPPED, ACME, "trap", "failed", 4001, "guest trapped", null, "-5 minutes", "-4 minutes -59.96 seconds");
            invocation(c, RUNNING, ACME, "revenue", "running", null, null, null, "-1 second", null);
            invocation(c, OTHERS, OTHER, "revenue", "failed", 4001, "secret", null, "-2 minutes", "-2 minutes");
            // OK: two slots published (one journaled before attempts and read times were recorded), its reduction
            journal(c, ACME, OK, 0, "node-1", true, 0, null, 2, 1200L);
            journal(c, ACME, OK, 1, "node-2", true, 0, null, null, null);
            slot(c, ACME, OK, 0, "node-1");
            slot(c, ACME, OK, 1, "node-2");
            try (PreparedStatement ps = c.prepareStatement("""
                    INSERT INTO journal (tenant, wire_id, call_id, kind, host_id, succeeded, guest_micros)
                    VALUES (?, ?, ?, 'reduce', 'node-3', true, 77)""")) {
                ps.setString(1, ACME);
                ps.setString(2, OK + "/reduce");
                ps.setObject(3, OK);
                ps.executeUpdate();
            }
            // TRAPPED: slot 0 failed in its guest, slot 1 journaled but its publication fenced out
            journal(c, ACME, TRAPPED, 0, "node-1", false, 4001, "unreachable executed", 1, 300L);
            journal(c, ACME, TRAPPED, 1, "node-2", true, 0, null, 1, 10L);
            // the other tenant's slot
            journal(c, OTHER, OTHERS, 0, "node-1", false, 4001, "secret", 1, 5L);
        }
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    private static void invocation(Connection c, UUID id, String tenant, String binding, String state, Integer code,
                                   String message, String result, String createdAgo, String finishedAgo) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO invocations (call_id, tenant, binding_name, binding_version, package_digest, principal,
                  coordinator_host, shard_count, deadline_at, state, error_code, error_message, result_json, created_at,
                  finished_at, attempts, deadline_ms)
                VALUES (?, ?, ?, 3, 'sha256:ab', 'p', 'node-1', 2, now() + interval '30 s', ?, ?, ?, ?,
                  now() + ?::interval, now() + ?::interval, 2, 30000)""")) {
            ps.setObject(1, id);
            ps.setString(2, tenant);
            ps.setString(3, binding);
            ps.setString(4, state);
            ps.setObject(5, code);
            ps.setString(6, message);
            ps.setString(7, result);
            ps.setString(8, createdAgo);
            ps.setString(9, finishedAgo);
            ps.executeUpdate();
        }
    }

    private static void journal(Connection c, String tenant, UUID call, int slot, String host, boolean succeeded, int code,
                                String message, Integer attempt, Long readMicros) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO journal (tenant, wire_id, call_id, kind, host_id, partition_id, epoch, succeeded, error_code,
                  error_message, row_count, emit_count, guest_micros, guest_started_at, run_index, attempt, read_micros)
                VALUES (?, ?, ?, 'shard', ?, ?, 4, ?, ?, ?, 100, 3, 900, now(), ?, ?, ?)""")) {
            ps.setString(1, tenant);
            ps.setString(2, call + "/shard/" + slot);
            ps.setObject(3, call);
            ps.setString(4, host);
            ps.setInt(5, 10 + slot);
            ps.setBoolean(6, succeeded);
            ps.setInt(7, code);
            ps.setString(8, message);
            ps.setObject(9, attempt == null ? null : slot); // journaled before slots were recorded: no slot index
            ps.setObject(10, attempt);
            ps.setObject(11, readMicros);
            ps.executeUpdate();
        }
    }

    private static void slot(Connection c, String tenant, UUID call, int slot, String host) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO shard_runs (call_id, run_index, tenant, partition_id, epoch, wire_id, host_id, row_count,
                  emit_count, entry_count, lease_until)
                VALUES (?, ?, ?, ?, 4, ?, ?, 100, 3, 3, now() + interval '30 s')""")) {
            ps.setObject(1, call);
            ps.setInt(2, slot);
            ps.setString(3, tenant);
            ps.setInt(4, 10 + slot);
            ps.setString(5, call + "/shard/" + slot);
            ps.setString(6, host);
            ps.executeUpdate();
        }
    }

    private static JournalSelect select(JournalView view, Filter where, String... columns) {
        return new JournalSelect(view, columns.length == 0 ? view.columns().stream().map(JournalColumn::name).toList()
                : List.of(columns), Optional.ofNullable(where), List.of(), OptionalLong.empty(), 0);
    }

    private static List<Object> column(JournalRows rows, String name) {
        int at = rows.columns().stream().map(JournalColumn::name).toList().indexOf(name);
        return rows.rows().stream().map(r -> r.get(at)).toList();
    }

    @Test
    void aTenantSeesItsOwnCallsOnlyWhateverItsFilter() {
        assertThat(column(journal.select(ACME_ALL, select(JournalView.INVOCATIONS, null)), "call_id"))
                .containsExactly(RUNNING, TRAPPED, OK);
        assertThat(column(journal.select(OTHER_ALL, select(JournalView.INVOCATIONS, null)), "call_id")).containsExactly(OTHERS);
        assertThat(journal.select(JournalScope.wholeTenant("nobody"), select(JournalView.INVOCATIONS, null)).rows()).isEmpty();
        // filters that would match the other tenant's call if the tenant were not bound first
        for (Filter f : List.of(
                new Or(new Compare("call_id", Op.EQ, new Text(OTHERS.toString())), new Compare("state", Op.NE, new Text("x"))),
                new Or(new Compare("error_message", Op.EQ, new Text("secret")),
                        new Compare("attempts", Op.GE, new JournalSelect.Number(BigDecimal.ZERO))),
                new Compare("binding", Op.EQ, new Text("revenue' OR tenant = 'other")),
                new JournalSelect.Not(new Compare("call_id", Op.EQ, new Text(OK.toString()))))) {
            assertThat(column(journal.select(ACME_ALL, select(JournalView.INVOCATIONS, f)), "call_id")).as(f.toString())
                    .doesNotContain(OTHERS);
        }
        assertThat(journal.select(ACME_ALL, select(JournalView.SHARD_RUNS, new Compare("call_id", Op.EQ,
                new Text(OTHERS.toString())))).rows()).isEmpty();
        assertThat(column(journal.select(ACME_ALL, select(JournalView.SHARD_RUNS, null)), "error_message"))
                .doesNotContain("secret");
    }

    @Test
    void aReaderSeesOnlyTheCallsOfTheBindingsItMayCallWhateverItsFilter() {
        JournalScope revenue = JournalScope.bindings(ACME, Set.of("revenue"));
        assertThat(column(journal.select(revenue, select(JournalView.INVOCATIONS, null)), "call_id"))
                .containsExactly(RUNNING, OK);
        assertThat(column(journal.select(JournalScope.bindings(ACME, Set.of("trap", "nothing")),
                select(JournalView.INVOCATIONS, null)), "call_id")).containsExactly(TRAPPED);
        assertThat(journal.select(JournalScope.bindings(ACME, Set.of()), select(JournalView.INVOCATIONS, null)).rows())
                .isEmpty();
        // the same name in another tenant is still not seen
        assertThat(column(journal.select(JournalScope.bindings(OTHER, Set.of("trap")),
                select(JournalView.INVOCATIONS, null)), "call_id")).isEmpty();
        // filters that name the hidden call, or would match it if the bindings were not bound before them
        for (Filter f : List.of(
                new Compare("call_id", Op.EQ, new Text(TRAPPED.toString())),
                new Or(new Compare("binding", Op.EQ, new Text("trap")), new Compare("state", Op.NE, new Text("x"))),
                new Compare("binding", Op.EQ, new Text("revenue') OR (true")))) {
            assertThat(column(journal.select(revenue, select(JournalView.INVOCATIONS, f)), "call_id")).as(f.toString())
                    .doesNotContain(TRAPPED);
        }
        // a slot is seen through its call's binding
        assertThat(column(journal.select(revenue, select(JournalView.SHARD_RUNS, null)), "call_id")).containsOnly(OK)
                .hasSize(2);
        assertThat(journal.select(revenue, select(JournalView.SHARD_RUNS, new Compare("call_id", Op.EQ,
                new Text(TRAPPED.toString())))).rows()).isEmpty();
        assertThat(column(journal.select(JournalScope.bindings(ACME, Set.of("trap")), select(JournalView.SHARD_RUNS, null)),
                "error_message")).contains("unreachable executed");
        // the names are one bound parameter, never text of the statement
        JournalQuery.Compiled c = JournalQuery.compile(JournalScope.bindings(ACME, Set.of("x'); DROP TABLE journal; --")),
                select(JournalView.SHARD_RUNS, null));
        assertThat(c.sql()).doesNotContain("DROP");
        assertThat(c.parameters().get(1)).isEqualTo(new String[] {"x'); DROP TABLE journal; --"});
    }

    @Test
    void theStatementBindsTheTenantFirstAndEveryLiteralAsAParameter() {
        String literal = "x'; DROP TABLE invocations; --";
        JournalQuery.Compiled c = JournalQuery.compile(ACME_ALL, select(JournalView.INVOCATIONS,
                new Or(new Compare("binding", Op.EQ, new Text(literal)), new JournalSelect.Like("call_id",
                        new Text("0000%"), false, false))));
        assertThat(c.parameters().get(0)).isEqualTo(ACME);
        assertThat(c.parameters()).contains(literal, "0000%");
        assertThat(c.sql()).doesNotContain(literal).doesNotContain("0000%").contains("WHERE i.tenant = ?) v");
        // a query holding a parameter not bound yet is a mistake of its front door
        assertThatThrownBy(() -> JournalQuery.compile(ACME_ALL, select(JournalView.INVOCATIONS,
                new Compare("state", Op.EQ, new JournalSelect.Parameter(1))))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void invocationsComeWithTypedValuesAndTheirErrorsClass() {
        JournalRows rows = journal.select(ACME_ALL, select(JournalView.INVOCATIONS, new Compare("call_id", Op.EQ,
                new Text(TRAPPED.toString()))));
        assertThat(rows.rows()).hasSize(1);
        assertThat(rows.more()).isFalse();
        assertThat(column(rows, "binding")).containsExactly("trap");
        assertThat(column(rows, "binding_version")).containsExactly(3);
        assertThat(column(rows, "error_code")).containsExactly(4001);
        assertThat(column(rows, "error_name")).containsExactly("GUEST_TRAP");
        assertThat(column(rows, "error_category")).containsExactly("GUEST_FAILURE");
        assertThat(column(rows, "retry_class")).containsExactly("TERMINAL");
        assertThat(column(rows, "duration_ms")).containsExactly(40L);
        assertThat(column(rows, "slots_published")).containsExactly(0L);
        assertThat(column(rows, "created_at").get(0)).isInstanceOf(Instant.class);
        assertThat(column(rows, "result")).containsOnlyNulls();

        JournalRows ok = journal.select(ACME_ALL, select(JournalView.INVOCATIONS, new Compare("state", Op.EQ,
                new Text("succeeded"))));
        assertThat(column(ok, "result")).containsExactly("{\"a\":1}");
        assertThat(column(ok, "error_name")).containsOnlyNulls();
        assertThat(column(ok, "slots_published")).containsExactly(2L);
        assertThat(column(ok, "reduce_host")).containsExactly("node-3");
        assertThat(column(ok, "reduce_micros")).containsExactly(77L);
        assertThat(column(ok, "duration_ms")).containsExactly(250L);
    }

    @Test
    void aQueryByTheFormerColumnNameReadsTheRunIndexAndIsAnsweredUnderThatName() {
        JournalSelect old = new JournalSelect(JournalView.SHARD_RUNS, List.of("slot_index", "state"),
                Optional.of(new JournalSelect.Compare("call_id", JournalSelect.Op.EQ, new Text(OK.toString()))),
                List.of(new JournalSelect.Order("slot_index", true)), OptionalLong.empty(), 0);
        JournalRows rows = journal.select(ACME_ALL, old);
        assertThat(rows.columns()).extracting(JournalColumn::name).containsExactly("slot_index", "state");
        assertThat(column(rows, "slot_index")).containsExactly(1, 0);
        assertThat(column(rows, "state")).containsExactly("published", "published");
    }

    @Test
    void slotsShowTheirOutcomePublicationAndTimings() {
        JournalSelect bySlot = new JournalSelect(JournalView.SHARD_RUNS, JournalView.SHARD_RUNS.columns().stream()
                .map(JournalColumn::name).toList(), Optional.of(new JournalSelect.In("call_id", List.of(new Text(OK.toString()),
                        new Text(TRAPPED.toString())), false)), List.of(new JournalSelect.Order("call_id", false),
                new JournalSelect.Order("run_index", false)), OptionalLong.empty(), 0);
        JournalRows rows = journal.select(ACME_ALL, bySlot);
        assertThat(column(rows, "call_id")).containsExactly(OK, OK, TRAPPED, TRAPPED);
        assertThat(column(rows, "run_index")).containsExactly(0, 1, 0, 1);
        assertThat(column(rows, "state")).containsExactly("published", "published", "failed", "unpublished");
        assertThat(column(rows, "attempts")).containsExactly(2, null, 1, 1);
        assertThat(column(rows, "read_micros")).containsExactly(1200L, null, 300L, 10L);
        assertThat(column(rows, "guest_micros")).containsExactly(900L, 900L, 900L, 900L);
        assertThat(column(rows, "epoch")).containsExactly(4L, 4L, 4L, 4L);
        assertThat(column(rows, "entries")).containsExactly(3, 3, null, null);
        assertThat(column(rows, "error_code")).containsExactly(null, null, 4001, null);
        assertThat(column(rows, "error_name")).containsExactly(null, null, "GUEST_TRAP", null);
        assertThat(column(rows, "retry_class")).containsExactly(null, null, "TERMINAL", null);
        assertThat(column(rows, "error_message")).containsExactly(null, null, "unreachable executed", null);
        assertThat(column(rows, "published_at").get(0)).isInstanceOf(Instant.class);
        assertThat(column(rows, "published_at").get(2)).isNull();
        assertThat(column(rows, "lease_until").get(1)).isInstanceOf(Instant.class);
    }

    @Test
    void timesNowIntervalsLikeAndPages() {
        JournalSelect recent = select(JournalView.INVOCATIONS, new Compare("created_at", Op.GT,
                new JournalSelect.Now(-6 * 60 * 1_000_000L)), "call_id");
        assertThat(column(journal.select(ACME_ALL, recent), "call_id")).containsExactly(RUNNING, TRAPPED);
        JournalSelect until = select(JournalView.INVOCATIONS, new Compare("created_at", Op.LT,
                new JournalSelect.Timestamp(Instant.now().minusSeconds(6 * 60))), "call_id");
        assertThat(column(journal.select(ACME_ALL, until), "call_id")).containsExactly(OK);
        assertThat(column(journal.select(ACME_ALL, select(JournalView.INVOCATIONS, new JournalSelect.Like("call_id",
                new Text("%0002"), false, false), "call_id")), "call_id")).containsExactly(TRAPPED);
        assertThat(column(journal.select(ACME_ALL, select(JournalView.INVOCATIONS, new JournalSelect.Like("binding",
                new Text("REV%"), true, false), "call_id")), "call_id")).containsExactly(RUNNING, OK);
        assertThat(column(journal.select(ACME_ALL, select(JournalView.INVOCATIONS, new And(new JournalSelect.Null("finished_at",
                true), new Compare("attempts", Op.EQ, new Text("2"))), "call_id")), "call_id")).containsExactly(TRAPPED, OK);

        JournalSelect page = new JournalSelect(JournalView.INVOCATIONS, List.of("call_id"), Optional.empty(),
                List.of(new JournalSelect.Order("binding", false)), OptionalLong.of(2), 0);
        JournalRows first = journal.select(ACME_ALL, page);
        assertThat(column(first, "call_id")).containsExactly(RUNNING, OK); // revenue, newest first, then trap
        assertThat(first.more()).isTrue();
        JournalRows second = journal.select(ACME_ALL, new JournalSelect(JournalView.INVOCATIONS, List.of("call_id"),
                Optional.empty(), page.orderBy(), OptionalLong.of(2), 2));
        assertThat(column(second, "call_id")).containsExactly(TRAPPED);
        assertThat(second.more()).isFalse();
    }

    @Test
    void aValueOutOfItsTypesRangeIsAnInvalidArgumentAndTheQueryIsReadOnly() {
        assertThatThrownBy(() -> journal.select(ACME_ALL, select(JournalView.INVOCATIONS, new Compare("created_at", Op.GT,
                new JournalSelect.Now(Long.MAX_VALUE)))))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        // the pool's connection is usable afterwards, in autocommit
        assertThat(journal.select(ACME_ALL, select(JournalView.INVOCATIONS, null)).rows()).hasSize(3);
    }
}
