package dev.thresher.limits;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The limits of the call contract. Every default lives here and nowhere else; configuration
 * overrides them by key ({@code limits.<key>}), and {@link #fromProperties} refuses bad values
 * at boot with one message naming every offending key.
 *
 * @param callDeadlineMs default absolute deadline of one call
 * @param maxCallDeadlineMs the largest deadline a caller may ask for
 * @param shardConcurrency shard runs admitted at once by one coordinator
 * @param rowsPerBatch rows in one shard's batch
 * @param batchMaxBytes encoded bytes of one shard's batch
 * @param emitsPerInvocation {@code emit} calls in one shard invocation
 * @param partialEntriesPerSlot partial entries in one shard slot, and in the merged set
 * @param coordinationSlots shard slots (partitions) one call may cover
 * @param reduceLeaseMs the reduce lease of one call
 * @param activationLeaseMs the demand lease that pins a cell to a host
 * @param activationWindowMs the longest wait for a missing cell
 * @param coordinationRetentionMs how long coordination state is kept
 * @param nestedCallsPerRequest nested distributed calls per HTTP request
 * @param directCallPayloadBytes bytes of a direct call's arguments
 * @param attemptBudget attempts of one shard run in all, the first included
 * @param partialKeyMaxBytes UTF-8 bytes of one partial key
 * @param resultMaxBytes bytes of one reduced result
 * @param wireMaxFrameBytes bytes of one frame of the node-to-node protocol
 * @param pgwireMaxMessageBytes bytes of one PostgreSQL wire protocol message
 * @param wireConnectTimeoutMs connecting to a peer node
 * @param wireHandshakeTimeoutMs the version handshake with a peer node
 * @param pgwireAuthTimeoutMs from a pgwire connection's first byte to the end of its authentication
 * @param pgwireStatementsPerConnection named prepared statements, and portals, one pgwire connection may hold
 * @param httpRequestTimeoutMs from the start of waiting for an HTTP request (connection open, or the previous
 *        response written) to its last byte; a connection over it with no call in flight is closed
 * @param httpMaxConnections open HTTP connections one node serves at once; more are answered 503 and closed
 * @param guestMemoryMaxBytes linear memory one guest instance may have (whole 64 KiB pages); {@code memory.grow}
 *        past it fails inside the guest
 * @param topologyPollMs how often a node re-reads bindings and topology into its cache whatever notifications
 *        it got: a change whose notification was lost is seen within this long
 * @param packageMaxBytes bytes of one component module a deploy accepts
 * @param guestMemoryBudgetBytes guest memory one node's cells may reserve in all: each cell reserves its
 *        memory maximum (the module's, capped by {@code guestMemoryMaxBytes}); past it idle cells are evicted,
 *        and a cell that still does not fit is refused ({@code CELL_UNAVAILABLE}, retryable)
 * @param bindingSharePercent the share of a node's places (a coordinator's host requests out, a leader's shard
 *        runs) one binding may hold at once, in percent, at least one place
 * @param slowRunMs a binding one of whose shard runs took this long of its thread's CPU time, or one of whose host
 *        requests ran to its deadline, burns: beside other bindings it holds one place of that pool until
 *        {@code 10 × slowRunMs} after, and its runs wait for one of the process's cores for slow runs; one of whose
 *        places was held this long is slow: alone it holds at most its share
 * @param admissionWaitMs the longest a shard run waits for a place of the leader's shard pool before the node
 *        answers busy ({@code CELL_UNAVAILABLE}, retryable, before any guest code) instead of queueing to its
 *        deadline
 * @param partitionLeaseMs a partition leadership lease: renewed every third of it, so a leader that died or froze
 *        is replaced by another candidate about this long (plus one renewal period) after its last renewal
 * @param handlerConcurrency HTTP handler invocations one node runs at once (each on a thread of its own, which
 *        waits there while the handler's nested call runs elsewhere); a request not started within
 *        {@code admissionWaitMs} is answered busy ({@code CELL_UNAVAILABLE}, retryable, before any guest code)
 * @param httpResponseMaxBytes bytes of the body one HTTP handler invocation may write
 * @param pgwireMaxConnections pgwire connections one node holds at once, every accepted socket counted from its
 *        accept (authenticated or not); one more is answered FATAL {@code 53300} and closed at once
 * @param pgwireConnectionsPerUser pgwire sessions one user name holds on one node at once, counted once
 *        authenticated; one more is answered FATAL {@code 53300} after its startup
 * @param pgwireIdleSessionTimeoutMs a pgwire session waiting this long for its client's next message (no call,
 *        write or lookup in flight, not in COPY) is closed with FATAL {@code 57P05}
 * @param pgwireStatementBytesPerConnection bytes one pgwire connection's prepared statements (their SQL text and
 *        name) and portals (their bound values and name) hold in all; a Parse or Bind past it is refused
 *        ({@code 54000}) and stores nothing
 * @param pgwireStatementsPerQuery statements one simple query may hold; more is refused ({@code 54000}) before any
 *        runs
 * @param replicaMemoryBytes heap one node gives its leader replicas in all (rows, indexes and cached batches of
 *        every partition it holds in memory); a partition that does not fit is read through SQL; 0, the default,
 *        keeps no replicas at all (they are opt-in: see docs/architecture.md, "Leader replicas")
 * @param replicaCatchUpMs how long a shard run waits, within its deadline, for a replica to apply the shard
 *        database's WAL position taken at the run's start before it reads the partition through SQL instead
 */
public record Limits(
        long callDeadlineMs,
        long maxCallDeadlineMs,
        int shardConcurrency,
        int rowsPerBatch,
        int batchMaxBytes,
        int emitsPerInvocation,
        int partialEntriesPerSlot,
        int coordinationSlots,
        long reduceLeaseMs,
        long activationLeaseMs,
        long activationWindowMs,
        long coordinationRetentionMs,
        int nestedCallsPerRequest,
        int directCallPayloadBytes,
        int attemptBudget,
        int partialKeyMaxBytes,
        int resultMaxBytes,
        int wireMaxFrameBytes,
        int pgwireMaxMessageBytes,
        int wireConnectTimeoutMs,
        int wireHandshakeTimeoutMs,
        int pgwireAuthTimeoutMs,
        int pgwireStatementsPerConnection,
        int httpRequestTimeoutMs,
        int httpMaxConnections,
        long guestMemoryMaxBytes,
        long topologyPollMs,
        int packageMaxBytes,
        long guestMemoryBudgetBytes,
        int bindingSharePercent,
        long slowRunMs,
        long admissionWaitMs,
        long partitionLeaseMs,
        int handlerConcurrency,
        int httpResponseMaxBytes,
        int pgwireMaxConnections,
        int pgwireConnectionsPerUser,
        long pgwireIdleSessionTimeoutMs,
        int pgwireStatementBytesPerConnection,
        int pgwireStatementsPerQuery,
        long replicaMemoryBytes,
        long replicaCatchUpMs) {

    public static final Limits DEFAULTS = new Limits(
            30_000, 30_000, 8, 4_096, 8 << 20, 64, 1_024, 64, 30_000, 60_000, 15_000, 600_000, 1,
            1 << 20, 2, 1_024, 1 << 20, 16 << 20, 8 << 20, 5_000, 5_000, 60_000, 1_000,
            30_000, 1_024, 256L << 20, 1_000, 16 << 20, 1L << 30, 50, 1_000, 5_000, 4_000, 16, 1 << 20,
            500, 100, 3_600_000, 16 << 20, 1_000, 0L, 25);

    public Limits {
        List<String> p = new ArrayList<>();
        positive(p, "callDeadlineMs", callDeadlineMs);
        positive(p, "maxCallDeadlineMs", maxCallDeadlineMs);
        if (callDeadlineMs > maxCallDeadlineMs) {
            p.add("callDeadlineMs (" + callDeadlineMs + ") exceeds maxCallDeadlineMs (" + maxCallDeadlineMs + ")");
        }
        positive(p, "shardConcurrency", shardConcurrency);
        positive(p, "rowsPerBatch", rowsPerBatch);
        positive(p, "batchMaxBytes", batchMaxBytes);
        positive(p, "emitsPerInvocation", emitsPerInvocation);
        positive(p, "partialEntriesPerSlot", partialEntriesPerSlot);
        positive(p, "coordinationSlots", coordinationSlots);
        positive(p, "reduceLeaseMs", reduceLeaseMs);
        positive(p, "activationLeaseMs", activationLeaseMs);
        positive(p, "activationWindowMs", activationWindowMs);
        positive(p, "coordinationRetentionMs", coordinationRetentionMs);
        positive(p, "nestedCallsPerRequest", nestedCallsPerRequest);
        positive(p, "directCallPayloadBytes", directCallPayloadBytes);
        positive(p, "attemptBudget", attemptBudget);
        positive(p, "partialKeyMaxBytes", partialKeyMaxBytes);
        positive(p, "resultMaxBytes", resultMaxBytes);
        positive(p, "packageMaxBytes", packageMaxBytes);
        positive(p, "guestMemoryBudgetBytes", guestMemoryBudgetBytes);
        if (guestMemoryBudgetBytes < guestMemoryMaxBytes) {
            p.add("guestMemoryBudgetBytes (" + guestMemoryBudgetBytes + ") is smaller than guestMemoryMaxBytes ("
                    + guestMemoryMaxBytes + "): a guest of the largest memory could never be admitted");
        }
        if (bindingSharePercent <= 0 || bindingSharePercent > 100) {
            p.add("bindingSharePercent must be 1 to 100, was " + bindingSharePercent);
        }
        positive(p, "slowRunMs", slowRunMs);
        positive(p, "admissionWaitMs", admissionWaitMs);
        positive(p, "handlerConcurrency", handlerConcurrency);
        positive(p, "httpResponseMaxBytes", httpResponseMaxBytes);
        if (partitionLeaseMs < 300) {
            p.add("partitionLeaseMs must be at least 300 (renewed every third of it), was " + partitionLeaseMs);
        }
        positive(p, "wireMaxFrameBytes", wireMaxFrameBytes);
        positive(p, "pgwireMaxMessageBytes", pgwireMaxMessageBytes);
        positive(p, "wireConnectTimeoutMs", wireConnectTimeoutMs);
        positive(p, "wireHandshakeTimeoutMs", wireHandshakeTimeoutMs);
        positive(p, "pgwireAuthTimeoutMs", pgwireAuthTimeoutMs);
        positive(p, "pgwireStatementsPerConnection", pgwireStatementsPerConnection);
        positive(p, "httpRequestTimeoutMs", httpRequestTimeoutMs);
        positive(p, "httpMaxConnections", httpMaxConnections);
        positive(p, "pgwireMaxConnections", pgwireMaxConnections);
        positive(p, "pgwireConnectionsPerUser", pgwireConnectionsPerUser);
        positive(p, "pgwireIdleSessionTimeoutMs", pgwireIdleSessionTimeoutMs);
        positive(p, "pgwireStatementBytesPerConnection", pgwireStatementBytesPerConnection);
        positive(p, "pgwireStatementsPerQuery", pgwireStatementsPerQuery);
        if (replicaMemoryBytes < 0) {
            p.add("replicaMemoryBytes must be 0 (no replicas) or more, was " + replicaMemoryBytes);
        }
        positive(p, "replicaCatchUpMs", replicaCatchUpMs);
        positive(p, "guestMemoryMaxBytes", guestMemoryMaxBytes);
        positive(p, "topologyPollMs", topologyPollMs);
        if (guestMemoryMaxBytes < batchMaxBytes) {
            p.add("guestMemoryMaxBytes (" + guestMemoryMaxBytes + ") is smaller than batchMaxBytes (" + batchMaxBytes
                    + "): a full batch could not fit in a guest");
        }
        if (wireMaxFrameBytes < batchMaxBytes) {
            p.add("wireMaxFrameBytes (" + wireMaxFrameBytes + ") is smaller than batchMaxBytes (" + batchMaxBytes + ")");
        }
        if (!p.isEmpty()) {
            throw new IllegalArgumentException("invalid limits: " + String.join("; ", p));
        }
    }

    /** Places of a pool of {@code places} one binding may hold at once: {@code bindingSharePercent} of them, at least 1. */
    public int placesPerBinding(int places) {
        return Math.max(1, (int) Math.ceil(places * bindingSharePercent / 100.0));
    }

    private static void positive(List<String> p, String key, long v) {
        if (v <= 0) {
            p.add(key + " must be positive, was " + v);
        }
    }

    /** The configuration keys and their values, in declaration order; each key reads as {@code limits.<key>}. */
    public Map<String, Long> asMap() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (var c : Limits.class.getRecordComponents()) {
            try {
                m.put(c.getName(), ((Number) c.getAccessor().invoke(this)).longValue());
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
        return m;
    }

    /**
     * The limits with every {@code limits.<key>} found through {@code lookup} applied over the defaults.
     * Unknown {@code limits.*} keys are refused, so a typo cannot silently keep a default.
     *
     * @throws IllegalArgumentException naming every bad key and value
     */
    public static Limits fromProperties(Map<String, String> properties) {
        Map<String, Long> values = DEFAULTS.asMap();
        List<String> problems = new ArrayList<>();
        for (var e : properties.entrySet()) {
            if (!e.getKey().startsWith("limits.")) {
                continue;
            }
            String key = e.getKey().substring("limits.".length());
            if (!values.containsKey(key)) {
                problems.add("unknown limit '" + e.getKey() + "'; known: " + values.keySet());
                continue;
            }
            try {
                values.put(key, Long.parseLong(e.getValue().trim().replace("_", "")));
            } catch (NumberFormatException nfe) {
                problems.add(e.getKey() + " is not an integer: '" + e.getValue() + "'");
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid limits: " + String.join("; ", problems));
        }
        Function<String, Long> v = values::get;
        try {
            return new Limits(
                    v.apply("callDeadlineMs"), v.apply("maxCallDeadlineMs"), toInt(v, "shardConcurrency"),
                    toInt(v, "rowsPerBatch"), toInt(v, "batchMaxBytes"), toInt(v, "emitsPerInvocation"),
                    toInt(v, "partialEntriesPerSlot"), toInt(v, "coordinationSlots"), v.apply("reduceLeaseMs"),
                    v.apply("activationLeaseMs"), v.apply("activationWindowMs"), v.apply("coordinationRetentionMs"),
                    toInt(v, "nestedCallsPerRequest"), toInt(v, "directCallPayloadBytes"), toInt(v, "attemptBudget"),
                    toInt(v, "partialKeyMaxBytes"), toInt(v, "resultMaxBytes"), toInt(v, "wireMaxFrameBytes"),
                    toInt(v, "pgwireMaxMessageBytes"), toInt(v, "wireConnectTimeoutMs"),
                    toInt(v, "wireHandshakeTimeoutMs"), toInt(v, "pgwireAuthTimeoutMs"),
                    toInt(v, "pgwireStatementsPerConnection"), toInt(v, "httpRequestTimeoutMs"),
                    toInt(v, "httpMaxConnections"), v.apply("guestMemoryMaxBytes"),
                    v.apply("topologyPollMs"), toInt(v, "packageMaxBytes"), v.apply("guestMemoryBudgetBytes"),
                    toInt(v, "bindingSharePercent"), v.apply("slowRunMs"), v.apply("admissionWaitMs"),
                    v.apply("partitionLeaseMs"), toInt(v, "handlerConcurrency"), toInt(v, "httpResponseMaxBytes"),
                    toInt(v, "pgwireMaxConnections"), toInt(v, "pgwireConnectionsPerUser"),
                    v.apply("pgwireIdleSessionTimeoutMs"), toInt(v, "pgwireStatementBytesPerConnection"),
                    toInt(v, "pgwireStatementsPerQuery"), v.apply("replicaMemoryBytes"), v.apply("replicaCatchUpMs"));
        } catch (ArithmeticException ae) {
            throw new IllegalArgumentException("invalid limits: " + ae.getMessage(), ae);
        }
    }

    private static int toInt(Function<String, Long> v, String key) {
        long value = v.apply(key);
        if (value > Integer.MAX_VALUE || value < Integer.MIN_VALUE) {
            throw new ArithmeticException("limits." + key + " does not fit in 32 bits: " + value);
        }
        return (int) value;
    }
}
