package dev.thresher.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/** HikariCP pools with the settings every Thresher database connection uses. */
public final class Pools {
    private Pools() {}

    /**
     * A pool for one database.
     *
     * @param name pool name, shown in logs and metrics
     * @param jdbcUrl the database (user and password may be in the URL)
     * @param maxSize connections at most
     */
    public static HikariDataSource open(String name, String jdbcUrl, String user, String password, int maxSize) {
        return new HikariDataSource(config(name, jdbcUrl, user, password, maxSize));
    }

    /**
     * A pool whose sessions cannot write: every connection starts with {@value #READ_ONLY_SESSION}, and
     * the pool marks its connections read-only, so a transaction the driver opens is {@code READ ONLY} as
     * well. A write through it fails with SQLSTATE 25006 ({@code read_only_sql_transaction}). The call
     * path reads shard databases only through such a pool.
     */
    public static HikariDataSource openReadOnly(String name, String jdbcUrl, String user, String password, int maxSize) {
        HikariConfig c = config(name, jdbcUrl, user, password, maxSize);
        c.setReadOnly(true);
        c.setConnectionInitSql(READ_ONLY_SESSION);
        return new HikariDataSource(c);
    }

    /**
     * The session timeouts of a control-database pool, set as startup options of every connection, so the
     * server enforces them whatever the client does (a client frozen in a transaction included).
     *
     * @param statementTimeoutMs a statement running longer is cancelled
     * @param lockTimeoutMs a statement waiting longer for a lock fails instead of waiting behind its holder
     * @param idleInTransactionMs a session idle inside a transaction longer is ended by the server, its locks released
     */
    public record ControlSessions(long statementTimeoutMs, long lockTimeoutMs, long idleInTransactionMs) {
        /** The call path's: statements bounded by the longest call, locks by 2 s, an idle transaction by 5 s. */
        public static ControlSessions callPath(long maxCallDeadlineMs) {
            return new ControlSessions(maxCallDeadlineMs, 2_000, 5_000);
        }

        /**
         * The node's upkeep (leases, janitor, cache): each bounded by the partition lease, so a renewal that cannot
         * finish fails within a lease instead of hanging past it.
         */
        public static ControlSessions upkeep(long partitionLeaseMs) {
            long bound = Math.max(1_000, partitionLeaseMs);
            return new ControlSessions(Math.max(bound, 10_000), bound / 2, bound);
        }

        String options() {
            return "-c statement_timeout=" + statementTimeoutMs + " -c lock_timeout=" + lockTimeoutMs
                    + " -c idle_in_transaction_session_timeout=" + idleInTransactionMs;
        }
    }

    /** A control-database pool whose sessions run under {@code sessions}' timeouts. */
    public static HikariDataSource openControl(String name, String jdbcUrl, String user, String password, int maxSize,
                                               ControlSessions sessions) {
        HikariConfig c = config(name, jdbcUrl, user, password, maxSize);
        c.addDataSourceProperty("options", sessions.options());
        // A server frozen or cut off without a reset never answers: the socket gives up a little after the
        // longest statement the sessions allow (within a call, the call's deadline bounds it: bounded()).
        c.addDataSourceProperty("socketTimeout", Long.toString((sessions.statementTimeoutMs() + 5_000 + 999) / 1000));
        return new HikariDataSource(c);
    }

    /**
     * {@code pool}, its waits bounded by the thread's {@link DbDeadline} when there is one: connection
     * acquisition, the socket and each statement end at the call's deadline instead of the pool's fixed timeouts.
     */
    public static javax.sql.DataSource bounded(HikariDataSource pool) {
        return new BoundedDataSource(pool);
    }

    /**
     * {@link #bounded}, and within a scope a connection the pool cannot give within {@value #DIRECT_AFTER_MS} ms is
     * opened directly instead, bounded by the time left, and closed when given back: what keeps a node's leases, which
     * must reconnect within a renewal after an outage of the control database, when HikariCP's connection creator is
     * backing off (up to 5 s between attempts) or the pool's connections are busy.
     */
    public static javax.sql.DataSource boundedOrDirect(HikariDataSource pool) {
        return new BoundedDataSource(pool, DIRECT_AFTER_MS);
    }

    /** How long {@link #boundedOrDirect} waits for a pooled connection before it opens one. */
    static final long DIRECT_AFTER_MS = 250;

    /** How long taking a connection waits for the server to answer the liveness check (HikariCP's least). */
    static final long VALIDATION_TIMEOUT_MS = 250;

    /** The statement every read-only pool connection runs first. */
    public static final String READ_ONLY_SESSION = "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY";

    private static HikariConfig config(String name, String jdbcUrl, String user, String password, int maxSize) {
        HikariConfig c = new HikariConfig();
        c.setPoolName(name);
        c.setJdbcUrl(jdbcUrl);
        if (user != null) {
            c.setUsername(user);
        }
        if (password != null) {
            c.setPassword(password);
        }
        c.setMaximumPoolSize(maxSize);
        c.setMinimumIdle(1);
        c.setConnectionTimeout(10_000);
        // HikariCP checks a connection idle for more than 500 ms before handing it out, waiting this long for the
        // server: its own default (5 s) would hold a caller that long past its deadline when the server is frozen
        c.setValidationTimeout(VALIDATION_TIMEOUT_MS);
        // a server that accepts TCP but never answers the startup (frozen) does not hold a new connection longer
        c.addDataSourceProperty("connectTimeout", "5");
        c.addDataSourceProperty("loginTimeout", "5");
        // a cancel (BoundedDataSource sends one at a call's deadline, on a thread of its own) gives up after a second
        // when the server does not answer, instead of the driver's 10 s
        c.addDataSourceProperty("cancelSignalTimeout", "1");
        c.setAutoCommit(true);
        return c;
    }
}
