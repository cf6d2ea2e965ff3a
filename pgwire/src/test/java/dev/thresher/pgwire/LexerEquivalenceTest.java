package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The journal's SELECT and the session's queries are read over {@link SqlLexer}; before, each had a lexer of its own
 * ({@link OldJournalLexer}, {@link OldSessionLexer}, kept as the oracles). Every input below, the fuzz targets' seeds
 * and many variants of them, gives the same tokens, or the same refusal (code and message), both ways.
 */
class LexerEquivalenceTest {
    private static final String[] PIECES = {"'", "\"", "$", "$$", "$1", "$a$", "E'", "e'", "B'", "x'", "U&'", "u&", "--",
        "/*", "*/", "\n", "\t", "\u000b", "\u00a0", "\u2028", " ", "1", "1.5", ".5", "1e5", "1e", "1x", "::", "<>",
        "!=", "||", "<=", ">=", "é", "\u00c9", "\u0663", "_", "a", "Z", "(", ")", ",", ";", "\"\"", "''", "\\",
        "\ud83d\ude00", "select", "from", "where", "now()", "interval", "-", "+"};

    @Test
    void theJournalReadsTheSeedsAndTheirVariantsAsBefore() throws IOException {
        for (String sql : inputs()) {
            assertThat(journal(sql)).as(sql).isEqualTo(journalBefore(sql));
        }
    }

    @Test
    void theSessionQueriesReadTheSeedsAndTheirVariantsAsBefore() throws IOException {
        List<String> inputs = new ArrayList<>(inputs());
        inputs.addAll(List.of("select 1e'x'", "select 1e+5", "select 1abc, 1.5.6", "select $$x$$",
                "select $12345678", "select $\u0663", "select \u0663", "select a<>b, a||b", "select E'\\", "select $$open",
                "SELECT typinput='pg_catalog.array_in'::regproc as is_array"));
        int compared = 0;
        for (String sql : inputs) {
            // An escape string's value is decoded by EscapeString now, as every grammar decodes it (compared with its own
            // oracle below); the old session lexer decoded only \b \f \n \r \t.
            if (ESCAPE_STRING.matcher(sql).find()) {
                continue;
            }
            assertThat(session(sql)).as(sql).isEqualTo(sessionBefore(sql));
            compared++;
        }
        assertThat(compared).isGreaterThan(100);
        assertThat(session("SELECT E'a\\'b\\n\\x41'")).contains("STRING:a'b\nA");
    }

    /** Where an escape string may begin: an E before a quote, not inside a word. */
    private static final java.util.regex.Pattern ESCAPE_STRING = java.util.regex.Pattern.compile("(?<![\\p{L}\\p{N}_$])[eE]'");

    /**
     * The statement parser reads strings, quoted names, escape strings, dollar quotes and comments through
     * {@link SqlLexer} ({@link EscapeString}); before, it read them itself ({@link OldCallScanning}). At every place of
     * every input where one of them may start, both give the same value and end, or the same refusal.
     */
    @Test
    void theStatementParserScansStringsAndCommentsAsBefore() throws IOException {
        List<String> inputs = new ArrayList<>(inputs());
        inputs.addAll(List.of("E'\\u00e9\\U0001F600\\ud83d\\ude00'", "E'\\ud83d'", "E'\\u00'", "E'\\0'", "E'\\xff'",
                "E'\\303\\251 \\x41\\xg \\z'", "E'it''s \\'q\\''", "E'open\\", "$a$ x $a", "$1$", "$_$ $_$",
                "/* a /* b */", "-- only", "\f\u000b x"));
        int compared = 0;
        for (String sql : inputs) {
            if (sql.length() > 1_000) {
                continue; // every place of a long seed is read from there to its end: quadratic
            }
            for (int at = 0; at < sql.length(); at++) {
                char c = sql.charAt(at);
                int from = at;
                assertThat(call(sql, at, l -> Integer.toString(l.skipSpace())))
                        .as("space at %d of %s", at, sql).isEqualTo(callBefore(sql, at, o -> Integer.toString(o.skipSpace())));
                if (c == '\'' || c == '"') {
                    assertThat(call(sql, at, l -> l.readQuoted(c))).as("quoted at %d of %s", at, sql)
                            .isEqualTo(callBefore(sql, at, o -> o.readQuoted(c)));
                } else if (c == '$' && (at + 1 >= sql.length() || sql.charAt(at + 1) < '0' || sql.charAt(at + 1) > '9')) {
                    assertThat(call(sql, at, SqlLexer::readDollarQuoted)).as("dollar at %d of %s", at, sql)
                            .isEqualTo(callBefore(sql, at, OldCallScanning::readDollarQuoted));
                } else if ((c == 'E' || c == 'e') && at + 1 < sql.length() && sql.charAt(at + 1) == '\'') {
                    assertThat(call(sql, from + 1, SqlLexer::readEscapeString)).as("escape at %d of %s", at, sql)
                            .isEqualTo(callBefore(sql, from + 1, OldCallScanning::readEscapeString));
                }
                compared++;
            }
        }
        assertThat(compared).isGreaterThan(50_000);
    }

    private static String call(String sql, int at, java.util.function.Function<SqlLexer, String> read) {
        SqlLexer lexer = new SqlLexer(sql, at, sql.length(), SqlLexer.CALL);
        try {
            return read.apply(lexer) + " @" + lexer.position();
        } catch (SqlLexer.LexError e) {
            return e.code() + ": " + (e.code() == ErrorCode.SYNTAX_ERROR ? e.at() + ": " : "") + e.problem();
        }
    }

    private static String callBefore(String sql, int at, java.util.function.Function<OldCallScanning, String> read) {
        OldCallScanning old = new OldCallScanning(sql, at);
        try {
            return read.apply(old) + " @" + old.pos();
        } catch (ThresherException e) {
            return e.code() + ": " + e.getMessage();
        }
    }

    private static List<String> inputs() throws IOException {
        List<String> inputs = new ArrayList<>(List.of("", " ", "SELECT * FROM thresher.invocations",
                "select \"\" from x", "select E'a' from x", "select b'1'", "select U&'x'", "select 1e+5, 1e+x, 1e-",
                "select $", "select $tag$ x $tag$", "select $tag$ unterminated", "select 'open", "select \"open",
                "select /* open", "select /* a /* b */ c */ 1", "select 12abc", "select .5e3", "select $1::int",
                "select x" + "y".repeat(70), "select \"" + "q".repeat(70) + "\"", "select caf\u00e9",
                "select \u0663", "select\u000bx", "select\u2028x", "select\u00a0x", "select a||b", "select a | | b"));
        for (Path seed : seeds()) {
            inputs.add(new String(Files.readAllBytes(seed), StandardCharsets.UTF_8));
        }
        Random random = new Random(31);
        int base = inputs.size();
        for (int i = 0; i < 20_000; i++) {
            String s = inputs.get(random.nextInt(base));
            StringBuilder b = new StringBuilder(s);
            int edits = 1 + random.nextInt(4);
            for (int e = 0; e < edits; e++) {
                int at = b.isEmpty() ? 0 : random.nextInt(b.length() + 1);
                switch (random.nextInt(3)) {
                    case 0 -> b.insert(at, PIECES[random.nextInt(PIECES.length)]);
                    case 1 -> {
                        if (at < b.length()) {
                            b.deleteCharAt(at);
                        }
                    }
                    default -> b.setLength(Math.min(b.length(), at));
                }
            }
            inputs.add(b.toString());
        }
        return inputs;
    }

    private static List<Path> seeds() throws IOException {
        Path root = Path.of("src/test/resources/dev/thresher/pgwire");
        List<Path> out = new ArrayList<>();
        for (String dir : List.of("JournalSqlParserFuzzTestInputs", "CallStatementParserFuzzTestInputs")) {
            try (Stream<Path> files = Files.walk(root.resolve(dir))) {
                files.filter(Files::isRegularFile).sorted().forEach(out::add);
            }
        }
        assertThat(out).isNotEmpty();
        return out;
    }

    private static String journal(String sql) {
        try {
            return JournalSqlParser.tokens(sql, 0, sql.length()).stream()
                    .map(t -> t.kind() == JournalSqlParser.Kind.END ? "END::" + t.at() : t.kind() + ":" + t.text() + ":" + t.at())
                    .toList().toString();
        } catch (ThresherException e) {
            return e.code() + ": " + e.getMessage();
        }
    }

    private static String journalBefore(String sql) {
        try {
            return new OldJournalLexer(sql, 0, sql.length()).all().toString();
        } catch (ThresherException e) {
            return e.code() + ": " + e.getMessage();
        }
    }

    private static String session(String sql) {
        try {
            return SessionTokens.tokens(sql, 0, sql.length()).stream().map(t -> t.kind() + ":" + t.text()).toList().toString();
        } catch (SqlLexer.LexError | ThresherException e) {
            return "refused";
        }
    }

    private static String sessionBefore(String sql) {
        try {
            return new OldSessionLexer(sql, 0, sql.length()).all().toString();
        } catch (ThresherException e) {
            return "refused";
        }
    }
}
