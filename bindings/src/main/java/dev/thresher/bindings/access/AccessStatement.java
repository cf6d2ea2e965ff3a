package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;

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
 * Names are SQL identifiers: unquoted ones are folded to lower case, double-quoted ones kept as written. The front door
 * reads the statements (pgwire's {@code AccessGrammar}, over its one SQL lexer); the access service runs them.
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
}
