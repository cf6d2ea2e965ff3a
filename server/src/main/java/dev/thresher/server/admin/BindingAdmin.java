package dev.thresher.server.admin;

import com.dylibso.chicory.wabt.Wat2Wasm;
import dev.thresher.bindings.BindingService;
import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.Selector;
import dev.thresher.cellhost.GuestModuleCheck;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import dev.thresher.store.DbDeadline;
import dev.thresher.store.control.BindingCatalog;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Deploys component packages and manages binding versions: {@code thresher deploy DIR}, {@code thresher
 * binding list|show|history|rollback}, and their HTTP and SQL forms.
 *
 * <p>A deploy checks everything before anything is stored: the manifest (every problem with its field
 * path), the module's size, its exports and imports with their exact types for the declared guest ABI
 * version, its memory and tables ({@link GuestModuleCheck}), and the selector (the allow-list, then its table
 * and columns on a shard database holding the table, with types a batch carries). Then, in one
 * transaction of the control database: the package (by the SHA-256 of the module's bytes), the manifest (by
 * the SHA-256 of its bytes) and the binding's next version, unless the current version already pins the
 * same package, manifest and selector (deploying the same thing again changes nothing).
 *
 * <p>An HTTP handler package (a manifest of version 2 with an {@code http} section) is deployed the same way, as a
 * binding of kind {@code http}: its module is checked against the HTTP handler ABI, its routes by the manifest, and
 * it has no selector. A binding keeps its kind: a name deployed as a distributed call cannot become a handler, nor the
 * other way round.
 */
public final class BindingAdmin implements BindingService {
    /** Column types a selector may read: those a row batch carries. */
    static final Set<String> BATCH_TYPES = Set.of("int2", "int4", "int8", "float4", "float8", "numeric", "text", "varchar",
            "bpchar", "bool", "bytea");

    private final TableAdmin tables;
    private final Limits limits;

    public BindingAdmin(TableAdmin tables, Limits limits) {
        this.tables = tables;
        this.limits = limits;
    }


    /** Deploys the package in {@code dir}: its {@code thresher.json} and the module it names. */
    public Deployed deployDir(String tenant, String deployedBy, Path dir) throws IOException {
        Package p = read(dir, limits);
        return deploy(tenant, deployedBy, p.manifest(), p.module());
    }

    /** A package as read from its directory: the manifest's bytes and the module's (wasm or text). */
    public record Package(byte[] manifest, byte[] module) {
    }

    /** A package whose manifest and module passed every check that needs no database. */
    public record Checked(Manifest manifest, byte[] wasm) {
    }

    /**
     * Reads the package in {@code dir}: its {@code thresher.json} and the module it names.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} when either is missing, as {@link Manifest#parse}
     */
    public static Package read(Path dir, Limits limits) throws IOException {
        Path manifestFile = dir.resolve("thresher.json");
        if (!Files.isRegularFile(manifestFile)) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, dir + " holds no thresher.json (the manifest)");
        }
        byte[] manifest = Files.readAllBytes(manifestFile);
        Manifest m = Manifest.parse(manifest);
        Path moduleFile = dir.resolve(m.module());
        if (!Files.isRegularFile(moduleFile)) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, "manifest.module: " + moduleFile + " does not exist");
        }
        if (Files.size(moduleFile) > limits.packageMaxBytes()) {
            throw tooLarge(Files.size(moduleFile), limits);
        }
        return new Package(manifest, Files.readAllBytes(moduleFile));
    }

    /**
     * Every check of a package that needs no database: the manifest, the module's size, the module against the
     * declared ABI version (exports and imports with their exact types, memory, tables), the budgets against
     * {@code limits}. The selector against its table is checked at deploy.
     */
    public static Checked check(byte[] manifestBytes, byte[] module, Limits limits) {
        Manifest m = Manifest.parse(manifestBytes);
        if (module.length > limits.packageMaxBytes()) {
            throw tooLarge(module.length, limits);
        }
        byte[] wasm = wasm(module);
        if (wasm.length > limits.packageMaxBytes()) {
            throw tooLarge(wasm.length, limits);
        }
        long memoryCap = m.budgets().memoryBytes() > 0 ? m.budgets().memoryBytes() : limits.guestMemoryMaxBytes();
        GuestModuleCheck.Problems problems = m.handler() ? GuestModuleCheck.checkHandler(wasm, memoryCap)
                : GuestModuleCheck.check(wasm, m.abiVersion(), memoryCap);
        if (!problems.all().isEmpty()) {
            throw new ThresherException(problems.exports().isEmpty() ? ErrorCode.GUEST_INVALID_MODULE : ErrorCode.GUEST_ABI_MISMATCH,
                    "module: " + String.join("; ", problems.all()));
        }
        checkBudgets(m.budgets(), wasm, limits);
        return new Checked(m, wasm);
    }

    /**
     * Deploys a manifest and its module (a wasm binary, or WebAssembly text compiled here).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} for the manifest,
     *     {@link ErrorCode#PAYLOAD_TOO_LARGE} past {@code limits.packageMaxBytes}, {@link ErrorCode#GUEST_ABI_MISMATCH}
     *     or {@link ErrorCode#GUEST_INVALID_MODULE} for the module, {@link ErrorCode#INVALID_SELECTOR} for the selector
     */
    @Override
    public Deployed deploy(String tenant, String deployedBy, byte[] manifestBytes, byte[] module) {
        Deadline deadline = deadline();
        try (DbDeadline scope = DbDeadline.enter(deadline)) {
            Checked checked = check(manifestBytes, module, limits);
            Manifest m = checked.manifest();
            byte[] wasm = checked.wasm();
            within(deadline, "checking the package");
            String selectorSql = m.handler() ? null : checkSelector(tenant, m.selector()).sql();
            within(deadline, "checking the selector against its table");
            String packageDigest = sha256(wasm);
            // the manifest's digest is taken by the catalog, of its canonical form
            BindingCatalog.Pins pins = new BindingCatalog.Pins(packageDigest, null, m.handler() ? null : m.abiVersion(),
                    selectorSql, m.budgets());
            return catalog().deploy(tenant, m.binding(), pins, wasm, new String(manifestBytes, StandardCharsets.UTF_8),
                    deployedBy);
        } catch (RuntimeException e) {
            throw timedOut(deadline, e, "deploy");
        }
    }

    /**
     * A new version of the binding pinning what version {@code to} pinned (package, manifest, selector); the current
     * version, unchanged, when it pins that already.
     *
     * @throws ThresherException {@link ErrorCode#UNKNOWN_BINDING} for an unknown binding or version
     */
    @Override
    public Deployed rollback(String tenant, String name, int to, String deployedBy) {
        Deadline deadline = deadline();
        try (DbDeadline scope = DbDeadline.enter(deadline)) {
            return catalog().rollback(tenant, name, to, deployedBy, target -> {
                if (target.selector() != null) { // an HTTP handler has none
                    checkSelector(tenant, target.selector());
                }
            });
        } catch (RuntimeException e) {
            throw timedOut(deadline, e, "rollback");
        }
    }

    /**
     * A deploy's or rollback's deadline, {@code limits.callDeadlineMs} from now, like a call's: every wait of it (the
     * control and shard databases' connections, sockets and statements, the selector's probe) ends by then.
     */
    private Deadline deadline() {
        return Deadline.after(java.time.Duration.ofMillis(limits.callDeadlineMs()));
    }

    /** Throws {@code DEADLINE_EXCEEDED} when {@code deadline} passed before the step after {@code step}. */
    private void within(Deadline deadline, String step) {
        if (deadline.passed()) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deploy: its deadline of " + limits.callDeadlineMs()
                    + " ms (limits.callDeadlineMs) passed while " + step + "; nothing was deployed");
        }
    }

    /**
     * {@code e}, or {@code DEADLINE_EXCEEDED} when it came of the deadline passing (a database wait it bounded): a
     * deploy or rollback whose commit may have been sent says so, and that the same one again is safe (identical
     * content deploys as unchanged).
     */
    private RuntimeException timedOut(Deadline deadline, RuntimeException e, String what) {
        boolean deadlineError = e instanceof ThresherException te && te.code() == ErrorCode.DEADLINE_EXCEEDED;
        if (deadlineError && String.valueOf(e.getMessage()).startsWith(what + ": ")) {
            return e; // this deploy's own (within)
        }
        if (!deadlineError && (!deadline.passed() || !causedByTimeout(e))) {
            return e;
        }
        return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, what + ": its deadline of " + limits.callDeadlineMs()
                + " ms (limits.callDeadlineMs) passed (" + e.getMessage() + "); whether it took effect shows in thresher"
                + " binding history (or GET /admin/bindings), and running the same " + what + " again is safe (identical"
                + " content leaves the binding unchanged)", e);
    }

    private static boolean causedByTimeout(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.sql.SQLTimeoutException
                    || t instanceof SQLException se && "57014".equals(se.getSQLState())) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /** The current version of every binding of a tenant, by name. */
    @Override
    public List<Version> list(String tenant) {
        return catalog().list(tenant);
    }

    /** Every version of a binding, oldest first. */
    @Override
    public List<Version> history(String tenant, String name) {
        return catalog().history(tenant, name);
    }

    /** The current version of a binding. */
    public Version show(String tenant, String name) {
        List<Version> all = history(tenant, name);
        return all.get(all.size() - 1);
    }

    /** The manifest a version was deployed with, as deployed; empty for versions from before manifests. */
    @Override
    public Optional<String> manifest(String manifestDigest) {
        return catalog().manifest(manifestDigest);
    }

    private BindingCatalog catalog() {
        return tables.control().bindings();
    }

    @Override
    public String execute(String tenant, String user, dev.thresher.bindings.BindingCommand command) {
        switch (command) {
            case dev.thresher.bindings.BindingCommand.Deploy d -> deploy(tenant, "pgwire:" + user, d.manifest(), d.module());
            case dev.thresher.bindings.BindingCommand.Rollback r -> rollback(tenant, r.binding(), r.version(), "pgwire:" + user);
        }
        return command.tag();
    }

    /**
     * The manifest's budgets against the node's limits, the module's size and its memory: each no larger than
     * its node limit; the module no larger than {@code moduleBytes}; with {@code memoryBytes}, the module's memory
     * must declare a maximum no larger (so the engine itself holds the bound).
     *
     * @throws ThresherException {@link ErrorCode#INVALID_CONFIGURATION} naming every problem by field path
     */
    private static void checkBudgets(Budgets budgets, byte[] wasm, Limits limits) {
        List<String> problems = new ArrayList<>();
        Map<String, Long> caps = Budgets.caps(limits);
        budgets.declared().forEach((name, value) -> {
            if (value > caps.get(name)) {
                problems.add("manifest.budgets." + name + ": at most " + caps.get(name) + " on this cluster (" + CAP_LIMITS.get(name)
                        + "), was " + value);
            }
        });
        if (budgets.moduleBytes() > 0 && wasm.length > budgets.moduleBytes()) {
            problems.add("manifest.budgets.moduleBytes: the module has " + wasm.length + " bytes, more than "
                    + budgets.moduleBytes());
        }
        if (budgets.memoryBytes() > 0) {
            long declared = GuestModuleCheck.declaredMemoryMaximumBytes(wasm);
            if (declared < 0) {
                problems.add("manifest.budgets.memoryBytes: the module's memory declares no maximum; declare one of at most "
                        + budgets.memoryBytes() / 65_536 + " pages (" + budgets.memoryBytes() + " bytes)");
            } else if (declared > budgets.memoryBytes()) {
                problems.add("manifest.budgets.memoryBytes: the module's memory may grow to " + declared + " bytes, more than "
                        + budgets.memoryBytes());
            }
        }
        if (!problems.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_CONFIGURATION, String.join("; ", problems));
        }
    }

    private static final Map<String, String> CAP_LIMITS = Map.of("runMs", "limits.maxCallDeadlineMs",
            "memoryBytes", "limits.guestMemoryMaxBytes", "inputBytes", "no node limit",
            "outputBytes", "limits.emitsPerInvocation × (limits.partialKeyMaxBytes + 8)",
            "emits", "limits.emitsPerInvocation", "moduleBytes", "limits.packageMaxBytes");

    /**
     * The selector, allowed and checked against its table: the table exists for the tenant, and on a shard
     * database holding it the SELECT with its filter plans (no row is read) and every column it selects has a
     * type a batch carries.
     */
    private Selector checkSelector(String tenant, String sql) {
        Selector selector = Selector.parse(sql);
        try {
            tables.key(tenant, selector.table());
        } catch (ThresherException e) {
            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "selector: table " + selector.table()
                    + " does not exist; create it first (thresher table create)");
        }
        List<Integer> shards = tables.shardsOf(tenant, selector.table());
        if (shards.isEmpty()) {
            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "selector: table " + selector.table() + " has no partitions");
        }
        String url = tables.shardUrls().get(shards.get(0));
        StringBuilder probe = new StringBuilder("SELECT ");
        for (int i = 0; i < selector.columns().size(); i++) {
            probe.append(i == 0 ? "" : ", ").append('"').append(selector.columns().get(i).replace("\"", "\"\"")).append('"');
        }
        probe.append(" FROM \"").append(selector.table().replace("\"", "\"\"")).append('"');
        selector.where().ifPresent(w -> probe.append(" WHERE (").append(w).append(')'));
        probe.append(" LIMIT 0");
        try (Connection c = tables.shardConnection(url)) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SET TRANSACTION READ ONLY");
                s.execute("SET LOCAL statement_timeout = 5000");
                try (ResultSet rs = s.executeQuery(probe.toString())) {
                    ResultSetMetaData md = rs.getMetaData();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        if (!BATCH_TYPES.contains(md.getColumnTypeName(i))) {
                            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "selector: column " + md.getColumnName(i)
                                    + " has type " + md.getColumnTypeName(i) + ", which a row batch cannot carry; the types are "
                                    + new java.util.TreeSet<>(BATCH_TYPES));
                        }
                    }
                }
            } finally {
                c.rollback();
            }
        } catch (SQLException e) {
            String message = e.getMessage() == null ? e.toString() : e.getMessage().lines().findFirst().orElse("");
            throw new ThresherException(ErrorCode.INVALID_SELECTOR, "selector: " + message.replaceFirst("^ERROR: ", ""), e);
        }
        return selector;
    }

    /** A wasm binary as it is, or WebAssembly text compiled to one. */
    private static byte[] wasm(byte[] module) {
        if (module.length >= 4 && module[0] == 0 && module[1] == 'a' && module[2] == 's' && module[3] == 'm') {
            return module;
        }
        String text = new String(module, StandardCharsets.UTF_8);
        try {
            return Wat2Wasm.parse(text);
        } catch (RuntimeException e) {
            String why = e.getMessage() == null ? e.toString() : e.getMessage().lines().findFirst().orElse(e.toString());
            throw new ThresherException(ErrorCode.GUEST_INVALID_MODULE, "module: neither a wasm binary (\\0asm) nor"
                    + " WebAssembly text that compiles: " + why);
        }
    }

    public static String sha256(byte[] bytes) {
        try {
            return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ThresherException tooLarge(long bytes, Limits limits) {
        return new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "module: " + bytes + " bytes; limits.packageMaxBytes is "
                + limits.packageMaxBytes());
    }
}
