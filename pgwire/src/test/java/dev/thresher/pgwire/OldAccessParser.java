package dev.thresher.pgwire;

import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.AccessStatement.AlterPassword;
import dev.thresher.bindings.access.AccessStatement.CreateUser;
import dev.thresher.bindings.access.AccessStatement.DropUser;
import dev.thresher.bindings.access.AccessStatement.GrantTo;
import dev.thresher.bindings.access.AccessStatement.Password;
import dev.thresher.bindings.access.AccessStatement.RevokeFrom;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Identifiers;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** {@code AccessStatement}'s own tokenizer and parser as they were before {@link AccessGrammar}: the oracle of {@link AccessGrammarTest}. */
final class OldAccessParser {
    private OldAccessParser() {
    }

    static AccessStatement parse(String sql) {
        return new Parser(tokens(sql)).statement();
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
    static final class Parser {
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
