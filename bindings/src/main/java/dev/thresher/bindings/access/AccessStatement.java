package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The statements that manage users and grants, over pgwire and from the command line:
 *
 * <pre>
 * CREATE USER name [WITH] [LOGIN] PASSWORD 'secret'      (also CREATE ROLE name [WITH] LOGIN PASSWORD ...)
 * ALTER USER name [WITH] PASSWORD 'secret'               (or a SCRAM-SHA-256 verifier, as psql's \password sends)
 * DROP USER [IF EXISTS] name
 * GRANT CALL ON BINDING name TO user  |  GRANT CALL ON ALL BINDINGS TO user  |  GRANT DEPLOY TO user  |  GRANT ADMIN TO user
 * REVOKE ... FROM user                                    (the same privileges)
 * </pre>
 *
 * Names are SQL identifiers: unquoted ones are folded to lower case, double-quoted ones kept as written; keywords
 * are matched without regard to case.
 */
public sealed interface AccessStatement {
    /** {@code CREATE USER}: a new user of the creator's tenant with no grants. */
    record CreateUser(String name, Password password) implements AccessStatement {}

    /** {@code ALTER USER ... PASSWORD}. */
    record AlterPassword(String name, Password password) implements AccessStatement {}

    /** {@code DROP USER}. */
    record DropUser(String name, boolean ifExists) implements AccessStatement {}

    /** {@code GRANT}. */
    record GrantTo(Grant grant, String user) implements AccessStatement {}

    /** {@code REVOKE}. */
    record RevokeFrom(Grant grant, String user) implements AccessStatement {}

    /**
     * A password as given: a SCRAM-SHA-256 verifier (what psql's {@code \password} sends, so the password itself never
     * crosses the wire) or the password in clear.
     */
    record Password(String text) {
        public Scram.Verifier verifier() {
            if (text.startsWith("SCRAM-SHA-256$")) {
                try {
                    return Scram.Verifier.parse(text);
                } catch (IllegalArgumentException e) {
                    throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, e.getMessage());
                }
            }
            if (text.length() < MIN_PASSWORD_LENGTH) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a password is at least " + MIN_PASSWORD_LENGTH
                        + " characters long");
            }
            return Scram.verifier(text);
        }

        @Override
        public String toString() {
            return "Password[(hidden)]";
        }
    }

    /** The shortest password accepted in clear. */
    int MIN_PASSWORD_LENGTH = 8;

    /** Whether {@code sql} starts like one of these statements (its first words), so it is parsed by {@link #parse}. */
    static boolean matches(String sql) {
        List<String> words = firstWords(sql, 2);
        if (words.isEmpty()) {
            return false;
        }
        String first = words.get(0);
        if (first.equals("grant") || first.equals("revoke")) {
            return true;
        }
        return words.size() == 2 && (first.equals("create") || first.equals("alter") || first.equals("drop"))
                && (words.get(1).equals("user") || words.get(1).equals("role"));
    }

    /**
     * Parses one statement (a trailing semicolon allowed).
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} when it is none of them
     */
    static AccessStatement parse(String sql) {
        return new Parser(tokens(sql)).statement();
    }

    private static List<String> firstWords(String sql, int n) {
        List<String> words = new ArrayList<>();
        int i = 0;
        while (words.size() < n) {
            while (i < sql.length() && Character.isWhitespace(sql.charAt(i))) {
                i++;
            }
            int start = i;
            while (i < sql.length() && Character.isLetter(sql.charAt(i))) {
                i++;
            }
            if (i == start) {
                break;
            }
            words.add(sql.substring(start, i).toLowerCase(Locale.ROOT));
        }
        return words;
    }

    /** A token: a keyword or unquoted name (lower-cased), a quoted name ({@code "x"}), a string ({@code 'x'}), ';'. */
    record Token(Kind kind, String text) {
        enum Kind { WORD, QUOTED_NAME, STRING, SEMICOLON }
    }

    private static List<Token> tokens(String sql) {
        List<Token> out = new ArrayList<>();
        int i = 0;
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (Character.isWhitespace(c)) {
                i++;
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                while (i < n && sql.charAt(i) != '\n') {
                    i++;
                }
            } else if (c == ';') {
                out.add(new Token(Token.Kind.SEMICOLON, ";"));
                i++;
            } else if (c == '\'' || c == '"') {
                StringBuilder s = new StringBuilder();
                int j = i + 1;
                while (true) {
                    if (j >= n) {
                        throw syntax(c == '\'' ? "unterminated quoted string" : "unterminated quoted identifier");
                    }
                    char d = sql.charAt(j);
                    if (d == c) {
                        if (j + 1 < n && sql.charAt(j + 1) == c) {
                            s.append(c);
                            j += 2;
                            continue;
                        }
                        break;
                    }
                    s.append(d);
                    j++;
                }
                out.add(new Token(c == '\'' ? Token.Kind.STRING : Token.Kind.QUOTED_NAME, s.toString()));
                i = j + 1;
            } else if (Character.isLetter(c) || c == '_') {
                int j = i;
                while (j < n && (Character.isLetterOrDigit(sql.charAt(j)) || sql.charAt(j) == '_' || sql.charAt(j) == '$'
                        || sql.charAt(j) == '-')) {
                    j++;
                }
                out.add(new Token(Token.Kind.WORD, sql.substring(i, j).toLowerCase(Locale.ROOT)));
                i = j;
            } else {
                throw syntax("syntax error at or near character " + (i + 1));
            }
        }
        return out;
    }

    private static ThresherException syntax(String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, message);
    }

    /** A recursive-descent parser over the tokens; one statement, nothing after it but one semicolon. */
    final class Parser {
        private final List<Token> tokens;
        private int at;

        Parser(List<Token> tokens) {
            this.tokens = tokens;
        }

        AccessStatement statement() {
            String first = word("GRANT, REVOKE, CREATE USER, ALTER USER or DROP USER");
            AccessStatement s = switch (first) {
                case "create" -> create();
                case "alter" -> alter();
                case "drop" -> drop();
                case "grant" -> {
                    Grant g = privilege();
                    expect("to");
                    yield new GrantTo(g, name("a user name"));
                }
                case "revoke" -> {
                    Grant g = privilege();
                    expect("from");
                    yield new RevokeFrom(g, name("a user name"));
                }
                default -> throw syntax("expected GRANT, REVOKE, CREATE USER, ALTER USER or DROP USER");
            };
            if (at < tokens.size() && tokens.get(at).kind() == Token.Kind.SEMICOLON) {
                at++;
            }
            if (at < tokens.size()) {
                throw syntax("unexpected input after the end of the statement");
            }
            return s;
        }

        private AccessStatement create() {
            boolean role = userOrRole();
            String name = name("a user name");
            boolean login = !role;
            Password password = null;
            optional("with");
            while (at < tokens.size() && tokens.get(at).kind() == Token.Kind.WORD) {
                String option = tokens.get(at++).text();
                switch (option) {
                    case "login" -> login = true;
                    case "password" -> password = password();
                    default -> throw syntax("CREATE USER takes LOGIN and PASSWORD only");
                }
            }
            if (!login) {
                throw syntax("CREATE ROLE makes users here: say LOGIN");
            }
            if (password == null) {
                throw syntax("CREATE USER needs PASSWORD '...'");
            }
            return new CreateUser(name, password);
        }

        private AccessStatement alter() {
            userOrRole();
            String name = name("a user name");
            optional("with");
            expect("password");
            return new AlterPassword(name, password());
        }

        private AccessStatement drop() {
            userOrRole();
            boolean ifExists = false;
            if (peek("if")) {
                at++;
                expect("exists");
                ifExists = true;
            }
            return new DropUser(name("a user name"), ifExists);
        }

        private boolean userOrRole() {
            String w = word("USER");
            if (!w.equals("user") && !w.equals("role")) {
                throw syntax("expected USER");
            }
            return w.equals("role");
        }

        private Password password() {
            if (at >= tokens.size() || tokens.get(at).kind() != Token.Kind.STRING) {
                throw syntax("PASSWORD takes a quoted string");
            }
            return new Password(tokens.get(at++).text());
        }

        private Grant privilege() {
            String p = word("CALL, DEPLOY or ADMIN");
            return switch (p) {
                case "call" -> {
                    expect("on");
                    if (peek("all")) {
                        at++;
                        expect("bindings");
                        yield Grant.callAll();
                    }
                    expect("binding");
                    yield Grant.call(Identifiers.bindingName(name("a binding name")));
                }
                case "deploy" -> Grant.of(Privilege.DEPLOY);
                case "admin" -> Grant.of(Privilege.ADMIN);
                default -> throw syntax("the privileges are CALL ON BINDING name, CALL ON ALL BINDINGS, DEPLOY and ADMIN");
            };
        }

        private String name(String what) {
            if (at >= tokens.size()) {
                throw syntax("expected " + what);
            }
            Token t = tokens.get(at);
            if (t.kind() != Token.Kind.WORD && t.kind() != Token.Kind.QUOTED_NAME) {
                throw syntax("expected " + what);
            }
            at++;
            return Identifiers.userName(t.text());
        }

        private String word(String expected) {
            if (at >= tokens.size() || tokens.get(at).kind() != Token.Kind.WORD) {
                throw syntax("expected " + expected);
            }
            return tokens.get(at++).text();
        }

        private boolean peek(String word) {
            return at < tokens.size() && tokens.get(at).kind() == Token.Kind.WORD && tokens.get(at).text().equals(word);
        }

        private void optional(String word) {
            if (peek(word)) {
                at++;
            }
        }

        private void expect(String word) {
            if (!peek(word)) {
                throw syntax("expected " + word.toUpperCase(Locale.ROOT));
            }
            at++;
        }
    }
}
