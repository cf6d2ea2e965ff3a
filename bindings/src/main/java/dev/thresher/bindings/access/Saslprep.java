package dev.thresher.bindings.access;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * SASLprep (RFC 4013, the stringprep profile of RFC 3454) as PostgreSQL's server and libpq apply it to a SCRAM
 * password, so that a verifier computed here matches the proof any libpq client sends:
 *
 * <ol>
 *   <li>a password of ASCII only is used as it is;
 *   <li>map: non-ASCII spaces (table C.1.2) become a space, characters commonly mapped to nothing (B.1) are removed;
 *   <li>normalize: NFKC;
 *   <li>prohibit: a character of tables C.1.2 to C.9, or one unassigned in Unicode 3.2 (A.1), makes the password
 *       one SASLprep refuses;
 *   <li>bidirectional text: with a character of D.1 (RandALCat), none of D.2 (LCat) may occur, and the first and last
 *       must be of D.1, or SASLprep refuses it.
 * </ol>
 *
 * <p>A password SASLprep refuses is used as it is, in UTF-8, as PostgreSQL and libpq do. The tables are RFC 3454's,
 * generated from the Unicode 3.2 database into {@code saslprep-tables.txt} by {@code scripts/saslprep-tables.py}.
 */
final class Saslprep {
    private static final Map<String, int[]> TABLES = load();
    private static final int[] A1 = TABLES.get("A.1");
    private static final int[] B1 = TABLES.get("B.1");
    private static final int[] C12 = TABLES.get("C.1.2");
    private static final int[] D1 = TABLES.get("D.1");
    private static final int[] D2 = TABLES.get("D.2");
    private static final List<int[]> PROHIBITED = List.of(C12, TABLES.get("C.2.1"), TABLES.get("C.2.2"),
            TABLES.get("C.3"), TABLES.get("C.4"), TABLES.get("C.5"), TABLES.get("C.6"), TABLES.get("C.7"),
            TABLES.get("C.8"), TABLES.get("C.9"), A1);

    private Saslprep() {
    }

    /** The bytes a SCRAM password is hashed as. */
    static byte[] prepare(String password) {
        boolean ascii = true;
        for (int i = 0; i < password.length() && ascii; i++) {
            ascii = password.charAt(i) < 0x80;
        }
        byte[] asIs = password.getBytes(StandardCharsets.UTF_8);
        if (ascii) {
            return asIs;
        }
        StringBuilder mapped = new StringBuilder(password.length());
        password.codePoints().forEach(cp -> {
            if (in(C12, cp)) {
                mapped.append(' ');
            } else if (!in(B1, cp)) {
                mapped.appendCodePoint(cp);
            }
        });
        String normalized = Normalizer.normalize(mapped, Normalizer.Form.NFKC);
        int[] cps = normalized.codePoints().toArray();
        boolean randAl = false;
        for (int cp : cps) {
            for (int[] table : PROHIBITED) {
                if (in(table, cp)) {
                    return asIs;
                }
            }
            randAl |= in(D1, cp);
        }
        if (randAl) {
            for (int cp : cps) {
                if (in(D2, cp)) {
                    return asIs;
                }
            }
            if (!in(D1, cps[0]) || !in(D1, cps[cps.length - 1])) {
                return asIs;
            }
        }
        return normalized.getBytes(StandardCharsets.UTF_8);
    }

    /** Whether {@code cp} is in a table of sorted, disjoint {first, last} pairs. */
    static boolean in(int[] ranges, int cp) {
        int lo = 0;
        int hi = ranges.length / 2 - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (cp < ranges[2 * mid]) {
                hi = mid - 1;
            } else if (cp > ranges[2 * mid + 1]) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }

    private static Map<String, int[]> load() {
        Map<String, List<int[]>> ranges = new HashMap<>();
        try (InputStream in = Saslprep.class.getResourceAsStream("saslprep-tables.txt")) {
            if (in == null) {
                throw new IllegalStateException("saslprep-tables.txt is missing from the classpath");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII));
            for (String line; (line = reader.readLine()) != null; ) {
                if (line.isBlank() || line.startsWith("#")) {
                    continue;
                }
                String[] parts = line.split("[ -]");
                ranges.computeIfAbsent(parts[0], t -> new ArrayList<>())
                        .add(new int[] {Integer.parseInt(parts[1], 16), Integer.parseInt(parts[2], 16)});
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, int[]> tables = new HashMap<>();
        ranges.forEach((name, list) -> {
            int[] flat = new int[list.size() * 2];
            for (int i = 0; i < list.size(); i++) {
                flat[2 * i] = list.get(i)[0];
                flat[2 * i + 1] = list.get(i)[1];
            }
            tables.put(name, flat);
        });
        for (String name : List.of("A.1", "B.1", "C.1.2", "C.2.1", "C.2.2", "C.3", "C.4", "C.5", "C.6", "C.7", "C.8",
                "C.9", "D.1", "D.2")) {
            if (!tables.containsKey(name)) {
                throw new IllegalStateException("saslprep-tables.txt has no table " + name);
            }
        }
        return tables;
    }
}
