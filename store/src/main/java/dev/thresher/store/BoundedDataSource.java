package dev.thresher.store;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import dev.thresher.limits.Deadline;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTimeoutException;
import java.sql.Statement;
import java.util.Optional;
import java.util.concurrent.Executor;

/**
 * A pool whose waits end at the thread's {@link DbDeadline}: a connection is taken within the time left
 * (not the pool's fixed connection timeout), the connection's socket gives up {@value #SOCKET_GRACE_MS} ms
 * after the deadline (a frozen or unreachable server cannot hold the caller), and at the deadline the statement
 * running on it is cancelled (a statement started after it is refused before it is sent). Outside a scope it is the
 * pool itself.
 *
 * <p>The cancel is sent from a thread of its own and nobody waits for it. The driver's own query timeout would send
 * it from its timer and then make the statement's thread wait until the cancel connection was opened and answered:
 * with the server cut off silently, that is the driver's {@code cancelSignalTimeout} past the deadline (10 s by
 * default). A connection whose cancel was sent is evicted from the pool when it is closed, never handed out again,
 * so a cancel that arrives late cannot stop the next user's statement.
 */
final class BoundedDataSource extends ForwardingDataSource {
    /** How long after the deadline a connection's socket still waits for the server, so a statement the server
     *  cancels at the deadline can still answer with its cancellation instead of a cut connection. */
    static final int SOCKET_GRACE_MS = 250;
    private static final Executor DIRECT = Runnable::run;
    /** Fires each connection's cancel at its deadline. */
    private static final java.util.concurrent.ScheduledExecutorService DEADLINES = deadlines();

    /** One timer thread; a connection closed before its deadline takes its task out of the queue at once. */
    private static java.util.concurrent.ScheduledExecutorService deadlines() {
        var timer = new java.util.concurrent.ScheduledThreadPoolExecutor(1, daemon("db-deadline"));
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }
    /** Sends cancels: each waits at most the driver's cancelSignalTimeout ({@link Pools}), on no caller's thread. */
    private static final java.util.concurrent.ExecutorService CANCELS =
            java.util.concurrent.Executors.newCachedThreadPool(daemon("db-cancel"));

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    private final HikariDataSource pool;
    /** How long to wait for the pool before opening a connection of its own; 0: never. */
    private final long directAfterMs;

    BoundedDataSource(HikariDataSource pool) {
        this(pool, 0);
    }

    /**
     * @param directAfterMs within a scope, a connection the pool cannot give within this long is opened directly (with
     *     the pool's URL, credentials and properties, its connect and login bounded by the time left) and closed, not
     *     pooled, when given back: after an outage of the server, HikariCP's connection creator backs off up to 5 s
     *     between attempts, and a lease renewal cannot wait that long; 0 never
     */
    BoundedDataSource(HikariDataSource pool, long directAfterMs) {
        super(pool);
        this.pool = pool;
        this.directAfterMs = directAfterMs;
    }

    /** A connection of its own, outside the pool, opened within the time left. */
    private Connection direct(Deadline deadline) throws SQLException {
        java.util.Properties props = new java.util.Properties();
        props.putAll(pool.getDataSourceProperties());
        if (pool.getUsername() != null) {
            props.setProperty("user", pool.getUsername());
        }
        if (pool.getPassword() != null) {
            props.setProperty("password", pool.getPassword());
        }
        String seconds = Long.toString(Math.max(1, (ceilMillis(deadline) + 999) / 1000));
        props.setProperty("connectTimeout", seconds);
        props.setProperty("loginTimeout", seconds);
        Connection c = java.sql.DriverManager.getConnection(pool.getJdbcUrl(), props);
        c.setAutoCommit(pool.isAutoCommit());
        return c;
    }

    @Override
    public Connection getConnection() throws SQLException {
        Optional<Deadline> scope = DbDeadline.current();
        if (scope.isEmpty()) {
            return pool.getConnection();
        }
        Deadline deadline = scope.get();
        // judged as DbDeadline.passed() judges it, so a failure here always reads as the deadline's
        if (deadline.passed()) {
            throw new SQLTimeoutException("the call's deadline passed before a connection of " + pool.getPoolName()
                    + " was taken", "57014");
        }
        HikariPool hikari = (HikariPool) pool.getHikariPoolMXBean();
        Connection c;
        boolean direct = false;
        if (hikari == null) {
            c = pool.getConnection();
        } else if (directAfterMs > 0 && ceilMillis(deadline) > directAfterMs) {
            try {
                c = hikari.getConnection(directAfterMs);
            } catch (java.sql.SQLTransientConnectionException none) {
                c = direct(deadline);
                direct = true;
            }
        } else {
            c = hikari.getConnection(ceilMillis(deadline));
        }
        try {
            if (deadline.passed()) {
                throw new SQLTimeoutException("the call's deadline passed while a connection of " + pool.getPoolName()
                        + " was taken", "57014");
            }
            c.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE, ceilMillis(deadline) + SOCKET_GRACE_MS));
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
        Bounded bounded = new Bounded(c, direct ? null : pool, pool.getPoolName(), deadline);
        bounded.cancelAt(ceilMillis(deadline));
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                bounded);
    }

    /** The time left in whole milliseconds, rounded up, at least 1: a wait to it ends past the deadline. */
    private static long ceilMillis(Deadline deadline) {
        return Math.max(1, (deadline.remainingNanos() + 999_999) / 1_000_000);
    }

    /**
     * A connection taken under a deadline: a statement running on it at the deadline is cancelled, one started after it
     * is refused before it is sent; closed after a cancel was sent, the connection leaves the pool. A connection idle
     * at its deadline is neither cancelled nor evicted.
     */
    private static final class Bounded implements InvocationHandler {
        private final Connection delegate;
        /** The pool the connection goes back to; null for one opened directly, closed for good. */
        private final HikariDataSource pool;
        private final String poolName;
        private final Deadline deadline;
        private final Object lock = new Object();
        private java.util.concurrent.ScheduledFuture<?> cancel;
        private boolean closed;
        private boolean cancelSent;
        /** Statements executing on the connection now. */
        private int running;

        Bounded(Connection delegate, HikariDataSource pool, String poolName, Deadline deadline) {
            this.delegate = delegate;
            this.pool = pool;
            this.poolName = poolName;
            this.deadline = deadline;
        }

        /** Runs one of a statement's execute methods, counted as running; refused once the deadline has passed. */
        Object execute(Statement statement, Method method, Object[] args) throws Throwable {
            synchronized (lock) {
                if (deadline.passed()) {
                    throw new SQLTimeoutException("the call's deadline passed before a statement of " + poolName
                            + " was sent", "57014");
                }
                running++;
            }
            try {
                return method.invoke(statement, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                synchronized (lock) {
                    running--;
                }
            }
        }

        void cancelAt(long delayMs) {
            synchronized (lock) {
                cancel = DEADLINES.schedule(this::deadlinePassed, delayMs, java.util.concurrent.TimeUnit.MILLISECONDS);
            }
        }

        private void deadlinePassed() {
            synchronized (lock) {
                if (closed || running == 0) {
                    return;
                }
                cancelSent = true;
            }
            CANCELS.execute(() -> {
                try {
                    delegate.unwrap(org.postgresql.PGConnection.class).cancelQuery();
                } catch (SQLException | RuntimeException e) {
                    // the statement still ends at the socket's timeout; the connection leaves the pool when closed
                }
            });
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            if (method.getName().equals("unwrap") && args != null && args[0] instanceof Class<?> iface
                    && iface.isInstance(proxy)) {
                return proxy;
            }
            if (method.getName().equals("close") && (args == null || args.length == 0)) {
                boolean evict;
                synchronized (lock) {
                    if (closed) {
                        return null;
                    }
                    closed = true;
                    evict = cancelSent;
                    cancel.cancel(false);
                }
                if (evict && pool != null) {
                    pool.evictConnection(delegate); // a late cancel must not reach the next user's statement
                    return null;
                }
            }
            Object result;
            try {
                result = method.invoke(delegate, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            if (result instanceof Statement statement && CREATES_STATEMENT.contains(method.getName())) {
                return Proxy.newProxyInstance(Statement.class.getClassLoader(), new Class<?>[] {method.getReturnType()},
                        new BoundedStatement(statement, (Connection) proxy, this));
            }
            return result;
        }
    }

    /** A statement of a {@link Bounded} connection: its executions counted, its connection the bounded one. */
    private record BoundedStatement(Statement delegate, Connection connection, Bounded bounded) implements InvocationHandler {
        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            String name = method.getName();
            if (name.startsWith("execute")) {
                return bounded.execute(delegate, method, args);
            }
            if (name.equals("getConnection") && (args == null || args.length == 0)) {
                return connection;
            }
            if (name.equals("unwrap") && args != null && args[0] instanceof Class<?> iface && iface.isInstance(proxy)) {
                return proxy;
            }
            try {
                return method.invoke(delegate, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("a pool's connections use its own credentials");
    }
}
