package dev.thresher.store.control;

import dev.thresher.bindings.Binding;
import dev.thresher.bindings.BindingService.Deployed;
import dev.thresher.bindings.BindingService.Version;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Selector;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * The catalog of what runs: tenants, packages (module bytes by digest), manifests (as deployed, by digest) and the
 * immutable versions of every binding, each of one kind for its whole life ({@code call}: a distributed call with a
 * selector; {@code http}: an HTTP handler without one). The one writer of those tables: a binding's versions are
 * numbered here and only here, one writer at a time per binding (an advisory lock on {@code tenant/name}), from 1 up
 * across both kinds.
 */
public final class BindingCatalog {
    /** A binding version's budget columns (migration V7), in {@link Budgets}' order; NULL is not declared. */
    static final String BUDGET_COLUMNS = "budget_run_ms, budget_memory_bytes, budget_input_bytes, "
            + "budget_output_bytes, budget_emits, budget_module_bytes";
    private static final String VERSION_COLUMNS =
            "name, version, package_digest, manifest_digest, abi_version, selector_sql, deployed_by, note, created_at";

    private final ControlSql sql;

    public BindingCatalog(DataSource db) {
        this.sql = new ControlSql(db);
    }

    /**
     * What a new version pins: the package, the manifest it was deployed with ({@code null} for none), the guest ABI
     * version ({@code null} for an HTTP handler), the selector ({@code null} for an HTTP handler), its budgets.
     */
    public record Pins(String packageDigest, String manifestDigest, Integer abiVersion, String selectorSql, Budgets budgets) {
        boolean handler() {
            return selectorSql == null;
        }

        Pins withManifestDigest(String digest) {
            return new Pins(packageDigest, digest, abiVersion, selectorSql, budgets);
        }

        /**
         * Whether {@code v} pins the same package, selector and manifest: the same manifest digest, or (for a version
         * whose digest was taken of the bytes as sent, before digests were of the canonical form) a manifest that is
         * the same JSON value.
         */
        boolean samePins(Connection c, Version v) throws SQLException {
            if (!packageDigest.equals(v.packageDigest()) || !Objects.equals(selectorSql, v.selector())) {
                return false;
            }
            if (Objects.equals(manifestDigest, v.manifestDigest())) {
                return true;
            }
            return manifestDigest != null && v.manifestDigest() != null && ControlSql.queryOne(c,
                    "SELECT a.manifest::jsonb = b.manifest::jsonb FROM manifests a, manifests b WHERE a.digest = ?"
                    + " AND b.digest = ?", rs -> rs.getBoolean(1), manifestDigest, v.manifestDigest()).orElse(false);
        }
    }

    /**
     * A manifest's digest: SHA-256 of its canonical form, the text PostgreSQL's {@code jsonb} prints for it (keys
     * ordered, each once, no insignificant white space), so the same manifest has one digest whatever path brought it
     * (a file's bytes, an HTTP request's JSON object, an SQL string) and however it was spaced or ordered.
     */
    static String manifestDigest(Connection c, String manifestText) throws SQLException {
        try {
            return ControlSql.queryOne(c, "SELECT 'sha256:' || encode(sha256(convert_to((?::jsonb)::text, 'UTF8')), 'hex')",
                    rs -> rs.getString(1), manifestText).orElseThrow();
        } catch (SQLException e) {
            if (e.getSQLState() != null && e.getSQLState().startsWith("22")) { // data: JSON jsonb does not hold
                throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "manifest: not a JSON value PostgreSQL"
                        + " stores (" + Quoted.of(String.valueOf(e.getMessage()).lines().findFirst().orElse("")) + ")");
            }
            throw e;
        }
    }

    /** The current version of a binding of either kind, with its manifest's text: what an HTTP handler is served by. */
    public record Current(int version, boolean handler, String packageDigest, String manifest, Budgets budgets) {
    }

    /**
     * The one writer of tenants: a tenant is made, if new, in the transaction of the first thing written for it (a
     * binding version, a user, a table), and by this alone ({@code c} that transaction's connection).
     */
    static void ensureTenant(Connection c, String tenant) throws SQLException {
        ControlSql.update(c, "INSERT INTO tenants (tenant) VALUES (?) ON CONFLICT DO NOTHING", tenant);
    }

    /** {@link #ensureTenant(Connection, String)} in a transaction of its own. */
    public void ensureTenant(String tenant) {
        sql.inTransaction(c -> {
            ensureTenant(c, tenant);
            return null;
        });
    }

    /** Stores a package by digest; storing the same bytes twice is a no-op. */
    public void putPackage(String digest, byte[] wasm) {
        sql.autoCommit(c -> {
            putPackage(c, digest, wasm);
            return null;
        });
    }

    public Optional<byte[]> packageBytes(String digest) {
        return sql.queryOne("SELECT wasm FROM packages WHERE digest = ?", rs -> rs.getBytes(1), digest);
    }

    /**
     * Makes {@code pins} the binding's current version, storing the package and the manifest with it, in one
     * transaction: unchanged when the current version pins the same package, manifest and selector, else the next
     * version.
     *
     * @param pins what the version pins; its manifest digest is ignored when {@code manifestText} is given, and taken of
     *     the manifest's canonical form ({@link #manifestDigest})
     * @param wasm the module's bytes, stored by digest; {@code null} when the package is stored already
     * @param manifestText the manifest as deployed, a JSON object ({@code null} for none), stored as sent
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when the name is a binding of the other kind
     */
    public Deployed deploy(String tenant, String name, Pins given, byte[] wasm, String manifestText, String deployedBy) {
        return sql.inTransaction(c -> {
            ControlSql.lock(c, tenant + "/" + name);
            Pins pins = manifestText == null ? given.withManifestDigest(null)
                    : given.withManifestDigest(manifestDigest(c, manifestText));
            if (wasm != null) {
                putPackage(c, pins.packageDigest(), wasm);
            }
            if (pins.manifestDigest() != null) {
                ControlSql.update(c, "INSERT INTO manifests (digest, manifest) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING",
                        pins.manifestDigest(), manifestText);
            }
            Optional<Version> current = current(c, tenant, name);
            if (current.isPresent() && (current.get().selector() == null) != pins.handler()) {
                throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "binding " + name + " is "
                        + (pins.handler() ? "a distributed call; an HTTP handler needs a name of its own"
                        : "an HTTP handler; a distributed call needs a name of its own"));
            }
            if (current.isPresent() && pins.samePins(c, current.get())) {
                return new Deployed(name, current.get().version(), pins.packageDigest(), pins.manifestDigest(), true);
            }
            int version = insertVersion(c, tenant, name, pins, deployedBy, null);
            return new Deployed(name, version, pins.packageDigest(), pins.manifestDigest(), false);
        });
    }

    /**
     * A new version of the binding pinning what version {@code to} pinned (package, manifest, selector, budgets), in one
     * transaction; {@code check} sees the version rolled back to first and may refuse it by throwing. A rollback to
     * what the current version pins already (the current version itself, or an older one pinning the same) changes
     * nothing and answers the current version, unchanged, as a deploy of the same content does.
     *
     * @throws ThresherException {@link ErrorCode#UNKNOWN_BINDING} for an unknown binding or version
     */
    public Deployed rollback(String tenant, String name, int to, String deployedBy, Consumer<Version> check) {
        return sql.inTransaction(c -> {
            ControlSql.lock(c, tenant + "/" + name);
            List<Version> history = history(c, tenant, name);
            if (history.isEmpty()) {
                throw unknown(name);
            }
            Version current = history.get(history.size() - 1);
            Version target = history.stream().filter(v -> v.version() == to).findFirst()
                    .orElseThrow(() -> new ThresherException(ErrorCode.UNKNOWN_BINDING, "binding " + name + " has no version "
                            + to + "; its versions are 1.." + current.version()));
            if (to == current.version() || new Pins(target.packageDigest(), target.manifestDigest(), target.abiVersion(),
                    target.selector(), Budgets.NONE).samePins(c, current)) {
                // what the current version pins already, as a deploy of the same content: unchanged, nothing written
                return new Deployed(name, current.version(), current.packageDigest(), current.manifestDigest(), true);
            }
            check.accept(target);
            Budgets budgets = ControlSql.queryOne(c, "SELECT " + BUDGET_COLUMNS
                    + " FROM bindings WHERE tenant = ? AND name = ? AND version = ?", rs -> budgets(rs, 1), tenant, name, to)
                    .orElseThrow();
            Pins pins = new Pins(target.packageDigest(), target.manifestDigest(), target.abiVersion(), target.selector(),
                    budgets);
            int version = insertVersion(c, tenant, name, pins, deployedBy, "rollback to version " + to);
            return new Deployed(name, version, target.packageDigest(), target.manifestDigest(), false);
        });
    }

    /** The current version of every binding of a tenant, by name. */
    public List<Version> list(String tenant) {
        return sql.queryList("SELECT DISTINCT ON (name) " + VERSION_COLUMNS
                + " FROM bindings WHERE tenant = ? ORDER BY name, version DESC", BindingCatalog::version, tenant);
    }

    /**
     * Every version of a binding, oldest first.
     *
     * @throws ThresherException {@link ErrorCode#UNKNOWN_BINDING} when there is none
     */
    public List<Version> history(String tenant, String name) {
        List<Version> versions = sql.autoCommit(c -> history(c, tenant, name));
        if (versions.isEmpty()) {
            throw unknown(name);
        }
        return versions;
    }

    /** The manifest a version was deployed with, as deployed; empty for versions from before manifests. */
    public Optional<String> manifest(String manifestDigest) {
        if (manifestDigest == null) {
            return Optional.empty();
        }
        return sql.queryOne("SELECT manifest FROM manifests WHERE digest = ?", rs -> rs.getString(1), manifestDigest);
    }

    /** The highest version of a binding, if the name exists and is a distributed call's (not an HTTP handler's). */
    public Optional<Binding> currentCall(String tenant, String name) {
        return sql.queryOne("SELECT version, package_digest, selector_sql, " + BUDGET_COLUMNS
                        + " FROM bindings WHERE tenant = ? AND name = ? AND kind = 'call' ORDER BY version DESC LIMIT 1",
                rs -> new Binding(tenant, name, rs.getInt(1), rs.getString(2), Selector.parse(rs.getString(3)), budgets(rs, 4)),
                tenant, name);
    }

    /** One immutable version of a distributed call's binding, whether or not it is still the current one. */
    public Optional<Binding> call(String tenant, String name, int version) {
        return sql.queryOne("SELECT package_digest, selector_sql, " + BUDGET_COLUMNS + """
                 FROM bindings
                WHERE tenant = ? AND name = ? AND version = ? AND kind = 'call'""",
                rs -> new Binding(tenant, name, version, rs.getString(1), Selector.parse(rs.getString(2)), budgets(rs, 3)),
                tenant, name, version);
    }

    /** The current version of a binding of either kind with its manifest's text; empty for an unknown name. */
    public Optional<Current> current(String tenant, String name) {
        return sql.queryOne("""
                SELECT b.version, b.kind, b.package_digest, m.manifest, b.budget_run_ms, b.budget_memory_bytes,
                       b.budget_input_bytes, b.budget_output_bytes, b.budget_emits, b.budget_module_bytes
                  FROM bindings b LEFT JOIN manifests m ON m.digest = b.manifest_digest
                 WHERE b.tenant = ? AND b.name = ?
                 ORDER BY b.version DESC LIMIT 1""",
                rs -> new Current(rs.getInt(1), "http".equals(rs.getString(2)), rs.getString(3), rs.getString(4),
                        budgets(rs, 5)), tenant, name);
    }

    /** The distributed calls whose current version's selector reads {@code table}, by name. */
    public List<String> readersOf(String tenant, String table) {
        return readersOf(tenant, table, null);
    }

    /**
     * The distributed calls whose current version's selector reads {@code column} of {@code table} (any of its columns
     * when null), by name.
     */
    public List<String> readersOf(String tenant, String table, String column) {
        Map<String, String> current = new LinkedHashMap<>();
        sql.queryList("""
                SELECT DISTINCT ON (name) name, selector_sql FROM bindings WHERE tenant = ? AND kind = 'call'
                ORDER BY name, version DESC""", rs -> current.put(rs.getString(1), rs.getString(2)), tenant);
        return current.entrySet().stream().filter(e -> reads(e.getValue(), table, column)).map(Map.Entry::getKey)
                .toList();
    }

    /** Whether the selector reads {@code table} ({@code column} of it, unless null). */
    private static boolean reads(String selectorSql, String table, String column) {
        try {
            Selector selector = Selector.parse(selectorSql);
            return selector.table().equals(table) && (column == null || selector.reads(column));
        } catch (ThresherException bad) {
            return false; // a binding whose selector no longer parses reads nothing
        }
    }

    private static void putPackage(Connection c, String digest, byte[] wasm) throws SQLException {
        ControlSql.update(c, "INSERT INTO packages (digest, wasm, size_bytes) VALUES (?, ?, ?) ON CONFLICT (digest) DO NOTHING",
                digest, wasm, wasm.length);
    }

    /** The one place a binding version is numbered: the highest of either kind, plus one, under the binding's lock. */
    private static int insertVersion(Connection c, String tenant, String name, Pins pins, String deployedBy, String note)
            throws SQLException {
        ensureTenant(c, tenant);
        int version = ControlSql.queryOne(c, "SELECT coalesce(max(version), 0) + 1 FROM bindings WHERE tenant = ? AND name = ?",
                rs -> rs.getInt(1), tenant, name).orElseThrow();
        Budgets b = pins.budgets();
        ControlSql.update(c, "INSERT INTO bindings (tenant, name, version, package_digest, selector_sql, manifest_digest,"
                        + " abi_version, deployed_by, note, kind, " + BUDGET_COLUMNS + ")"
                        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                tenant, name, version, pins.packageDigest(), pins.selectorSql(), pins.manifestDigest(), pins.abiVersion(),
                deployedBy, note, pins.handler() ? "http" : "call", declared(b.runMs()), declared(b.memoryBytes()),
                declared(b.inputBytes()), declared(b.outputBytes()), declared(b.emits()), declared(b.moduleBytes()));
        return version;
    }

    /** A budget as stored: NULL where it is not declared (0). */
    private static Long declared(long value) {
        return value > 0 ? value : null;
    }

    private static List<Version> history(Connection c, String tenant, String name) throws SQLException {
        return ControlSql.queryList(c, "SELECT " + VERSION_COLUMNS + " FROM bindings WHERE tenant = ? AND name = ?"
                + " ORDER BY version", BindingCatalog::version, tenant, name);
    }

    private static Optional<Version> current(Connection c, String tenant, String name) throws SQLException {
        List<Version> all = history(c, tenant, name);
        return all.isEmpty() ? Optional.empty() : Optional.of(all.get(all.size() - 1));
    }

    private static Version version(ResultSet rs) throws SQLException {
        int abi = rs.getInt(5);
        return new Version(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getString(4), rs.wasNull() ? null : abi,
                rs.getString(6), rs.getString(7), rs.getString(8), rs.getObject(9, OffsetDateTime.class).toInstant());
    }

    static Budgets budgets(ResultSet rs, int first) throws SQLException {
        long[] v = new long[6];
        for (int i = 0; i < 6; i++) {
            v[i] = rs.getLong(first + i); // NULL reads 0: not declared
        }
        return new Budgets(v[0], v[1], v[2], v[3], v[4], v[5]);
    }

    private static ThresherException unknown(String name) {
        return new ThresherException(ErrorCode.UNKNOWN_BINDING, "there is no binding " + Quoted.of(name));
    }
}
