package dev.thresher.tests;

import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

/**
 * Where a client connects and how: the one description of a pgwire endpoint that every client of
 * {@link ClientMatrixIT} is given, each in its own form (libpq's environment for psql, pgbench, psycopg, psycopg2
 * and asyncpg; a URL for node-postgres; a JDBC URL and properties for pgjdbc and HikariCP).
 *
 * @param options libpq's connection keywords beyond the endpoint and the credentials, e.g. {@code sslmode},
 *     {@code sslrootcert}, {@code channel_binding}; each client gets them under its own names
 */
record ClientTarget(String host, int port, String user, String password, String database, Map<String, String> options) {
    /** libpq keyword → libpq environment variable, for the options the clients are given. */
    private static final Map<String, String> LIBPQ_ENVIRONMENT = Map.of("sslmode", "PGSSLMODE", "sslrootcert",
            "PGSSLROOTCERT", "sslcert", "PGSSLCERT", "sslkey", "PGSSLKEY", "channel_binding", "PGCHANNELBINDING");
    /** libpq keyword → pgjdbc property, where they differ. */
    private static final Map<String, String> JDBC_NAMES = Map.of("channel_binding", "channelBinding");

    ClientTarget {
        options = Map.copyOf(options);
        for (String option : options.keySet()) {
            if (!LIBPQ_ENVIRONMENT.containsKey(option)) {
                throw new IllegalArgumentException("no client mapping for the connection option " + option);
            }
        }
    }

    /** A node of the test cluster, with the cluster's user and password. */
    static ClientTarget of(Node node, Map<String, String> options) {
        String address = node.pgwireAddress();
        return new ClientTarget(address.substring(0, address.lastIndexOf(':')), node.pgwirePort(), DevCluster.USER,
                DevCluster.PASSWORD, "thresher", options);
    }

    /** libpq's environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and the options), which asyncpg reads too. */
    Map<String, String> libpqEnvironment() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PGHOST", host);
        env.put("PGPORT", Integer.toString(port));
        env.put("PGUSER", user);
        env.put("PGPASSWORD", password);
        env.put("PGDATABASE", database);
        env.put("PGCONNECT_TIMEOUT", "10");
        options.forEach((k, v) -> env.put(LIBPQ_ENVIRONMENT.get(k), v));
        return env;
    }

    /** {@code postgresql://user@host:port/database?options}: the password is left to PGPASSWORD. */
    String url() {
        String query = options.entrySet().stream().map(e -> encode(e.getKey()) + "=" + encode(e.getValue()))
                .collect(Collectors.joining("&"));
        return "postgresql://" + encode(user) + "@" + host + ":" + port + "/" + encode(database)
                + (query.isEmpty() ? "" : "?" + query);
    }

    String jdbcUrl() {
        return "jdbc:postgresql://" + host + ":" + port + "/" + database;
    }

    /** The credentials and options as pgjdbc's properties, bounded connect and socket timeouts. */
    Properties jdbcProperties() {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", password);
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "60");
        options.forEach((k, v) -> p.setProperty(JDBC_NAMES.getOrDefault(k, k), v));
        return p;
    }

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
