package dev.thresher.tests;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * Clients calling the sample binding through one node over pgjdbc, each connection under a short call deadline
 * ({@code SET thresher.call_deadline_ms}), every call recorded with its answer and its latency by the test's clock.
 */
final class FaultCalls implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern CODE = Pattern.compile("thresher_code=(\\d+)");
    private static final Pattern RETRY_CLASS = Pattern.compile("retry_class=(\\w+)");
    private static final Pattern CALL_ID = Pattern.compile("call_id=([0-9a-f-]{36})");

    /** How a call ended: Thresher answered a result, Thresher answered an error, or no answer came (transport). */
    enum Kind { SUCCESS, ERROR, TRANSPORT }

    /**
     * One call. {@code wrong} is what differs from the SQL reference (null when equal or no result); {@code code} the
     * Thresher error code of an error; {@code callId} from the call's notice or its error's detail (null if none came).
     */
    record Call(int client, long startNanos, long endNanos, Kind kind, String callId, String result, String wrong,
                String sqlState, Integer code, String message, String retryClass) {
        long latencyMs() {
            return TimeUnit.NANOSECONDS.toMillis(endNanos - startNanos);
        }
    }

    /** Opens a client's connection to the node the calls go through, with the driver properties given. */
    interface Connector {
        Connection connect(Properties driverProperties) throws Exception;
    }

    private final Connector connector;
    private final long deadlineMs;
    private final Map<String, double[]> reference;
    private final ExecutorService clients;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final ConcurrentLinkedQueue<Call> calls = new ConcurrentLinkedQueue<>();
    private final AtomicLong connectFailures = new AtomicLong();
    private final List<Future<?>> futures = new ArrayList<>();

    FaultCalls(NodeProcesses nodes, int node, int clientCount, long deadlineMs, Map<String, double[]> reference) {
        this(p -> nodes.connect(node, p), clientCount, deadlineMs, reference);
    }

    FaultCalls(Connector connector, int clientCount, long deadlineMs, Map<String, double[]> reference) {
        this.connector = connector;
        this.deadlineMs = deadlineMs;
        this.reference = reference;
        this.clients = Executors.newFixedThreadPool(clientCount, Thread.ofPlatform().name("fault-client-", 0).factory());
        for (int t = 0; t < clientCount; t++) {
            int client = t;
            futures.add(clients.submit(() -> loop(client)));
        }
    }

    private Properties driverProperties() {
        Properties p = new Properties();
        // No answer within deadline + 6 s is a transport failure of the call (a frozen coordinator), not a hang.
        p.setProperty("socketTimeout", Long.toString(TimeUnit.MILLISECONDS.toSeconds(deadlineMs) + 6));
        p.setProperty("connectTimeout", "3");
        p.setProperty("loginTimeout", "5");
        return p;
    }

    private Void loop(int client) {
        Connection c = null;
        while (running.get()) {
            if (c == null) {
                try {
                    c = connector.connect(driverProperties());
                    try (Statement s = c.createStatement()) {
                        s.execute("SET thresher.call_deadline_ms = " + deadlineMs);
                    }
                } catch (Exception e) {
                    connectFailures.incrementAndGet();
                    closeQuietly(c);
                    c = null;
                    pause(100); // a node down refuses at once: no busy loop
                    continue;
                }
            }
            Call done = call(c, client);
            calls.add(done);
            if (done.kind() == Kind.TRANSPORT || isClosed(c)) {
                closeQuietly(c);
                c = null;
            }
        }
        closeQuietly(c);
        return null;
    }

    private static boolean isClosed(Connection c) {
        try {
            return c.isClosed();
        } catch (SQLException e) {
            return true;
        }
    }

    private Call call(Connection c, int client) {
        long start = System.nanoTime();
        Statement s = null;
        try {
            s = c.createStatement();
            try (ResultSet rs = s.executeQuery("CALL BINDING revenue_by_region('{}')")) {
                rs.next();
                String result = rs.getString(1);
                long end = System.nanoTime();
                String differs = Cluster.differs(JSON.readTree(result), reference);
                return new Call(client, start, end, Kind.SUCCESS, noticedId(s), result, differs, null, null, null, null);
            }
        } catch (SQLException e) {
            long end = System.nanoTime();
            String detail = null;
            if (e instanceof PSQLException p && p.getServerErrorMessage() != null) {
                ServerErrorMessage m = p.getServerErrorMessage();
                detail = m.getDetail();
            }
            Integer code = null;
            String callId = null;
            String retryClass = null;
            if (detail != null) {
                Matcher m = CODE.matcher(detail);
                code = m.find() ? Integer.valueOf(m.group(1)) : null;
                Matcher rc = RETRY_CLASS.matcher(detail);
                retryClass = rc.find() ? rc.group(1) : null;
                Matcher id = CALL_ID.matcher(detail);
                callId = id.find() ? id.group(1) : null;
            }
            if (callId == null && s != null) {
                callId = noticedId(s);
            }
            return new Call(client, start, end, code != null ? Kind.ERROR : Kind.TRANSPORT, callId, null, null,
                    e.getSQLState(), code, String.valueOf(e.getMessage()).lines().findFirst().orElse(""), retryClass);
        } catch (Exception e) {
            return new Call(client, start, System.nanoTime(), Kind.TRANSPORT, null, null, null, null, null, e.toString(),
                    null);
        } finally {
            if (s != null) {
                try {
                    s.close();
                } catch (SQLException e) {
                    // the connection is gone
                }
            }
        }
    }

    /** The id of the call's notice ("call … recorded"), or null. */
    private static String noticedId(Statement s) {
        try {
            for (SQLWarning w = s.getWarnings(); w != null; w = w.getNextWarning()) {
                if (w instanceof org.postgresql.util.PSQLWarning pw && pw.getServerErrorMessage() != null
                        && pw.getMessage() != null && pw.getMessage().contains("recorded")) {
                    return pw.getServerErrorMessage().getDetail();
                }
            }
        } catch (SQLException e) {
            // no warnings to read
        }
        return null;
    }

    /** Waits until {@code count} calls succeeded, at most {@code maxMillis}; whether they did. */
    boolean awaitSuccesses(int count, long maxMillis) {
        return awaitSuccessesSince(0, count, maxMillis);
    }

    /** Waits until {@code count} calls started at or after {@code sinceNanos} succeeded, at most {@code maxMillis}. */
    boolean awaitSuccessesSince(long sinceNanos, int count, long maxMillis) {
        return Await.poll(Duration.ofMillis(maxMillis), Await.EVERY, () -> successesSince(sinceNanos), n -> n >= count)
                .reached();
    }

    long successesSince(long sinceNanos) {
        return calls.stream().filter(x -> x.kind() == Kind.SUCCESS && x.startNanos() - sinceNanos >= 0).count();
    }

    long connectFailures() {
        return connectFailures.get();
    }

    /** Stops the clients (each finishes its call in flight, bounded by its socket timeout) and returns every call. */
    List<Call> stop() throws Exception {
        running.set(false);
        for (Future<?> f : futures) {
            f.get(deadlineMs + 30_000, TimeUnit.MILLISECONDS);
        }
        clients.shutdown();
        return new ArrayList<>(calls);
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException e) {
                // gone
            }
        }
    }

    @Override
    public void close() {
        running.set(false);
        clients.shutdownNow();
    }
}
