package dev.thresher.store;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/** One embedded PostgreSQL for the store module's tests, started on first use; a fresh database per test. */
public final class TestPostgres {
    private static final AtomicInteger databases = new AtomicInteger();
    private static EmbeddedPostgres postgres;

    private TestPostgres() {}

    private static synchronized EmbeddedPostgres postgres() {
        if (postgres == null) {
            try {
                postgres = EmbeddedPostgres.builder()
                        .setServerConfig("fsync", "off")
                        .setServerConfig("synchronous_commit", "off")
                        .setServerConfig("full_page_writes", "off")
                        // Leader replicas stream each shard database through logical replication (docs/deployment.md).
                        .setServerConfig("wal_level", "logical")
                        .setServerConfig("max_replication_slots", "64")
                        .setServerConfig("max_wal_senders", "64")
                        // What a test may ask of its statements: how often each ran and was planned.
                        .setServerConfig("shared_preload_libraries", "pg_stat_statements")
                        .setServerConfig("pg_stat_statements.track_planning", "on")
                        .start();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return postgres;
    }

    /** The JDBC URL (superuser, in the URL) of a database of the embedded server. */
    public static String jdbcUrl(String database) {
        return postgres().getJdbcUrl("postgres", database);
    }

    /** Creates an empty database and returns its JDBC URL. */
    public static String newDatabase() {
        String name = "store_test_" + databases.incrementAndGet();
        try (Connection c = DriverManager.getConnection(jdbcUrl("postgres")); Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return jdbcUrl(name);
    }

    /**
     * The generic plan PostgreSQL makes for {@code statement} on {@code s}'s connection: the plan a statement gets
     * once its plan is cached, whatever its parameters' values ({@code ?} each, NULL in the EXPLAIN), as
     * {@code EXPLAIN} prints it.
     */
    public static String genericPlan(Statement s, String statement) throws SQLException {
        s.execute("SET plan_cache_mode = force_generic_plan");
        StringBuilder numbered = new StringBuilder();
        StringBuilder arguments = new StringBuilder();
        int n = 0;
        for (char ch : statement.toCharArray()) {
            if (ch == '?') {
                numbered.append('$').append(++n);
                arguments.append(n == 1 ? "NULL" : ", NULL");
            } else {
                numbered.append(ch);
            }
        }
        s.execute("PREPARE planned AS " + numbered);
        StringBuilder plan = new StringBuilder();
        try (ResultSet rs = s.executeQuery("EXPLAIN EXECUTE planned" + (n == 0 ? "" : "(" + arguments + ")"))) {
            while (rs.next()) {
                plan.append(rs.getString(1)).append('\n');
            }
        }
        s.execute("DEALLOCATE planned");
        return plan.toString();
    }

    /**
     * Waits, polling every 10 ms, until the condition holds; fails after {@code timeout}, naming what it waited for.
     * The store's tests' one way to wait (the whole-system tests' twin is {@code dev.thresher.tests.Await}).
     */
    public static void await(Duration timeout, String what, BooleanSupplier condition) {
        await(timeout, () -> what, condition);
    }

    /**
     * As {@link #await(Duration, String, BooleanSupplier)}; {@code what} names what was waited for and what was seen
     * last (a description the condition keeps up to date as it looks), read when the wait fails.
     */
    public static void await(Duration timeout, java.util.function.Supplier<String> what, BooleanSupplier condition) {
        long until = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - until > 0) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what.get());
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what.get());
            }
        }
    }
}
