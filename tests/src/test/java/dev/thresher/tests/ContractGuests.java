package dev.thresher.tests;

import com.dylibso.chicory.wabt.Wat2Wasm;
import dev.thresher.cellhost.Component;
import dev.thresher.store.control.ControlStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * The small guests the whole-system contract tests bind, in {@code src/test/resources/guests/}. Each
 * guest file holds only its constants, {@code run} and {@code reduce}; it is compiled as
 * {@code (module <prelude.wat> <NAME.wat>)}, the prelude bringing the imports, {@code memory},
 * {@code thresher_abi_version} (1) and the input and output helpers. Every guest reads its whole input
 * from fd 0 first and expects the batch of {@link #SELECTOR}.
 *
 * <pre>
 * guest          run                                          reduce
 * row_count      p&lt;partition&gt;/rows = row count               {"rows": sum of the values}
 * emit_65        p&lt;partition&gt;/k0..k64 = 1  (65 emits)          {"entries": number of partials}
 * nan_partial    p&lt;partition&gt;/x = NaN                         {"entries": number of partials}
 * constant_key   total = row count, from every partition      {"entries": number of partials}
 * spin           loops forever                                {}
 * spin_rows      loops forever if given a row, else no emits  {}
 * recurse        recurses until the stack runs out            {}
 * trap           unreachable                                  {}
 * reduce_trap    as row_count                                 unreachable
 * nul_key        emits to\0tal = rows (same key everywhere)     {"entries": n}
 * region_totals  p&lt;partition&gt;/&lt;L&gt;c = rows, /&lt;L&gt;s = sum of     every partial as it came, as an integer
 *                amount, per region length L (1..9)
 * </pre>
 */
public final class ContractGuests {
    /** The selector every guest is bound with: column 0 region TEXT NOT NULL, column 1 amount FLOAT64 NOT NULL. */
    public static final String SELECTOR = "SELECT region, amount FROM orders";

    /** The guest names, each a {@code guests/<name>.wat} resource. */
    public static final List<String> NAMES =
            List.of("row_count", "emit_65", "nan_partial", "constant_key", "spin", "spin_rows", "recurse", "trap", "reduce_trap",
                    "nul_key", "region_totals");

    private static final Map<String, byte[]> CACHE = new ConcurrentHashMap<>();

    private ContractGuests() {
    }

    /**
     * The compiled module of guest {@code name}: {@code guests/prelude.wat} and {@code guests/<name>.wat}
     * from the test classpath, compiled once with Wat2Wasm. Returns a fresh copy on each call.
     *
     * @throws IllegalArgumentException when there is no such guest
     */
    public static byte[] wasm(String name) {
        return CACHE.computeIfAbsent(name, n -> Wat2Wasm.parse(
                "(module\n" + resource("prelude") + "\n" + resource(n) + "\n)\n")).clone();
    }

    /**
     * Stores guest {@code guestName}'s package and makes it the current version of binding
     * {@code tenant/bindingName} with {@link #SELECTOR}; creates the tenant if absent. Idempotent.
     *
     * @return the component digest, {@code "sha256:..."}
     */
    public static String bind(DataSource controlDb, String tenant, String bindingName, String guestName) {
        byte[] wasm = wasm(guestName);
        String digest = Component.of(wasm).digest();
        ControlStore store = new ControlStore(controlDb);
        store.ensureTenant(tenant);   // bindings reference tenants
        store.putPackage(digest, wasm);
        store.putBinding(tenant, bindingName, digest, SELECTOR);
        return digest;
    }

    private static String resource(String name) {
        String path = "/guests/" + name + ".wat";
        try (InputStream in = ContractGuests.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalArgumentException("no guest " + name + " (" + path + " is not on the test classpath)");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
