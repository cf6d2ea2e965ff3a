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
        c.setAutoCommit(true);
        return c;
    }
}
