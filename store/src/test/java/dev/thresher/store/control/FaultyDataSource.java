package dev.thresher.store.control;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * A data source for tests that can be taken down (every connection attempt fails), can fail
 * statements whose SQL contains a marker, or can hold them until the test lets them go.
 */
final class FaultyDataSource {
    private final DataSource delegate;
    volatile boolean down;
    /** Statements whose SQL contains this fail. */
    volatile String failing;
    private volatile String heldMarker;
    private volatile CountDownLatch release = new CountDownLatch(0);
    private volatile CountDownLatch entered = new CountDownLatch(0);

    FaultyDataSource(DataSource delegate) {
        this.delegate = delegate;
    }

    /** Holds the next statements whose SQL contains {@code marker} until {@link #release()}. */
    void hold(String marker) {
        entered = new CountDownLatch(1);
        release = new CountDownLatch(1);
        heldMarker = marker;
    }

    /** Waits until a held statement is waiting. */
    void awaitHeld() throws InterruptedException {
        if (!entered.await(10, TimeUnit.SECONDS)) {
            throw new AssertionError("no statement was held");
        }
    }

    void release() {
        heldMarker = null;
        release.countDown();
    }

    DataSource dataSource() {
        return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, m, args) -> {
                    if (m.getName().equals("getConnection")) {
                        if (down) {
                            throw new SQLTransientConnectionException("the control database is down (test)");
                        }
                        return connection((Connection) invoke(delegate, m, args));
                    }
                    return invoke(delegate, m, args);
                });
    }

    private Connection connection(Connection c) {
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
                (proxy, m, args) -> {
                    Object r = invoke(c, m, args);
                    if (m.getName().equals("prepareStatement")) {
                        return statement((PreparedStatement) r, (String) args[0]);
                    }
                    return r;
                });
    }

    private PreparedStatement statement(PreparedStatement ps, String sql) {
        return (PreparedStatement) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {PreparedStatement.class}, (proxy, m, args) -> {
                    String fail = failing;
                    if (m.getName().startsWith("execute") && fail != null && sql.contains(fail)) {
                        throw new SQLException("statement failed (test): " + sql);
                    }
                    String marker = heldMarker;
                    if (m.getName().startsWith("execute") && marker != null && sql.contains(marker)) {
                        CountDownLatch r = release;
                        entered.countDown();
                        if (!r.await(30, TimeUnit.SECONDS)) {
                            throw new SQLException("held statement never released");
                        }
                    }
                    return invoke(ps, m, args);
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method m, Object[] args) throws Throwable {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
