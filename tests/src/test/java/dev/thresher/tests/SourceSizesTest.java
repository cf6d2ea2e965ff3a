package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Sizes that fit in a head: no main source file of any module is over {@value #MAX_FILE_LINES} lines, and no method or
 * constructor body (at any nesting level: nested, local and anonymous classes too) is over {@value #MAX_BODY_LINES}
 * lines unless a comment line containing "Long because" stands within the {@value #REASON_WINDOW} lines above its
 * declaration or on the first line of its body. A body's length is its lines from the opening brace to the closing
 * one. The sources are read by a small brace-counting scanner ({@link Scanner}) that skips string literals, text
 * blocks, char literals and comments.
 */
class SourceSizesTest {
    private static final Path ROOT = Path.of("..");
    static final int MAX_FILE_LINES = 600;
    static final int MAX_BODY_LINES = 80;
    static final int REASON_WINDOW = 5;
    static final String REASON = "Long because";

    @Test
    void noMainSourceFileOrMethodIsOverItsSize() throws IOException {
        List<String> offenders = new ArrayList<>();
        int files = 0;
        try (Stream<Path> modules = Files.list(ROOT)) {
            for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java"))).sorted().toList()) {
                try (Stream<Path> sources = Files.walk(module.resolve("src/main/java"))) {
                    for (Path f : sources.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                        Path relative = ROOT.relativize(f);
                        files++;
                        offenders.addAll(offenders(relative.toString(), Files.readString(f)));
                    }
                }
            }
        }
        assertThat(files).as("main source files found under %s", ROOT.toAbsolutePath().normalize()).isGreaterThan(100);
        assertThat(offenders).as("files over %d lines, and bodies over %d lines without a \"%s\" comment line within"
                + " the %d lines above the declaration or on the body's first line (split them into named steps, or"
                + " write why the long form is the clearest)", MAX_FILE_LINES, MAX_BODY_LINES, REASON, REASON_WINDOW)
                .isEmpty();
    }

    @Test
    void theScannerFlagsALongMethodAndALongFile() {
        String longMethod = "class A {\n    void small() {\n        int x = 1;\n    }\n\n    void big() {\n"
                + "        int y = 0;\n".repeat(90) + "    }\n}\n";
        assertThat(offenders("A.java", longMethod)).containsExactly("A.java:6: body of 92 lines");
        String longFile = "class B {\n" + "    int f;\n".repeat(600) + "}\n";
        assertThat(offenders("B.java", longFile)).containsExactly("B.java: 602 lines");
    }

    @Test
    void theScannerCountsNestedBodiesAndLeavesAReasonedOneAlone() {
        String body = "        step();\n".repeat(85);
        String nested = "class A {\n    static class Inner {\n        Runnable r = new Runnable() {\n"
                + "            @Override\n            public void run() {\n" + body + "            }\n        };\n"
                + "        Inner(int a,\n              int b) throws Exception {\n" + body + "        }\n    }\n"
                + "    record R(int a) {\n        R {\n" + body + "        }\n    }\n}\n";
        assertThat(offenders("A.java", nested)).containsExactly(
                "A.java:4: body of 87 lines", "A.java:93: body of 87 lines", "A.java:183: body of 87 lines");
        String reasoned = "class A {\n    /**\n     * Long because: one case per message type.\n     */\n"
                + "    @Override\n    public void run() {\n" + body + "    }\n\n    void other() {\n"
                + "        // Long because: a table of refusals.\n" + body + "    }\n}\n";
        assertThat(offenders("A.java", reasoned)).isEmpty();
        String tooFarAbove = "class A {\n    // Long because: six lines above.\n" + "    //\n".repeat(5) + "    void m() {\n"
                + body + "    }\n}\n";
        assertThat(offenders("A.java", tooFarAbove)).containsExactly("A.java:8: body of 87 lines");
    }

    @Test
    void theScannerSkipsBracesInLiteralsAndCommentsAndKnowsControlBlocks() {
        String body = "        step();\n".repeat(85);
        String tricky = "class A {\n    void m() {\n        String s = \"{ { }\";\n        char c = '{';\n"
                + "        char q = '\\'';\n        String t = \"\"\"\n            } \\\"\"\" {\n            \"\"\";\n"
                + "        // } {\n        /* { */\n        if (s.isEmpty()) {\n" + body + "        }\n"
                + "        for (int i = 0; i < 3; i++) {\n            run(() -> {\n" + body + "            });\n"
                + "        }\n    }\n\n    void handle(Record record) {\n        int[] a = {1, 2};\n    }\n}\n";
        assertThat(offenders("A.java", tricky)).containsExactly("A.java:2: body of 186 lines");
        String quoted = "class A {\n    String note = \"Long because\";\n    void m() {\n"
                + "        String s = \"Long because\";\n" + body + "    }\n}\n";
        assertThat(offenders("A.java", quoted)).containsExactly("A.java:3: body of 88 lines");
    }

    /** The offenders of one source file: the file if it is too long, then each too-long body without a reason. */
    static List<String> offenders(String path, String source) {
        List<String> found = new ArrayList<>();
        Scanner scanner = new Scanner(source);
        if (scanner.lineCount() > MAX_FILE_LINES) {
            found.add(path + ": " + scanner.lineCount() + " lines");
        }
        for (Body b : scanner.bodies()) {
            if (b.lines() > MAX_BODY_LINES && !scanner.reasoned(b)) {
                found.add(path + ":" + b.declarationLine() + ": body of " + b.lines() + " lines");
            }
        }
        return found;
    }

    /** A method or constructor body: the line its declaration starts on, and the lines of its braces. */
    record Body(int declarationLine, int openLine, int closeLine) {
        int lines() {
            return closeLine - openLine + 1;
        }
    }

    /**
     * A brace-counting reader of one Java source. First the literals and comments are blanked out (newlines kept), so
     * only code is left and every comment character is known; then every brace opens a block whose kind is read from
     * the code before it since the last statement end or brace at the same parenthesis depth: a type body (class,
     * interface, enum, record, anonymous class), a method or constructor body (a parameter list not after a control
     * keyword, or a record's compact constructor), or anything else (control blocks, lambdas, array initializers,
     * initializers).
     */
    static final class Scanner {
        private static final Pattern TYPE = Pattern.compile("(?<![.\\w])(class|interface|enum)\\b");
        private static final Pattern RECORD = Pattern.compile("(?<![.\\w])record\\s+[A-Za-z_$][\\w$]*\\s*[(<]");
        private static final Pattern NEW = Pattern.compile("(?<![.\\w])new\\b");
        private static final Pattern THROWS = Pattern.compile("\\bthrows\\b[\\w$.,\\s<>?\\[\\]]*$");
        private static final Pattern NAME_BEFORE = Pattern.compile("([A-Za-z_$][\\w$]*)\\s*$");
        private static final Set<String> CONTROL = Set.of("if", "for", "while", "switch", "catch", "synchronized",
                "try", "else", "do", "finally", "return", "yield", "throw", "new");
        private static final Pattern COMPACT = Pattern.compile(
                "^(?:@[\\w$.]+\\s*)*(?:(?:public|protected|private)\\s+)?[A-Za-z_$][\\w$]*$");

        private enum Kind { TYPE, ENUM, RECORD, METHOD, OTHER }

        private record Frame(Kind kind, int openLine, int declarationLine, int outerParens, int outerHeader,
                             boolean outerEnumConstants) {}

        private final String source;
        private final char[] code;
        private final boolean[] comment;
        private final int[] lineStarts;
        private final List<Body> bodies = new ArrayList<>();

        Scanner(String source) {
            this.source = source;
            this.code = source.toCharArray();
            this.comment = new boolean[code.length];
            blankLiteralsAndComments();
            this.lineStarts = lineStarts(source);
            readBlocks();
        }

        int lineCount() {
            return source.endsWith("\n") ? lineStarts.length - 1 : lineStarts.length;
        }

        List<Body> bodies() {
            return bodies;
        }

        /** Whether a comment line holding the reason stands in the window above the declaration or on the body's first line. */
        boolean reasoned(Body b) {
            for (int line = Math.max(1, b.declarationLine() - REASON_WINDOW); line < b.declarationLine(); line++) {
                if (reasonOn(line)) {
                    return true;
                }
            }
            return reasonOn(b.openLine()) || reasonOn(b.openLine() + 1);
        }

        private boolean reasonOn(int line) {
            if (line > lineStarts.length) {
                return false;
            }
            int start = lineStarts[line - 1];
            int end = line < lineStarts.length ? lineStarts[line] : source.length();
            for (int at = source.indexOf(REASON, start); at >= 0 && at < end; at = source.indexOf(REASON, at + 1)) {
                if (comment[at]) {
                    return true;
                }
            }
            return false;
        }

        private static int[] lineStarts(String s) {
            List<Integer> starts = new ArrayList<>(List.of(0));
            for (int i = 0; i < s.length(); i++) {
                if (s.charAt(i) == '\n') {
                    starts.add(i + 1);
                }
            }
            return starts.stream().mapToInt(Integer::intValue).toArray();
        }

        private int lineOf(int offset) {
            int lo = 0;
            int hi = lineStarts.length - 1;
            while (lo < hi) {
                int mid = (lo + hi + 1) >>> 1;
                if (lineStarts[mid] <= offset) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            return lo + 1;
        }

        /** Replaces every character of a string, text block, char literal or comment by a space (newlines kept). */
        private void blankLiteralsAndComments() {
            int i = 0;
            while (i < code.length) {
                char c = code[i];
                char next = i + 1 < code.length ? code[i + 1] : 0;
                if (c == '/' && next == '/') {
                    i = blank(i, endOfLine(i), true);
                } else if (c == '/' && next == '*') {
                    int end = source.indexOf("*/", i + 2);
                    i = blank(i, end < 0 ? code.length : end + 2, true);
                } else if (source.startsWith("\"\"\"", i)) {
                    i = blank(i, endOfQuoted(i + 3, "\"\"\""), false);
                } else if (c == '"') {
                    i = blank(i, endOfQuoted(i + 1, "\""), false);
                } else if (c == '\'') {
                    i = blank(i, endOfQuoted(i + 1, "'"), false);
                } else {
                    i++;
                }
            }
        }

        private int endOfLine(int from) {
            int end = source.indexOf('\n', from);
            return end < 0 ? code.length : end;
        }

        /** The offset just past the closing quote, escapes skipped. */
        private int endOfQuoted(int from, String quote) {
            int i = from;
            while (i < code.length) {
                if (code[i] == '\\') {
                    i += 2;
                } else if (source.startsWith(quote, i)) {
                    return i + quote.length();
                } else {
                    i++;
                }
            }
            return code.length;
        }

        private int blank(int from, int to, boolean isComment) {
            for (int i = from; i < to; i++) {
                if (code[i] != '\n') {
                    code[i] = ' ';
                }
                comment[i] = isComment;
            }
            return to;
        }

        /** Walks the braces, keeping per block the parenthesis depth and where the code before the next brace begins. */
        private void readBlocks() {
            Deque<Frame> open = new ArrayDeque<>();
            Kind enclosing = Kind.TYPE;
            int parens = 0;
            int header = 0;
            boolean enumConstants = false;
            for (int i = 0; i < code.length; i++) {
                switch (code[i]) {
                    case '(' -> parens++;
                    case ')' -> parens--;
                    case ';' -> {
                        if (parens == 0) {
                            header = i + 1;
                            enumConstants = false;
                        }
                    }
                    case '{' -> {
                        String text = new String(code, header, i - header);
                        Kind kind = enumConstants ? Kind.TYPE : kindOf(text.strip(), parens, enclosing);
                        open.push(new Frame(kind, lineOf(i), lineOf(header + leadingSpace(text)), parens, header,
                                enumConstants));
                        enclosing = kind;
                        enumConstants = kind == Kind.ENUM;
                        parens = 0;
                        header = i + 1;
                    }
                    case '}' -> {
                        if (open.isEmpty()) {
                            break;
                        }
                        Frame f = open.pop();
                        if (f.kind() == Kind.METHOD) {
                            bodies.add(new Body(f.declarationLine(), f.openLine(), lineOf(i)));
                        }
                        enclosing = open.isEmpty() ? Kind.TYPE : open.peek().kind();
                        parens = f.outerParens();
                        header = i + 1;
                        enumConstants = f.outerEnumConstants();
                    }
                    default -> { }
                }
            }
            bodies.sort((a, b) -> Integer.compare(a.openLine(), b.openLine()));
        }

        private static int leadingSpace(String text) {
            int n = 0;
            while (n < text.length() && Character.isWhitespace(text.charAt(n))) {
                n++;
            }
            return n;
        }

        /** The kind of block a brace opens, read from the code before it. */
        private static Kind kindOf(String text, int parens, Kind enclosing) {
            String top = outsideParens(text);
            if (text.endsWith("->")) {
                return Kind.OTHER;
            }
            if (NEW.matcher(text).find()) {
                return text.endsWith(")") ? Kind.TYPE : Kind.OTHER;
            }
            if (parens == 0) {
                Matcher type = TYPE.matcher(top);
                if (type.find()) {
                    return "enum".equals(type.group(1)) ? Kind.ENUM : Kind.TYPE;
                }
                if (RECORD.matcher(text).find()) {
                    return Kind.RECORD;
                }
                if (enclosing == Kind.RECORD && !top.strip().equals("static") && COMPACT.matcher(top.strip()).matches()) {
                    return Kind.METHOD;
                }
                String signature = THROWS.matcher(text).replaceFirst("").strip();
                if (isDeclarable(enclosing) && signature.endsWith(")") && !top.contains("=")) {
                    Matcher name = NAME_BEFORE.matcher(signature.substring(0, openParenOfLast(signature)));
                    if (name.find() && !CONTROL.contains(name.group(1))) {
                        return Kind.METHOD;
                    }
                }
            }
            return Kind.OTHER;
        }

        private static boolean isDeclarable(Kind enclosing) {
            return enclosing == Kind.TYPE || enclosing == Kind.ENUM || enclosing == Kind.RECORD;
        }

        /** The text with the contents of every parenthesis group left out. */
        private static String outsideParens(String text) {
            StringBuilder out = new StringBuilder();
            int depth = 0;
            for (char c : text.toCharArray()) {
                if (c == '(') {
                    depth++;
                } else if (c == ')') {
                    depth = Math.max(0, depth - 1);
                } else if (depth == 0) {
                    out.append(c);
                }
            }
            return out.toString();
        }

        /** The offset of the parenthesis that opens the group the text ends with. */
        private static int openParenOfLast(String text) {
            int depth = 0;
            for (int i = text.length() - 1; i >= 0; i--) {
                char c = text.charAt(i);
                if (c == ')') {
                    depth++;
                } else if (c == '(' && --depth == 0) {
                    return i;
                }
            }
            return 0;
        }
    }
}
