package dev.thresher.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.thresher.limits.Deadline;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link Pools#bounded}: within a {@link DbDeadline}, every wait on the database ends at the deadline (plus
 * {@link BoundedDataSource#SOCKET_GRACE_MS}), whatever the pool's own timeouts (10 s to take a connection, no
 * statement or socket timeout) would allow. Each test bounds the elapsed time by the deadline plus one second:
 * the requirement itself, measured, not a sleep.
 */
class BoundedDataSourceTest {
    private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static HikariDataSource pool;
    private static DataSource bounded;

    @BeforeAll
    static void open() {
        pool = Pools.open("bounded-test", TestPostgres.newDatabase(), null, null, 1);
        bounded = Pools.bounded(pool);
    }

    @AfterAll
    static void close() {
        pool.close();
    }

    @Test
    void aConnectionIsWaitedForOnlyUntilTheDeadline() throws Exception {
        // kills: getConnection(remainingMs) (the pool's 10 s connection timeout instead)
        try (Connection held = pool.getConnection(); DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(300)))) {
            long t = System.nanoTime();
            assertThatThrownBy(bounded::getConnection).isInstanceOf(SQLException.class);
            assertThat(System.nanoTime() - t).isLessThan(TimeUnit.MILLISECONDS.toNanos(300) + BOUND_NANOS);
            assertThat(DbDeadline.passed()).isTrue();
        }
    }

    @Test
    void aConnectionThePoolCannotGiveSoonIsOpenedDirectlyAndClosedWhenGivenBack() throws Exception {
        // kills: BoundedDataSource's direct connection (a lease renewal waited for the pool, whose creator backs off
        // up to 5 s after an outage, past its lease)
        DataSource leases = Pools.boundedOrDirect(pool);
        try (Connection held = pool.getConnection(); DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofSeconds(5)))) {
            try (Connection c = leases.getConnection(); java.sql.Statement s = c.createStatement();
                 java.sql.ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                assertThat(rs.next()).isTrue();
                assertThat(pool.getHikariPoolMXBean().getTotalConnections()).as("not one of the pool's").isEqualTo(1);
            }
            assertThat(DbDeadline.passed()).isFalse();
        }
        // outside a scope, and when the pool has one to give, it is the pool's
        try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofSeconds(5)));
             Connection c = leases.getConnection()) {
            assertThat(pool.getHikariPoolMXBean().getActiveConnections()).isEqualTo(1);
        }
        assertThat(pool.getHikariPoolMXBean().getTotalConnections()).isEqualTo(1);
    }

    @Test
    void aStatementIsCancelledByTheServerAtTheDeadline() throws Exception {
        // kills: the statements' query timeout (no statement timeout on the pool)
        try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(500)));
             Connection c = bounded.getConnection(); Statement s = c.createStatement()) {
            long t = System.nanoTime();
            assertThatThrownBy(() -> s.execute("SELECT pg_sleep(20)")).isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("57014"));
            assertThat(System.nanoTime() - t).isLessThan(TimeUnit.MILLISECONDS.toNanos(500) + BOUND_NANOS);
        }
    }

    @Test
    void aFrozenServerCannotHoldAStatementPastTheDeadline() throws Exception {
        // kills: the connection's network timeout (a frozen backend answers neither the statement nor its cancel)
        long pid;
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            pid = rs.getLong(1); // the pool's one connection: the bounded one below gets the same backend
        }
        try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(800)));
             Connection c = bounded.getConnection(); Statement s = c.createStatement()) {
            signal("STOP", pid);
            try {
                long t = System.nanoTime();
                assertThatThrownBy(() -> s.execute("SELECT 1")).isInstanceOf(SQLException.class);
                assertThat(System.nanoTime() - t).isLessThan(TimeUnit.MILLISECONDS.toNanos(800) + BOUND_NANOS);
            } finally {
                signal("CONT", pid);
            }
        }
    }

    @Test
    void aServerThatStopsAnsweringAltogetherCannotHoldAStatementPastTheDeadlineWithTheCancel() throws Exception {
        // kills: BoundedDataSource's own cancel (with the driver's query timeout, the statement's thread waited for the
        // cancel connection to be answered: 10 s, cancelSignalTimeout's default, when the whole server is silent)
        long backend;
        String dataDirectory;
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_backend_pid(), current_setting('data_directory')")) {
            rs.next();
            backend = rs.getLong(1);
            dataDirectory = rs.getString(2);
        }
        long postmaster = Long.parseLong(java.nio.file.Files.readAllLines(
                java.nio.file.Path.of(dataDirectory, "postmaster.pid")).get(0).trim());
        try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(800)));
             Connection c = bounded.getConnection(); Statement s = c.createStatement()) {
            signal("STOP", postmaster); // a cancel connection is accepted by the kernel, then never answered
            signal("STOP", backend);
            try {
                long t = System.nanoTime();
                assertThatThrownBy(() -> s.execute("SELECT 1")).isInstanceOf(SQLException.class);
                assertThat(System.nanoTime() - t).isLessThan(TimeUnit.MILLISECONDS.toNanos(800) + BOUND_NANOS);
            } finally {
                signal("CONT", backend);
                signal("CONT", postmaster);
            }
        }
        // the connection a cancel was sent on left the pool: the next one is another backend
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            assertThat(rs.getLong(1)).isNotEqualTo(backend);
        }
    }

    @Test
    void anIdleConnectionToAFrozenServerIsGivenUpWithinTheDeadline() throws Exception {
        // kills: Pools' validation timeout (HikariCP checks a connection idle > 500 ms before handing it out and would
        // wait 5 s for a frozen server, past the deadline)
        long pid;
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            pid = rs.getLong(1);
        }
        long idleSince = System.nanoTime();
        TestPostgres.await(Duration.ofSeconds(5), "the pool's connection idle for 600 ms",
                () -> System.nanoTime() - idleSince > TimeUnit.MILLISECONDS.toNanos(600));
        signal("STOP", pid);
        try (DbDeadline scope = DbDeadline.enter(Deadline.after(Duration.ofMillis(300)))) {
            long t = System.nanoTime();
            // the idle connection's backend is frozen: given up after the check, and a new one taken (the server
            // still accepts connections) or none within the deadline; either way, in time
            try (Connection c = bounded.getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                assertThat(rs.getLong(1)).isNotEqualTo(pid);
            } catch (SQLException e) {
                assertThat(DbDeadline.passed()).as(e.toString()).isTrue();
            }
            assertThat(System.nanoTime() - t).isLessThan(TimeUnit.MILLISECONDS.toNanos(300) + BOUND_NANOS);
        } finally {
            signal("CONT", pid);
        }
    }

    @Test
    void outsideADeadlineThePoolIsItself() throws Exception {
        // kills: the scope check (a connection without a deadline bounded by a stale one)
        assertThat(DbDeadline.current()).isEmpty();
        try (Connection c = bounded.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT 1")) {
            assertThat(rs.next()).isTrue();
            assertThat(c.getNetworkTimeout()).isZero();
        }
    }

    private static void signal(String signal, long pid) throws Exception {
        Process p = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        assertThat(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0).as("kill -%s %d", signal, pid).isTrue();
    }
}
