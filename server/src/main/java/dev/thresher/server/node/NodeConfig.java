package dev.thresher.server.node;

import dev.thresher.http.HttpAccess;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.AuthMode;
import dev.thresher.pgwire.TlsMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * Everything one node needs. Keys of {@link #fromProperties}: {@code node.id}, {@code node.shardId},
 * {@code node.bindHost}, {@code node.wirePort}, {@code node.pgwirePort}, {@code node.httpPort},
 * {@code control.jdbcUrl}, {@code shard.jdbcUrl}, {@code db.user}, {@code db.password},
 * {@code pgwire.auth} ({@code scram-sha-256}, the default; {@code password}, cleartext against the same verifiers;
 * {@code trust}, loopback only), {@code pgwire.user} and {@code pgwire.password} (the first user, admin of
 * {@code tenant}: created, or given that password, at start), {@code tenant} (the first user's and the admin token's), {@code failpoints.enabled} (tests only; default false), {@code node.standbyShards} (the shard
 * databases besides its own this node stands by for, comma separated ids; their URLs come from the control
 * database), {@code node.wireAdvertisedHost} and {@code node.wireAdvertisedPort} (the node-to-node address other
 * nodes are told to connect to, when it is not the one bound: behind a proxy or a port mapping; default the bind
 * host and the bound wire port), {@code http.adminToken} (the bearer token of {@code /admin/*} and handler routes; none:
 * they are refused) and {@code http.openEndpoints} ({@code loopback}, {@code anywhere} or {@code nowhere}: who may use
 * {@code /livez}, {@code /readyz} and {@code /metrics} without the token; see {@link HttpAccess}), {@code tls.certFile}
 * and {@code tls.keyFile} (a PEM certificate chain and its private key, for both listeners), {@code pgwire.tls}
 * ({@code disabled}, {@code enabled} or {@code required}; default {@code enabled} with a certificate, else
 * {@code disabled}) and {@code http.tls} ({@code disabled} or {@code enabled}: HTTPS only; default {@code disabled}),
 * see {@link TlsSettings}, and every {@code limits.*} key of {@link Limits}.
 */
public record NodeConfig(String hostId, int shardId, String bindHost, int wirePort, int pgwirePort, int httpPort,
                         String controlJdbcUrl, String shardJdbcUrl, String dbUser, String dbPassword,
                         AuthMode pgwireAuth, String pgwireUser, String pgwirePassword, String tenant, Limits limits,
                         boolean failpointsEnabled, List<Integer> standbyShards, String wireAdvertisedHost,
                         int wireAdvertisedPort, HttpAccess httpAccess, TlsSettings tls) {
    public NodeConfig {
        Objects.requireNonNull(httpAccess, "httpAccess");
        Objects.requireNonNull(tls, "tls");
        Objects.requireNonNull(hostId, "hostId");
        Objects.requireNonNull(bindHost, "bindHost");
        if (wireAdvertisedHost != null && wireAdvertisedHost.isBlank()) {
            wireAdvertisedHost = null;
        }
        if (wireAdvertisedPort < 0 || wireAdvertisedPort > 65535) {
            throw new IllegalArgumentException("node.wireAdvertisedPort is 0 (the bound port) to 65535, was "
                    + wireAdvertisedPort);
        }
        Objects.requireNonNull(controlJdbcUrl, "controlJdbcUrl");
        Objects.requireNonNull(shardJdbcUrl, "shardJdbcUrl");
        Objects.requireNonNull(pgwireAuth, "pgwireAuth");
        Objects.requireNonNull(tenant, "tenant");
        Objects.requireNonNull(limits, "limits");
        standbyShards = standbyShards.stream().filter(s -> s != shardId).distinct().sorted().toList();
    }

    /** A node advertising the wire address it binds. */
    public NodeConfig(String hostId, int shardId, String bindHost, int wirePort, int pgwirePort, int httpPort,
                      String controlJdbcUrl, String shardJdbcUrl, String dbUser, String dbPassword,
                      AuthMode pgwireAuth, String pgwireUser, String pgwirePassword, String tenant, Limits limits,
                      boolean failpointsEnabled, List<Integer> standbyShards) {
        this(hostId, shardId, bindHost, wirePort, pgwirePort, httpPort, controlJdbcUrl, shardJdbcUrl, dbUser, dbPassword,
                pgwireAuth, pgwireUser, pgwirePassword, tenant, limits, failpointsEnabled, standbyShards, null, 0,
                HttpAccess.NO_TOKEN, TlsSettings.NONE);
    }

    /** This configuration with {@code access} for its HTTP routes. */
    public NodeConfig withHttpAccess(HttpAccess access) {
        return new NodeConfig(hostId, shardId, bindHost, wirePort, pgwirePort, httpPort, controlJdbcUrl, shardJdbcUrl,
                dbUser, dbPassword, pgwireAuth, pgwireUser, pgwirePassword, tenant, limits, failpointsEnabled,
                standbyShards, wireAdvertisedHost, wireAdvertisedPort, access, tls);
    }

    /** This configuration with {@code tls} for its listeners. */
    public NodeConfig withTls(TlsSettings tls) {
        return new NodeConfig(hostId, shardId, bindHost, wirePort, pgwirePort, httpPort, controlJdbcUrl, shardJdbcUrl,
                dbUser, dbPassword, pgwireAuth, pgwireUser, pgwirePassword, tenant, limits, failpointsEnabled,
                standbyShards, wireAdvertisedHost, wireAdvertisedPort, httpAccess, tls);
    }

    /** The host other nodes connect to for this node's wire server: {@code node.wireAdvertisedHost}, else the bind host. */
    public String advertisedWireHost() {
        return wireAdvertisedHost != null ? wireAdvertisedHost : bindHost;
    }

    /** The port other nodes connect to: {@code node.wireAdvertisedPort}, else {@code boundPort}, the one the wire server bound. */
    public int advertisedWirePort(int boundPort) {
        return wireAdvertisedPort != 0 ? wireAdvertisedPort : boundPort;
    }

    /** A node standing by for no shard database but its own. */
    public NodeConfig(String hostId, int shardId, String bindHost, int wirePort, int pgwirePort, int httpPort,
                      String controlJdbcUrl, String shardJdbcUrl, String dbUser, String dbPassword,
                      AuthMode pgwireAuth, String pgwireUser, String pgwirePassword, String tenant, Limits limits,
                      boolean failpointsEnabled) {
        this(hostId, shardId, bindHost, wirePort, pgwirePort, httpPort, controlJdbcUrl, shardJdbcUrl, dbUser, dbPassword,
                pgwireAuth, pgwireUser, pgwirePassword, tenant, limits, failpointsEnabled, List.of());
    }

    /** Prefix of the environment variables that override configuration keys. */
    public static final String ENVIRONMENT_PREFIX = "THRESHER_";

    /**
     * {@code THRESHER_*} variables that are not configuration keys: the {@code ./thresher} launcher's own
     * ({@code THRESHER_JAVA_OPTS}, {@code THRESHER_SKIP_BUILD}), the admin commands' node ({@code THRESHER_NODE}) and
     * the log level and format {@code logback.xml} reads.
     */
    public static final Set<String> RESERVED_VARIABLES = Set.of("THRESHER_JAVA_OPTS", "THRESHER_SKIP_BUILD", "THRESHER_NODE",
            "THRESHER_LOG_LEVEL", "THRESHER_LOG_FORMAT");

    /** Every key {@link #fromProperties} reads, the {@code limits.*} keys included, in a stable order. */
    public static Set<String> keys() {
        Set<String> keys = new LinkedHashSet<>(List.of("node.id", "node.shardId", "node.bindHost", "node.wirePort",
                "node.pgwirePort", "node.httpPort", "control.jdbcUrl", "shard.jdbcUrl", "db.user", "db.password",
                "pgwire.auth", "pgwire.user", "pgwire.password", "tenant", "failpoints.enabled", "node.standbyShards",
                "node.wireAdvertisedHost", "node.wireAdvertisedPort", "http.adminToken", "http.openEndpoints", "tls.certFile",
                "tls.keyFile", "pgwire.tls", "http.tls"));
        Limits.DEFAULTS.asMap().keySet().forEach(k -> keys.add("limits." + k));
        return keys;
    }

    /** The environment variable that overrides {@code key}: the key with dots as underscores, uppercased, after {@code THRESHER_}. */
    public static String environmentVariable(String key) {
        return ENVIRONMENT_PREFIX + key.replace('.', '_').toUpperCase(Locale.ROOT);
    }

    /**
     * The configuration keys an environment sets: each {@code THRESHER_*} variable maps to the known key
     * whose {@link #environmentVariable} it is ({@code THRESHER_LIMITS_CALLDEADLINEMS} to
     * {@code limits.callDeadlineMs}). Other variables, and the {@link #RESERVED_VARIABLES}, are not configuration.
     *
     * @throws IllegalArgumentException naming every {@code THRESHER_*} variable that matches no key
     */
    public static Map<String, String> environmentOverrides(Map<String, String> environment) {
        List<String> problems = new ArrayList<>();
        Map<String, String> overrides = environmentOverrides(environment, problems);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid node configuration: " + String.join("; ", problems));
        }
        return overrides;
    }

    private static Map<String, String> environmentOverrides(Map<String, String> environment, List<String> problems) {
        Map<String, String> keyByVariable = new HashMap<>();
        for (String key : keys()) {
            keyByVariable.put(environmentVariable(key), key);
        }
        Map<String, String> overrides = new TreeMap<>();
        List<String> unknown = new ArrayList<>();
        for (var e : new TreeMap<>(environment).entrySet()) {
            String variable = e.getKey();
            if (!variable.startsWith(ENVIRONMENT_PREFIX) || RESERVED_VARIABLES.contains(variable)) {
                continue;
            }
            String key = keyByVariable.get(variable);
            if (key == null) {
                unknown.add(variable);
            } else {
                overrides.put(key, e.getValue());
            }
        }
        if (!unknown.isEmpty()) {
            problems.add("environment variable" + (unknown.size() == 1 ? " " : "s ") + String.join(", ", unknown)
                    + " match" + (unknown.size() == 1 ? "es" : "") + " no configuration key (THRESHER_ followed by a key"
                    + " with dots as underscores, uppercased: THRESHER_LIMITS_CALLDEADLINEMS sets limits.callDeadlineMs)");
        }
        return overrides;
    }

    /**
     * Reads a node's configuration from its properties with the environment's {@code THRESHER_*}
     * variables over them (see {@link #environmentOverrides}), refusing unknown variables and missing
     * or malformed keys with one message naming them all.
     */
    public static NodeConfig fromPropertiesAndEnvironment(Map<String, String> properties, Map<String, String> environment) {
        List<String> problems = new ArrayList<>();
        Map<String, String> merged = new HashMap<>(properties);
        merged.putAll(environmentOverrides(environment, problems));
        return fromProperties(merged, problems);
    }

    /**
     * Reads a node's configuration, refusing missing and malformed keys with one message naming them all.
     */
    public static NodeConfig fromProperties(Map<String, String> p) {
        return fromProperties(p, new ArrayList<>());
    }

    private static NodeConfig fromProperties(Map<String, String> p, List<String> problems) {
        Set<String> known = keys();
        for (String key : new TreeMap<>(p).keySet()) {
            if (key.startsWith("limits.") || known.contains(key)) {
                continue; // limits.* are checked by Limits, which names an unknown one
            }
            String suggestion = known.stream().filter(k -> k.equalsIgnoreCase(key)).findFirst()
                    .map(k -> "; did you mean " + k + "?").orElse("; the keys are " + known.stream()
                            .filter(k -> !k.startsWith("limits.")).toList() + " and limits.*");
            problems.add("unknown configuration key '" + key + "'" + suggestion);
        }
        String id = required(p, "node.id", problems);
        String control = required(p, "control.jdbcUrl", problems);
        String shard = required(p, "shard.jdbcUrl", problems);
        int shardId = integer(p, "node.shardId", null, problems);
        int wirePort = integer(p, "node.wirePort", "7433", problems);
        int pgPort = integer(p, "node.pgwirePort", "5433", problems);
        int httpPort = integer(p, "node.httpPort", "8433", problems);
        int advertisedPort = integer(p, "node.wireAdvertisedPort", "0", problems);
        if (advertisedPort < 0 || advertisedPort > 65535) {
            problems.add("node.wireAdvertisedPort is 0 (the bound port) to 65535, was " + advertisedPort);
        }
        AuthMode auth = null;
        String authText = p.getOrDefault("pgwire.auth", "scram-sha-256").trim().toLowerCase(java.util.Locale.ROOT);
        switch (authText) {
            case "scram-sha-256", "scram" -> auth = AuthMode.SCRAM;
            case "password" -> auth = AuthMode.PASSWORD;
            case "trust" -> auth = AuthMode.TRUST;
            default -> problems.add("pgwire.auth must be scram-sha-256, password or trust, was '" + authText + "'");
        }
        String bindHost = p.getOrDefault("node.bindHost", "127.0.0.1");
        if (auth == AuthMode.TRUST && !loopback(bindHost)) {
            problems.add("pgwire.auth trust admits users without a password: only on a loopback node.bindHost, not '"
                    + bindHost + "'");
        }
        List<Integer> standby = new ArrayList<>();
        for (String part : p.getOrDefault("node.standbyShards", "").split(",")) {
            if (part.isBlank()) {
                continue;
            }
            try {
                standby.add(Integer.parseInt(part.trim()));
            } catch (NumberFormatException e) {
                problems.add("node.standbyShards is a comma-separated list of shard ids, had '" + part.trim() + "'");
            }
        }
        HttpAccess access = HttpAccess.NO_TOKEN;
        try {
            access = new HttpAccess(java.util.Optional.ofNullable(p.get("http.adminToken")),
                    HttpAccess.OpenEndpoints.parse(p.getOrDefault("http.openEndpoints", "loopback")));
        } catch (IllegalArgumentException e) {
            problems.add(e.getMessage());
        }
        TlsSettings tls = tls(p, problems);
        Limits limits = null;
        try {
            limits = Limits.fromProperties(p);
        } catch (IllegalArgumentException e) {
            problems.add(e.getMessage());
        }
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("invalid node configuration: " + String.join("; ", problems));
        }
        return new NodeConfig(id, shardId, bindHost, wirePort, pgPort, httpPort,
                control, shard, p.get("db.user"), p.get("db.password"), auth, p.getOrDefault("pgwire.user", "thresher"),
                p.get("pgwire.password"), p.getOrDefault("tenant", "default"), limits,
                Boolean.parseBoolean(p.getOrDefault("failpoints.enabled", "false")), standby,
                p.get("node.wireAdvertisedHost"), advertisedPort, access, tls);
    }

    /** {@code tls.certFile}, {@code tls.keyFile}, {@code pgwire.tls} and {@code http.tls}; problems go to {@code problems}. */
    private static TlsSettings tls(Map<String, String> p, List<String> problems) {
        Path cert = path(p, "tls.certFile", problems);
        Path key = path(p, "tls.keyFile", problems);
        boolean certificate = p.get("tls.certFile") != null && !p.get("tls.certFile").isBlank();
        boolean keyGiven = p.get("tls.keyFile") != null && !p.get("tls.keyFile").isBlank();
        if (certificate != keyGiven) {
            problems.add("tls.certFile and tls.keyFile go together: set both or neither");
        }
        TlsMode pgwire = TlsMode.DISABLED;
        String pgwireText = p.get("pgwire.tls");
        if (pgwireText == null || pgwireText.isBlank()) {
            pgwire = certificate ? TlsMode.ENABLED : TlsMode.DISABLED;
        } else {
            try {
                pgwire = TlsMode.parse(pgwireText);
            } catch (IllegalArgumentException e) {
                problems.add(e.getMessage());
            }
        }
        if (pgwire != TlsMode.DISABLED && !certificate) {
            problems.add("pgwire.tls=" + pgwire + " needs a certificate: set tls.certFile and tls.keyFile");
        }
        String httpText = p.getOrDefault("http.tls", "disabled").strip();
        boolean https = false;
        if (httpText.equalsIgnoreCase("enabled")) {
            https = true;
            if (!certificate) {
                problems.add("http.tls=enabled needs a certificate: set tls.certFile and tls.keyFile");
            }
        } else if (!httpText.equalsIgnoreCase("disabled")) {
            problems.add("http.tls must be disabled or enabled, was '" + httpText + "'");
        }
        if (cert == null || key == null || !problems.isEmpty()) {
            return TlsSettings.NONE; // only returned along with problems, or when no certificate is configured
        }
        return TlsSettings.of(cert, key, pgwire, https);
    }

    /** The readable file {@code key} names, or null when the key is unset or names none (a problem then). */
    private static Path path(Map<String, String> p, String key, List<String> problems) {
        String v = p.get(key);
        if (v == null || v.isBlank()) {
            return null;
        }
        Path path;
        try {
            path = Path.of(v.strip()).toAbsolutePath();
        } catch (java.nio.file.InvalidPathException e) {
            problems.add(key + " is not a file path: '" + v + "'");
            return null;
        }
        if (!Files.isRegularFile(path) || !Files.isReadable(path)) {
            problems.add(key + " names no readable file: " + path);
            return null;
        }
        return path;
    }

    private static boolean loopback(String host) {
        try {
            return java.net.InetAddress.getByName(host).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
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
