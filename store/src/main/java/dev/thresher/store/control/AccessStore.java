package dev.thresher.store.control;

import dev.thresher.bindings.access.Account;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Identifiers;
import dev.thresher.bindings.access.Principal;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.bindings.access.Scram;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Users, grants and tokens in the control database (migration V13). Every change is one short transaction; the
 * tables' triggers tell every node ({@code access} on the catalog channel) to reload its {@link Snapshot}.
 *
 * <p>{@code tenant} arguments scope a change to a tenant's users: a tenant admin's statements pass its tenant, and a
 * user of another tenant is then "does not exist" (the same answer as a name nobody has). The command line, which
 * speaks to the control database as its owner, passes none.
 */
public final class AccessStore {
    private final DataSource db;

    public AccessStore(DataSource db) {
        this.db = Objects.requireNonNull(db, "db");
    }

    /**
     * Everything a node checks logins and calls against.
     *
     * @param accounts every user, by name
     * @param tokens the user each token stands for, by the token's SHA-256 in hex
     */
    public record Snapshot(Map<String, Account> accounts, Map<String, String> tokens) {
        public Snapshot {
            accounts = Map.copyOf(accounts);
            tokens = Map.copyOf(tokens);
        }

        public Optional<Account> account(String user) {
            return Optional.ofNullable(accounts.get(user));
        }

        public Optional<Principal> byToken(String token) {
            return Optional.ofNullable(tokens.get(tokenKey(token))).map(accounts::get).map(Account::principal);
        }
    }

    /** A user as the command line lists it. */
    public record UserRow(String name, String tenant, List<String> grants, int tokens, Instant createdAt,
                          String createdBy) {
    }

    /** Reads the whole snapshot in one read-only transaction. */
    public Snapshot load() {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                try (Statement s = c.createStatement()) {
                    s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
                }
                Map<String, String> tenants = new HashMap<>();
                Map<String, Scram.Verifier> verifiers = new HashMap<>();
                Map<String, Set<Grant>> grants = new HashMap<>();
                Map<String, String> tokens = new HashMap<>();
                try (Statement s = c.createStatement()) {
                    try (ResultSet rs = s.executeQuery("SELECT name, tenant, scram_verifier FROM users")) {
                        while (rs.next()) {
                            String name = rs.getString(1);
                            tenants.put(name, rs.getString(2));
                            verifiers.put(name, Scram.Verifier.parse(rs.getString(3)));
                            grants.put(name, new HashSet<>());
                        }
                    }
                    try (ResultSet rs = s.executeQuery("SELECT user_name, privilege, binding FROM user_grants")) {
                        while (rs.next()) {
                            Set<Grant> of = grants.get(rs.getString(1));
                            if (of != null) {
                                of.add(grant(rs.getString(2), rs.getString(3)));
                            }
                        }
                    }
                    try (ResultSet rs = s.executeQuery("SELECT token_sha256, user_name FROM user_tokens")) {
                        while (rs.next()) {
                            tokens.put(HexFormat.of().formatHex(rs.getBytes(1)), rs.getString(2));
                        }
                    }
                }
                Map<String, Account> accounts = new HashMap<>();
                for (var e : tenants.entrySet()) {
                    accounts.put(e.getKey(), new Account(new Principal(e.getKey(), e.getValue(), grants.get(e.getKey())),
                            verifiers.get(e.getKey())));
                }
                return new Snapshot(accounts, tokens);
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    /**
     * Creates a user with no grants in {@code tenant} (made a tenant if it is not one yet).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} when the name is taken
     */
    public void createUser(String tenant, String name, Scram.Verifier verifier, String by) {
        Identifiers.userName(name);
        inTransaction(c -> {
            BindingCatalog.ensureTenant(c, tenant);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO users (name, tenant, scram_verifier, created_by)"
                    + " VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING")) {
                p.setString(1, name);
                p.setString(2, tenant);
                p.setString(3, verifier.text());
                p.setString(4, by);
                if (p.executeUpdate() == 0) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "user " + Identifiers.quoted(name)
                            + " already exists");
                }
            }
            return null;
        });
    }

    /**
     * Creates the user, or sets its password and tenant when it exists, and grants it admin: a node's configured
     * first user, so that a configuration always names a user who can log in.
     */
    public void ensureAdmin(String tenant, String name, Scram.Verifier verifier, String by) {
        Identifiers.userName(name);
        inTransaction(c -> {
            BindingCatalog.ensureTenant(c, tenant);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO users (name, tenant, scram_verifier, created_by)"
                    + " VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET tenant = EXCLUDED.tenant,"
                    + " scram_verifier = EXCLUDED.scram_verifier WHERE users.tenant <> EXCLUDED.tenant"
                    + " OR users.scram_verifier <> EXCLUDED.scram_verifier")) {
                p.setString(1, name);
                p.setString(2, tenant);
                p.setString(3, verifier.text());
                p.setString(4, by);
                p.executeUpdate();
            }
            try (PreparedStatement g = c.prepareStatement("INSERT INTO user_grants (user_name, privilege, binding, granted_by)"
                    + " VALUES (?, 'admin', '', ?) ON CONFLICT DO NOTHING")) {
                g.setString(1, name);
                g.setString(2, by);
                g.executeUpdate();
            }
            return null;
        });
    }

    /** Sets a user's password; false when no such user (in {@code tenant}, when given). */
    public boolean setPassword(Optional<String> tenant, String name, Scram.Verifier verifier) {
        return inTransaction(c -> {
            try (PreparedStatement p = c.prepareStatement("UPDATE users SET scram_verifier = ? WHERE name = ?"
                    + " AND (?::text IS NULL OR tenant = ?)")) {
                p.setString(1, verifier.text());
                p.setString(2, name);
                p.setString(3, tenant.orElse(null));
                p.setString(4, tenant.orElse(null));
                return p.executeUpdate() == 1;
            }
        });
    }

    /** Drops a user with its grants and tokens; false when no such user (in {@code tenant}, when given). */
    public boolean dropUser(Optional<String> tenant, String name) {
        return inTransaction(c -> {
            try (PreparedStatement p = c.prepareStatement("DELETE FROM users WHERE name = ? AND (?::text IS NULL OR tenant = ?)")) {
                p.setString(1, name);
                p.setString(2, tenant.orElse(null));
                p.setString(3, tenant.orElse(null));
                return p.executeUpdate() == 1;
            }
        });
    }

    /** Grants; false when no such user (in {@code tenant}, when given). Granting twice is one grant. */
    public boolean grant(Optional<String> tenant, String user, Grant grant, String by) {
        return inTransaction(c -> {
            if (!exists(c, tenant, user)) {
                return false;
            }
            try (PreparedStatement g = c.prepareStatement("INSERT INTO user_grants (user_name, privilege, binding, granted_by)"
                    + " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")) {
                g.setString(1, user);
                g.setString(2, grant.privilege().word());
                g.setString(3, bindingColumn(grant));
                g.setString(4, by);
                g.executeUpdate();
            }
            return true;
        });
    }

    /** Revokes; false when no such user (in {@code tenant}, when given). Revoking what was not granted is no change. */
    public boolean revoke(Optional<String> tenant, String user, Grant grant) {
        return inTransaction(c -> {
            if (!exists(c, tenant, user)) {
                return false;
            }
            try (PreparedStatement g = c.prepareStatement("DELETE FROM user_grants WHERE user_name = ? AND privilege = ?"
                    + " AND binding = ?")) {
                g.setString(1, user);
                g.setString(2, grant.privilege().word());
                g.setString(3, bindingColumn(grant));
                g.executeUpdate();
            }
            return true;
        });
    }

    /** Keeps a new bearer token's digest for {@code user}; false when no such user (in {@code tenant}, when given). */
    public boolean addToken(Optional<String> tenant, String user, String token, String by) {
        return inTransaction(c -> {
            if (!exists(c, tenant, user)) {
                return false;
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO user_tokens (token_sha256, user_name, created_by)"
                    + " VALUES (?, ?, ?)")) {
                p.setBytes(1, sha256(token));
                p.setString(2, user);
                p.setString(3, by);
                p.executeUpdate();
            }
            return true;
        });
    }

    /** Drops every bearer token of a user; how many there were. */
    public int revokeTokens(Optional<String> tenant, String user) {
        return inTransaction(c -> {
            try (PreparedStatement p = c.prepareStatement("DELETE FROM user_tokens t USING users u WHERE t.user_name = u.name"
                    + " AND u.name = ? AND (?::text IS NULL OR u.tenant = ?)")) {
                p.setString(1, user);
                p.setString(2, tenant.orElse(null));
                p.setString(3, tenant.orElse(null));
                return p.executeUpdate();
            }
        });
    }

    /** Every user (of {@code tenant}, when given), by name. */
    public List<UserRow> list(Optional<String> tenant) {
        return inTransaction(c -> {
            List<UserRow> rows = new ArrayList<>();
            try (PreparedStatement p = c.prepareStatement("SELECT u.name, u.tenant, u.created_at, u.created_by,"
                    + " (SELECT count(*) FROM user_tokens t WHERE t.user_name = u.name),"
                    + " COALESCE((SELECT array_agg(g.privilege || CASE WHEN g.binding = '' THEN '' ELSE ':' || g.binding END"
                    + " ORDER BY g.privilege, g.binding) FROM user_grants g WHERE g.user_name = u.name), '{}')"
                    + " FROM users u WHERE (?::text IS NULL OR u.tenant = ?) ORDER BY u.name")) {
                p.setString(1, tenant.orElse(null));
                p.setString(2, tenant.orElse(null));
                try (ResultSet rs = p.executeQuery()) {
                    while (rs.next()) {
                        List<String> grants = new ArrayList<>();
                        for (String g : (String[]) rs.getArray(6).getArray()) {
                            int colon = g.indexOf(':');
                            grants.add(colon < 0 ? grant(g, "").text() : grant(g.substring(0, colon), g.substring(colon + 1)).text());
                        }
                        rows.add(new UserRow(rs.getString(1), rs.getString(2), grants, rs.getInt(5),
                                rs.getTimestamp(3).toInstant(), rs.getString(4)));
                    }
                }
            }
            return rows;
        });
    }

    /** The key of a token in {@link Snapshot#tokens()}: its SHA-256 in hex. */
    public static String tokenKey(String token) {
        return HexFormat.of().formatHex(sha256(token));
    }

    private static byte[] sha256(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Grant grant(String privilege, String binding) {
        Privilege p = Privilege.valueOf(privilege.toUpperCase(Locale.ROOT));
        if (p == Privilege.CALL) {
            return binding.equals("*") ? Grant.callAll() : Grant.call(binding);
        }
        return Grant.of(p);
    }

    private static String bindingColumn(Grant grant) {
        if (grant.privilege() != Privilege.CALL) {
            return "";
        }
        return grant.binding().orElse("*");
    }

    private static boolean exists(Connection c, Optional<String> tenant, String user) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("SELECT 1 FROM users WHERE name = ? AND (?::text IS NULL OR tenant = ?)"
                + " FOR UPDATE")) {
            p.setString(1, user);
            p.setString(2, tenant.orElse(null));
            p.setString(3, tenant.orElse(null));
            try (ResultSet rs = p.executeQuery()) {
                return rs.next();
            }
        }
    }

    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private <T> T inTransaction(Work<T> work) {
        try (Connection c = db.getConnection()) {
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw unavailable(e);
        }
    }

    private static ThresherException unavailable(SQLException e) {
        return ControlSql.unavailable(e);
    }
}
