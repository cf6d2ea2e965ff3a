package dev.thresher.pgwire;

import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.AccessStatement.Password;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Identifiers;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.pgwire.SqlLexer.Kind;
import dev.thresher.pgwire.SqlLexer.Token;
import java.util.Locale;

/**
 * The statements that manage users and grants, over pgwire and from the command line ({@code thresher grant},
 * {@code thresher revoke}), read into {@link AccessStatement}s:
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
 * are matched without regard to case. Tokens are {@link SqlLexer}'s ({@link SqlLexer#ACCESS}: an unquoted name may
 * hold {@code -}, as before the statements were read here).
 */
public final class AccessGrammar {
    private final TokenCursor c;

    private AccessGrammar(TokenCursor c) {
        this.c = c;
    }

    /**
     * Parses one statement (a trailing semicolon allowed).
     *
     * @throws ThresherException {@link ErrorCode#SYNTAX_ERROR} when it is none of them
     */
    public static AccessStatement parse(String sql) {
        return new AccessGrammar(TokenCursor.of(sql, SqlLexer.ACCESS)).statement();
    }

    private AccessStatement statement() {
        String first = word("GRANT, REVOKE, CREATE USER, ALTER USER or DROP USER");
        AccessStatement s = switch (first) {
            case "create" -> create();
            case "alter" -> alter();
            case "drop" -> drop();
            case "grant" -> {
                Grant g = privilege();
                expect("to");
                yield new AccessStatement.GrantTo(g, name("a user name"));
            }
            case "revoke" -> {
                Grant g = privilege();
                expect("from");
                yield new AccessStatement.RevokeFrom(g, name("a user name"));
            }
            default -> throw syntax("expected GRANT, REVOKE, CREATE USER, ALTER USER or DROP USER");
        };
        c.acceptSymbol(";");
        if (!c.atEnd()) {
            throw syntax("unexpected input after the end of the statement");
        }
        return s;
    }

    private AccessStatement create() {
        boolean role = userOrRole();
        String name = name("a user name");
        boolean login = !role;
        Password password = null;
        c.accept("with");
        while (!c.atEnd() && c.peek().kind() == Kind.WORD) {
            String option = c.next().folded();
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
        return new AccessStatement.CreateUser(name, password);
    }

    private AccessStatement alter() {
        userOrRole();
        String name = name("a user name");
        c.accept("with");
        expect("password");
        return new AccessStatement.AlterPassword(name, password());
    }

    private AccessStatement drop() {
        userOrRole();
        boolean ifExists = false;
        if (c.accept("if")) {
            expect("exists");
            ifExists = true;
        }
        return new AccessStatement.DropUser(name("a user name"), ifExists);
    }

    private boolean userOrRole() {
        String w = word("USER");
        if (!w.equals("user") && !w.equals("role")) {
            throw syntax("expected USER");
        }
        return w.equals("role");
    }

    private Password password() {
        Token t = c.peek();
        if (t == null || t.kind() != Kind.STRING) {
            throw syntax("PASSWORD takes a quoted string");
        }
        c.next();
        return new Password(t.text());
    }

    private Grant privilege() {
        String p = word("CALL, DEPLOY or ADMIN");
        return switch (p) {
            case "call" -> {
                expect("on");
                if (c.accept("all")) {
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
        Token t = c.peek();
        if (t == null || t.kind() != Kind.WORD && t.kind() != Kind.QUOTED_NAME) {
            throw syntax("expected " + what);
        }
        c.next();
        return Identifiers.userName(t.folded());
    }

    /** The next word, folded to lower case. */
    private String word(String expected) {
        Token t = c.peek();
        if (t == null || t.kind() != Kind.WORD) {
            throw syntax("expected " + expected);
        }
        c.next();
        return t.folded();
    }

    private void expect(String word) {
        if (!c.accept(word)) {
            throw syntax("expected " + word.toUpperCase(Locale.ROOT));
        }
    }

    private static ThresherException syntax(String message) {
        return new ThresherException(ErrorCode.SYNTAX_ERROR, message);
    }
}
