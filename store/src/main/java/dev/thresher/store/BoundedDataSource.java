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
import org.postgresql.jdbc.PgStatement;

/**
 * A pool whose waits end at the thread's {@link DbDeadline}: a connection is taken within the time left
 * (not the pool's fixed connection timeout), the connection's socket gives up {@value #SOCKET_GRACE_MS} ms
 * after the deadline (a frozen or unreachable server cannot hold the caller), and every statement created on
 * it is cancelled by the server at the deadline. Outside a scope it is the pool itself.
 */
final class BoundedDataSource extends ForwardingDataSource {
    /** How long after the deadline a connection's socket still waits for the server, so a statement the server
     *  cancels at the deadline can still answer with its cancellation instead of a cut connection. */
    static final int SOCKET_GRACE_MS = 250;
    private static final Executor DIRECT = Runnable::run;

    private final HikariDataSource pool;

    BoundedDataSource(HikariDataSource pool) {
        super(pool);
        this.pool = pool;
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
        Connection c = hikari == null ? pool.getConnection() : hikari.getConnection(ceilMillis(deadline));
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
        return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
                new Bounded(c, deadline));
    }

    /** The time left in whole milliseconds, rounded up, at least 1: a wait to it ends past the deadline. */
    private static long ceilMillis(Deadline deadline) {
        return Math.max(1, (deadline.remainingNanos() + 999_999) / 1_000_000);
    }

    /** Hands each statement the deadline as a query timeout, so the server cancels it there. */
    private record Bounded(Connection delegate, Deadline deadline) implements InvocationHandler {
        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            if (method.getName().equals("unwrap") && args != null && args[0] instanceof Class<?> iface
                    && iface.isInstance(proxy)) {
                return proxy;
            }
            Object result;
            try {
                result = method.invoke(delegate, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            if (result instanceof Statement s && CREATES_STATEMENT.contains(method.getName())) {
                long left = ceilMillis(deadline);
                if (s.isWrapperFor(PgStatement.class)) {
                    s.unwrap(PgStatement.class).setQueryTimeoutMs(left);
                }
            }
            return result;
        }
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        throw new SQLFeatureNotSupportedException("a pool's connections use its own credentials");
    }
}
