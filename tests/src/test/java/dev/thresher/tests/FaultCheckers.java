package dev.thresher.tests;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.tests.FaultCalls.Call;
import dev.thresher.tests.FaultCalls.Kind;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The fault suite's checkers (docs/reliability.md), over the calls the clients made during one fault and over the
 * control database afterwards. Each check says PASS or FAIL with what it found; none asserts anything itself, so a
 * run reports every check of every fault.
 */
final class FaultCheckers {
    /** The application name of the suite's own database sessions, which the terminate fault spares. */
    static final String APPLICATION_NAME = "thresher-fault-suite";
    /** Checker 7: calls succeed again within this long of the heal. */
    static final long RECOVERY_BOUND_MS = 10_000;
    /** Checker 5: an answer arrives within the deadline plus this. */
    static final long ANSWER_GRACE_MS = 1_000;
    /** Checker 6: invocations end within the deadline plus this after the calls stop. */
    static final long TERMINAL_GRACE_MS = 15_000;

    private static final ObjectMapper JSON = new ObjectMapper();

    private FaultCheckers() {}

    /** One checker's verdict. */
    record Check(int number, String name, boolean passed, String detail) {
        String verdict() {
            return passed ? "PASS" : "FAIL";
        }
    }

    /**
     * What happened during one fault: the calls, by the test's clock ({@code injectNanos}, {@code healNanos}), and
     * where the window of its invocations starts on the control database's clock.
     */
    record FaultRun(String fault, String what, long deadlineMs, long heldMs, long healMs, List<Call> calls,
                    long connectFailures,
                    long injectNanos, long healNanos, Timestamp windowStart, boolean flowingBefore,
                    boolean hitsCoordinator, String note) {
        long successes() {
            return calls.stream().filter(c -> c.kind() == Kind.SUCCESS).count();
        }

        /** Successful calls that ended while the fault was held or being healed. */
        long successesDuringFault() {
            return calls.stream().filter(c -> c.kind() == Kind.SUCCESS && c.endNanos() - injectNanos >= 0
                    && c.endNanos() - healNanos < 0).count();
        }

        long maxLatencyMs() {
            return calls.stream().mapToLong(Call::latencyMs).max().orElse(0);
        }

        /** Failures by Thresher error name, and transport failures by SQLSTATE. */
        Map<String, Long> failures() {
            Map<String, Long> m = new TreeMap<>();
            for (Call c : calls) {
                if (c.kind() == Kind.ERROR) {
                    m.merge(name(c.code()), 1L, Long::sum);
                } else if (c.kind() == Kind.TRANSPORT) {
                    m.merge("transport " + (c.sqlState() == null ? "?" : c.sqlState()), 1L, Long::sum);
                }
            }
            return m;
        }

        /** From the heal to the end of the first successful call started after it, or -1. */
        long recoveryMs() {
            return calls.stream().filter(c -> c.kind() == Kind.SUCCESS && c.startNanos() - healNanos >= 0)
                    .mapToLong(c -> TimeUnit.NANOSECONDS.toMillis(c.endNanos() - healNanos)).min().orElse(-1);
        }
    }

    static String name(Integer code) {
        if (code == null) {
            return "?";
        }
        for (ErrorCode e : ErrorCode.values()) {
            if (e.code() == code) {
                return e.name();
            }
        }
        return Integer.toString(code);
    }

    static Connection control(DevCluster databases) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", DevCluster.USER);
        p.setProperty("password", DevCluster.PASSWORD);
        p.setProperty("ApplicationName", APPLICATION_NAME);
        p.setProperty("connectTimeout", "5");
        p.setProperty("socketTimeout", "30");
        return DriverManager.getConnection(databases.controlUrl(), p);
    }

    /** The control database's clock, retried for up to {@code maxMillis} while it does not answer. */
    static Timestamp controlNow(DevCluster databases, long maxMillis) throws Exception {
        return Await.until("the control database's clock", java.time.Duration.ofMillis(maxMillis),
                java.time.Duration.ofMillis(200), () -> {
                    try (Connection c = control(databases); var s = c.createStatement();
                         ResultSet rs = s.executeQuery("SELECT clock_timestamp()")) {
                        rs.next();
                        return rs.getTimestamp(1);
                    }
                }, now -> true);
    }

    /**
     * Checker 8, for a fault under which no node fails (PostgreSQL away from every node at once): every partition has
     * the leader and the epoch it had before, two leases after the heal. An outage that ended every lease must not
     * end in a standby taking its home nodes' partitions and handing them back, each move failing calls stale.
     */
    static Check leadersKept(java.util.SortedMap<Integer, String> before, java.util.SortedMap<Integer, String> after) {
        List<String> moved = new ArrayList<>();
        for (var e : before.entrySet()) {
            String now = after.get(e.getKey());
            if (!e.getValue().equals(now)) {
                moved.add("partition " + e.getKey() + ": " + e.getValue() + " -> " + now);
            }
        }
        return new Check(8, "no partition changes hands when no node failed", moved.isEmpty(), moved.isEmpty()
                ? before.size() + " partitions led by the same node at the same epoch two leases after the heal"
                : moved.size() + " of " + before.size() + " moved: " + String.join(", ", moved));
    }

    /** Runs every checker over {@code run}; checker 6 polls for up to the deadline + 15 s. */
    static List<Check> check(FaultRun run, DevCluster databases, Map<String, double[]> reference) throws Exception {
        List<Check> checks = new ArrayList<>();
        // Checker 6 first: the others read the invocations once they ended.
        Check terminal = invocationsEnd(run, databases);
        checks.add(noWrongResult(run, databases, reference));
        checks.add(onePublishedResult(run, databases));
        checks.add(noSlotAfterDeadline(databases, run.windowStart()));
        checks.add(noGuestAfterDeadline(databases, run.windowStart()));
        checks.add(answersWithinDeadline(run));
        checks.add(terminal);
        checks.add(recovery(run));
        return checks;
    }

    /** 1. Every successful result, answered or only published, equals SQL over the shard databases. */
    static Check noWrongResult(FaultRun run, DevCluster databases, Map<String, double[]> reference) throws Exception {
        List<String> wrong = new ArrayList<>();
        run.calls().stream().filter(c -> c.wrong() != null)
                .forEach(c -> wrong.add("answered " + c.callId() + ": " + c.wrong()));
        int published = 0;
        try (Connection c = control(databases); PreparedStatement ps = c.prepareStatement(
                "SELECT call_id, result_json FROM invocations WHERE state = 'succeeded' AND created_at >= ?")) {
            ps.setTimestamp(1, run.windowStart());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    published++;
                    String json = rs.getString(2);
                    String d = json == null ? "no result" : Cluster.differs(JSON.readTree(json), reference);
                    if (d != null) {
                        wrong.add("published " + rs.getString(1) + ": " + d);
                    }
                }
            }
        }
        return new Check(1, "no wrong or partial result", wrong.isEmpty(), wrong.isEmpty()
                ? run.successes() + " answered and " + published + " published results equal the SQL reference"
                : wrong.size() + " wrong: " + first(wrong));
    }

    /**
     * 2. At most one published result per invocation: a succeeded invocation has its one result, a failed one none,
     * one journaled reduction per call, no call id answered twice, and what a caller was answered agrees with what
     * the invocation records (a result equal to the published one; an error only for an invocation not succeeded).
     */
    static Check onePublishedResult(FaultRun run, DevCluster databases) throws Exception {
        List<String> problems = new ArrayList<>();
        Map<String, String[]> recorded = new HashMap<>();
        try (Connection c = control(databases)) {
            problems.addAll(countIsZero(c, "succeeded invocations without a result", """
                    SELECT count(*) FROM invocations WHERE state = 'succeeded' AND result_json IS NULL
                      AND created_at >= ?""", run.windowStart()));
            problems.addAll(countIsZero(c, "invocations not succeeded with a result", """
                    SELECT count(*) FROM invocations WHERE state <> 'succeeded' AND result_json IS NOT NULL
                      AND created_at >= ?""", run.windowStart()));
            problems.addAll(countIsZero(c, "calls with more than one journaled reduction", """
                    SELECT count(*) FROM (SELECT j.call_id FROM journal j JOIN invocations i USING (call_id)
                      WHERE j.kind = 'reduce' AND j.succeeded AND i.created_at >= ?
                      GROUP BY j.call_id HAVING count(*) > 1) t""", run.windowStart()));
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT call_id, state, result_json FROM invocations WHERE created_at >= ?")) {
                ps.setTimestamp(1, run.windowStart());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        recorded.put(rs.getString(1), new String[] {rs.getString(2), rs.getString(3)});
                    }
                }
            }
        }
        Map<String, List<Call>> byId = run.calls().stream().filter(x -> x.callId() != null)
                .collect(Collectors.groupingBy(Call::callId));
        for (var e : byId.entrySet()) {
            if (e.getValue().size() > 1) {
                problems.add("call " + e.getKey() + " answered " + e.getValue().size() + " times");
            }
            for (Call call : e.getValue()) {
                String[] r = recorded.get(e.getKey());
                if (r == null) {
                    problems.add("call " + e.getKey() + " answered but not recorded");
                } else if (call.kind() == Kind.SUCCESS && !("succeeded".equals(r[0]) && sameJson(call.result(), r[1]))) {
                    problems.add("call " + e.getKey() + " answered a result but recorded " + r[0]);
                } else if (call.kind() == Kind.ERROR && "succeeded".equals(r[0]) && !"AMBIGUOUS".equals(call.retryClass())) {
                    // an ambiguous answer says the outcome is unknown: a published result behind it is what it allows
                    problems.add("call " + e.getKey() + " answered " + name(call.code()) + " (" + call.retryClass()
                            + ") but its result was published");
                }
            }
        }
        long withoutId = run.calls().stream().filter(x -> x.kind() == Kind.SUCCESS && x.callId() == null).count();
        if (withoutId > 0) {
            problems.add(withoutId + " successful calls without a call id notice");
        }
        return new Check(2, "at most one published result per invocation", problems.isEmpty(), problems.isEmpty()
                ? recorded.size() + " invocations, " + byId.size() + " answered calls with their id: consistent"
                : first(problems));
    }

    /** 3. No slot published after its call's deadline (the control database's clock). */
    static Check noSlotAfterDeadline(DevCluster databases, Timestamp since) throws Exception {
        try (Connection c = control(databases)) {
            List<String> p = countIsZero(c, "slots published after their call's deadline", """
                    SELECT count(*) FROM shard_runs s JOIN invocations i USING (call_id)
                    WHERE s.published_at > i.deadline_at AND i.created_at >= ?""", since);
            return new Check(3, "no slot published after its call's deadline", p.isEmpty(),
                    p.isEmpty() ? "0 of " + count(c, "SELECT count(*) FROM shard_runs s JOIN invocations i USING"
                            + " (call_id) WHERE i.created_at >= ?", since) + " slots" : p.get(0) + worst(c, """
                            SELECT max(s.published_at - i.deadline_at) FROM shard_runs s JOIN invocations i
                            USING (call_id) WHERE i.created_at >= ?""", since));
        }
    }

    /** 4. No guest started after its call's deadline ({@code journal.guest_started_at}, the control database's clock). */
    static Check noGuestAfterDeadline(DevCluster databases, Timestamp since) throws Exception {
        try (Connection c = control(databases)) {
            if (count(c, """
                    SELECT count(*) FROM information_schema.columns
                    WHERE table_name = 'journal' AND column_name = 'guest_started_at'""", null) == 0) {
                return new Check(4, "no guest started after its call's deadline", false,
                        "column missing: journal.guest_started_at does not exist (migration V9 not applied)");
            }
            List<String> p = countIsZero(c, "guests started after their call's deadline", """
                    SELECT count(*) FROM journal j JOIN invocations i USING (call_id)
                    WHERE j.guest_started_at > i.deadline_at AND i.created_at >= ?""", since);
            long started = count(c, """
                    SELECT count(*) FROM journal j JOIN invocations i USING (call_id)
                    WHERE j.guest_started_at IS NOT NULL AND i.created_at >= ?""", since);
            long journaled = count(c, """
                    SELECT count(*) FROM journal j JOIN invocations i USING (call_id)
                    WHERE j.kind = 'shard' AND i.created_at >= ?""", since);
            return new Check(4, "no guest started after its call's deadline", p.isEmpty(), p.isEmpty()
                    ? "0 of " + started + " guest starts (" + journaled + " shard journal entries)"
                    : p.get(0) + worst(c, """
                            SELECT max(j.guest_started_at - i.deadline_at) FROM journal j JOIN invocations i
                            USING (call_id) WHERE i.created_at >= ?""", since));
        }
    }

    /**
     * 5. Every answer, success or error, arrives within the deadline + 1 s by the client's clock. A call in flight
     * while its coordinator process was frozen or killed is named apart (nothing can answer from a stopped process):
     * it is not counted against the bound.
     */
    static Check answersWithinDeadline(FaultRun run) {
        long bound = run.deadlineMs() + ANSWER_GRACE_MS;
        List<Call> late = new ArrayList<>();
        long exempt = 0;
        for (Call c : run.calls()) {
            if (c.latencyMs() <= bound) {
                continue;
            }
            boolean overlapsFault = c.startNanos() - run.healNanos() < 0 && c.endNanos() - run.injectNanos() > 0;
            if (run.hitsCoordinator() && overlapsFault) {
                exempt++;
            } else {
                late.add(c);
            }
        }
        String exemptNote = exempt == 0 ? "" : "; " + exempt + " calls in flight on the frozen or killed coordinator"
                + " not counted";
        if (late.isEmpty()) {
            return new Check(5, "every answer within the deadline + 1 s", true, run.calls().size() + " calls, max "
                    + run.maxLatencyMs() + " ms, bound " + bound + " ms" + exemptNote);
        }
        Call worst = late.stream().max((a, b) -> Long.compare(a.latencyMs(), b.latencyMs())).orElseThrow();
        Map<String, Long> how = late.stream().collect(Collectors.groupingBy(
                c -> c.kind() == Kind.ERROR ? name(c.code()) : c.kind() == Kind.SUCCESS ? "success" : "no answer",
                TreeMap::new, Collectors.counting()));
        return new Check(5, "every answer within the deadline + 1 s", false, late.size() + " of " + run.calls().size()
                + " calls answered after " + bound + " ms " + how + ", worst " + worst.latencyMs() + " ms ("
                + (worst.kind() == Kind.ERROR ? name(worst.code()) : worst.kind()) + ")" + exemptNote);
    }

    /** 6. Every invocation of the fault's window reaches a terminal state within the deadline + 15 s of the calls' end. */
    static Check invocationsEnd(FaultRun run, DevCluster databases) throws Exception {
        long started = System.nanoTime();
        Await.Polled<Long> ended = Await.poll(java.time.Duration.ofMillis(run.deadlineMs() + TERMINAL_GRACE_MS),
                java.time.Duration.ofMillis(250), () -> {
                    try (Connection c = control(databases)) {
                        return count(c, "SELECT count(*) FROM invocations WHERE state = 'running' AND created_at >= ?",
                                run.windowStart());
                    }
                }, n -> n == 0);
        if (ended.failure() != null) {
            throw ended.failure();
        }
        long running = ended.value();
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        String how;
        try (Connection c = control(databases); PreparedStatement ps = c.prepareStatement("""
                SELECT state || coalesce(' ' || error_code, ''), count(*) FROM invocations WHERE created_at >= ?
                GROUP BY 1 ORDER BY 1""")) {
            ps.setTimestamp(1, run.windowStart());
            Map<String, Long> states = new TreeMap<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String[] parts = rs.getString(1).split(" ");
                    states.put(parts[0] + (parts.length > 1 ? " " + name(Integer.valueOf(parts[1])) : ""), rs.getLong(2));
                }
            }
            how = states.toString();
        }
        return new Check(6, "every invocation ends", running == 0, running == 0
                ? "all terminal " + waited + " ms after the calls stopped; " + how
                : running + " still running " + waited + " ms after the calls stopped (bound " + (run.deadlineMs()
                        + TERMINAL_GRACE_MS) + " ms); " + how);
    }

    /** 7. A call started after the heal succeeds within 10 s of it, and every call started 10 s after it succeeds. */
    static Check recovery(FaultRun run) {
        long recovery = run.recoveryMs();
        long boundNanos = run.healNanos() + TimeUnit.MILLISECONDS.toNanos(RECOVERY_BOUND_MS);
        List<Call> failedLate = run.calls().stream()
                .filter(c -> c.startNanos() - boundNanos >= 0 && c.kind() != Kind.SUCCESS).toList();
        boolean passed = recovery >= 0 && recovery <= RECOVERY_BOUND_MS && failedLate.isEmpty();
        String detail = recovery < 0 ? "no call started after the heal succeeded"
                : "first success " + recovery + " ms after the heal";
        if (!failedLate.isEmpty()) {
            detail += "; " + failedLate.size() + " calls started 10 s after the heal failed";
        }
        List<Call> failedAfterHeal = run.calls().stream()
                .filter(c -> c.startNanos() - run.healNanos() >= 0 && c.kind() != Kind.SUCCESS).toList();
        if (!failedAfterHeal.isEmpty()) {
            Map<String, Long> how = failedAfterHeal.stream().collect(Collectors.groupingBy(
                    c -> c.kind() == Kind.ERROR ? name(c.code()) : "transport " + c.sqlState(), TreeMap::new,
                    Collectors.counting()));
            detail += "; calls started after the heal that failed: " + how + ", the last: "
                    + failedAfterHeal.get(failedAfterHeal.size() - 1).message();
        }
        if (!run.flowingBefore()) {
            passed = false;
            detail += "; calls were not succeeding before the fault was injected";
        }
        return new Check(7, "calls succeed again within 10 s of the heal", passed, detail);
    }

    private static List<String> countIsZero(Connection c, String what, String sql, Timestamp since) throws SQLException {
        long n = count(c, sql, since);
        return n == 0 ? List.of() : List.of(n + " " + what);
    }

    private static long count(Connection c, String sql, Timestamp since) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            if (since != null) {
                ps.setTimestamp(1, since);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static String worst(Connection c, String sql, Timestamp since) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setTimestamp(1, since);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return " (worst " + rs.getString(1) + " past the deadline)";
            }
        }
    }

    private static boolean sameJson(String a, String b) {
        try {
            return a != null && b != null && JSON.readTree(a).equals(JSON.readTree(b));
        } catch (Exception e) {
            return false;
        }
    }

    private static String first(List<String> problems) {
        return problems.size() <= 3 ? String.join("; ", problems)
                : String.join("; ", problems.subList(0, 3)) + "; … (" + problems.size() + " problems)";
    }
}
