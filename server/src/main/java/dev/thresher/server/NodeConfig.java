package dev.thresher.server;

import dev.thresher.limits.Limits;
import dev.thresher.pgwire.AuthMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Everything one node needs. Keys of {@link #fromProperties}: {@code node.id}, {@code node.shardId},
 * {@code node.bindHost}, {@code node.wirePort}, {@code node.pgwirePort}, {@code node.httpPort},
 * {@code control.jdbcUrl}, {@code shard.jdbcUrl}, {@code db.user}, {@code db.password},
 * {@code pgwire.auth} ({@code trust} or {@code password}), {@code pgwire.user}, {@code pgwire.password},
 * {@code tenant}, {@code failpoints.enabled} (tests only; default false), and every {@code limits.*} key of
 * {@link Limits}.
 */
public record NodeConfig(String hostId, int shardId, String bindHost, int wirePort, int pgwirePort, int httpPort,
                         String controlJdbcUrl, String shardJdbcUrl, String dbUser, String dbPassword,
                         AuthMode pgwireAuth, String pgwireUser, String pgwirePassword, String tenant, Limits limits,
                         boolean failpointsEnabled) {
    public NodeConfig {
        Objects.requireNonNull(hostId, "hostId");
        Objects.requireNonNull(bindHost, "bindHost");
        Objects.requireNonNull(controlJdbcUrl, "controlJdbcUrl");
        Objects.requireNonNull(shardJdbcUrl, "shardJdbcUrl");
        Objects.requireNonNull(pgwireAuth, "pgwireAuth");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(limits, "limits");
    }

    /**
     * Reads a node's configuration, refusing missing and malformed keys with one message naming them all.
     */
    public static NodeConfig fromProperties(Map<String, String> p) {
        List<String> problems = new ArrayList<>();
        String id = required(p, "node.id", problems);
        String control = required(p, "control.jdbcUrl", problems);
        String shard = required(p, "shard.jdbcUrl", problems);
        int shardId = integer(p, "node.shardId", null, problems);
        int wirePort = integer(p, "node.wirePort", "7433", problems);
        int pgPort = integer(p, "node.pgwirePort", "5433", problems);
        int httpPort = integer(p, "node.httpPort", "8433", problems);
        AuthMode auth = null;
        String authText = p.getOrDefault("pgwire.auth", "password");
        try {
            auth = AuthMode.valueOf(authText.trim().toUpperCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            problems.add("pgwire.auth must be trust or password, was '" + authText + "'");
        }
        Limits limits = null;
        try {
            limits = Limits.fromProperties(p);
        } catch (IllegalArgumentException e) {
            problems.add(e.getMessage());
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid node configuration: " + String.join("; ", problems));
        }
        return new NodeConfig(id, shardId, p.getOrDefault("node.bindHost", "127.0.0.1"), wirePort, pgPort, httpPort,
                control, shard, p.get("db.user"), p.get("db.password"), auth, p.getOrDefault("pgwire.user", "thresher"),
                p.get("pgwire.password"), p.getOrDefault("tenant", "default"), limits,
                Boolean.parseBoolean(p.getOrDefault("failpoints.enabled", "false")));
    }

    private static String required(Map<String, String> p, String key, List<String> problems) {
        String v = p.get(key);
        if (v == null || v.isBlank()) {
            problems.add(key + " is required");
        }
        return v;
    }

    private static int integer(Map<String, String> p, String key, String dflt, List<String> problems) {
        String v = p.getOrDefault(key, dflt);
        if (v == null) {
            problems.add(key + " is required");
            return 0;
        }
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            problems.add(key + " is not an integer: '" + v + "'");
            return 0;
        }
    }
}
