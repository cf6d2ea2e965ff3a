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
        return new HikariDataSource(c);
    }
}
