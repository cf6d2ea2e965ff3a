package dev.thresher.store;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import javax.sql.DataSource;

/**
 * A {@link DataSource} that counts what its connections send: statements executed and
 * transactions ended by a commit. It wraps each connection and each statement in a
 * {@link Proxy}, so a test can hold a piece of code to a budget ("one call reads the control
 * database at most twice").
 *
 * <p>What counts:
 * <ul>
 *   <li>a <b>statement</b> is one invocation of {@code execute}, {@code executeQuery},
 *       {@code executeUpdate}, {@code executeLargeUpdate}, {@code executeBatch} or
 *       {@code executeLargeBatch} on a {@link Statement}, {@link java.sql.PreparedStatement} or
 *       {@link java.sql.CallableStatement} (a batch counts once, failed statements count too);</li>
 *   <li>a <b>transaction</b> is each statement run in auto-commit mode, each {@code commit()}
 *       that ends a transaction in which at least one statement ran, and a switch back to
 *       auto-commit that commits such a transaction implicitly; a rollback is not a transaction
 *       but is counted in {@link #rollbacks()}.</li>
 * </ul>
 * Not counted: what a driver sends by itself (pgjdbc's {@code setTransactionIsolation} is a
 * round trip of its own), and work done on an object obtained by {@code unwrap}.
 */
public final class CountingDataSource extends ForwardingDataSource {
    private static final Set<String> EXECUTES = Set.of(
            "execute", "executeQuery", "executeUpdate", "executeLargeUpdate", "executeBatch", "executeLargeBatch");
    private static final int RECENT = 128;

    private final LongAdder statements = new LongAdder();
    private final LongAdder transactions = new LongAdder();
    private final LongAdder rollbacks = new LongAdder();
    /** A lock-free ring of the last statements' SQL: it sits on the call path of a node. */
    private final AtomicReferenceArray<String> recent = new AtomicReferenceArray<>(RECENT);
    private final AtomicLong recorded = new AtomicLong();

    public CountingDataSource(DataSource delegate) {
        super(delegate);
    }

    /** The counts at one moment; subtract two to measure a piece of code. */
    public record Snapshot(long statements, long transactions) {
        /** What happened between {@code earlier} and this snapshot. */
        public Snapshot minus(Snapshot earlier) {
            return new Snapshot(statements - earlier.statements, transactions - earlier.transactions);
        }
    }

    public long statements() {
        return statements.sum();
    }

    public long transactions() {
        return transactions.sum();
    }

    public long rollbacks() {
        return rollbacks.sum();
    }

    public Snapshot snapshot() {
        return new Snapshot(statements(), transactions());
    }

    /** What happened since {@code earlier}: {@code snapshot().minus(earlier)}. */
    public Snapshot since(Snapshot earlier) {
        return snapshot().minus(earlier);
    }

    /**
     * The SQL of the last statements executed (at most 128, oldest first), to say what a budget
     * was spent on. A batch shows the SQL it was prepared with, or {@code <batch>}. Exact when no
     * statement runs meanwhile; under concurrency a slot may already hold a newer statement.
     */
    public List<String> recentStatements() {
        long end = recorded.get();
        List<String> sql = new ArrayList<>(RECENT);
        for (long i = Math.max(0, end - RECENT); i < end; i++) {
            String s = recent.get((int) (i % RECENT));
            if (s != null) {
                sql.add(s);
            }
        }
        return List.copyOf(sql);
    }


    @Override
    public Connection getConnection() throws SQLException {
        return wrap(delegate().getConnection());
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return wrap(delegate().getConnection(username, password));
    }








    private Connection wrap(Connection c) throws SQLException {
        return (Connection) Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(), new Class<?>[] {Connection.class},
                new ConnectionHandler(c, c.getAutoCommit()));
    }

    private void executed(ConnectionHandler conn, String sql) {
        statements.increment();
        if (conn.autoCommit) {
            transactions.increment();
        } else {
            conn.dirty = true;
        }
        recent.set((int) (recorded.getAndIncrement() % RECENT), sql);
    }

    private static Object call(Object target, Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static Object identity(Object proxy, Method m, Object[] args, Object target) {
        return switch (m.getName()) {
            case "equals" -> proxy == args[0];
            case "hashCode" -> System.identityHashCode(proxy);
            default -> "Counting[" + target + "]";
        };
    }

    private static boolean isObjectMethod(Method m) {
        return m.getDeclaringClass() == Object.class;
    }

    private final class ConnectionHandler implements InvocationHandler {
        private final Connection target;
        /** Mirrors the connection's auto-commit mode, as set through this proxy. */
        volatile boolean autoCommit;
        /** A statement ran in the open transaction, which no commit or rollback has ended yet. */
        volatile boolean dirty;

        ConnectionHandler(Connection target, boolean autoCommit) {
            this.target = target;
            this.autoCommit = autoCommit;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            if (isObjectMethod(m)) {
                return identity(proxy, m, args, target);
            }
            String name = m.getName();
            if (CREATES_STATEMENT.contains(name)) {
                Statement s = (Statement) call(target, m, args);
                String sql = name.equals("createStatement") ? null : (String) args[0];
                return Proxy.newProxyInstance(CountingDataSource.class.getClassLoader(), new Class<?>[] {m.getReturnType()},
                        new StatementHandler(s, (Connection) proxy, this, sql));
            }
            switch (name) {
                case "commit" -> {
                    try {
                        Object r = call(target, m, args);
                        if (dirty) {
                            transactions.increment();
                        }
                        return r;
                    } finally {
                        dirty = false;
                    }
                }
                case "rollback" -> {
                    Object r = call(target, m, args);
                    if (args == null || args.length == 0) {
                        if (dirty) {
                            rollbacks.increment();
                        }
                        dirty = false;
                    }
                    return r;
                }
                case "setAutoCommit" -> {
                    boolean on = (Boolean) args[0];
                    Object r = call(target, m, args);
                    if (on && !autoCommit && dirty) {
                        transactions.increment(); // JDBC: switching auto-commit on commits the open transaction
                    }
                    if (on != autoCommit) {
                        dirty = false;
                    }
                    autoCommit = on;
                    return r;
                }
                case "close" -> {
                    dirty = false;
                    return call(target, m, args);
                }
                default -> {
                    return call(target, m, args);
                }
            }
        }
    }

    private final class StatementHandler implements InvocationHandler {
        private final Statement target;
        private final Connection connectionProxy;
        private final ConnectionHandler conn;
        private final String preparedSql;

        StatementHandler(Statement target, Connection connectionProxy, ConnectionHandler conn, String preparedSql) {
            this.target = target;
            this.connectionProxy = connectionProxy;
            this.conn = conn;
            this.preparedSql = preparedSql;
        }

        @Override
        public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
            if (isObjectMethod(m)) {
                return identity(proxy, m, args, target);
            }
            String name = m.getName();
            if (EXECUTES.contains(name)) {
                String sql = args != null && args.length > 0 && args[0] instanceof String s ? s
                        : preparedSql != null ? preparedSql : "<batch>";
                executed(conn, sql);
            } else if (name.equals("getConnection")) {
                return connectionProxy;
            }
            return call(target, m, args);
        }
    }
}
