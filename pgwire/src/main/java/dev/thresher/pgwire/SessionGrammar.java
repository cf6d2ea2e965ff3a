package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import java.util.Locale;

/**
 * The session's statements, from the word after the keyword on: {@code SET}, {@code RESET}, {@code DEALLOCATE},
 * {@code SHOW} (and {@code SHOW CALL 'id'}, {@code SHOW CALLS}), the modes of {@code BEGIN}, and the end of
 * {@code COMMIT} and {@code ROLLBACK}; the grammar is {@link CallStatementParser}'s.
 */
final class SessionGrammar extends SqlScanner {
    private static final java.util.regex.Pattern UUID_TEXT = java.util.regex.Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final java.util.Set<String> TRANSACTION_MODE_WORDS = java.util.Set.of("ISOLATION", "LEVEL",
            "SERIALIZABLE", "REPEATABLE", "READ", "COMMITTED", "UNCOMMITTED", "WRITE", "ONLY", "NOT", "DEFERRABLE");

    SessionGrammar(String sql, int pos) {
        super(sql, pos);
    }

    ParsedStatement set() {
        skipTrivia();
        String name = identifier("a parameter name");
        boolean local = false;
        if (name.equals("session") || name.equals("local")) {
            int save = pos;
            skipTrivia();
            if (startsIdentifier() || (!atEnd() && peek() == '"')) {
                local = name.equals("local");
                boolean session = name.equals("session");
                name = identifier("a parameter name");
                if (session && name.equals("characteristics")) {
                    requireWords("AS", "TRANSACTION");
                    skipTrivia();
                    int modesAt = pos;
                    transactionModes();
                    return new ParsedStatement.Set("session_characteristics", sql.substring(modesAt, pos).strip());
                }
            } else {
                pos = save;
            }
        }
        while (!atEnd() && peek() == '.') {
            pos++;
            name = name + "." + identifier("a parameter name");
        }
        skipTrivia();
        if (!atEnd() && peek() == '=') {
            pos++;
        } else {
            int save = pos;
            if (!word().equalsIgnoreCase("TO")) {
                pos = save;
            }
        }
        skipTrivia();
        if (!atEnd() && peek() == '\'') {
            return new ParsedStatement.Set(name, quoted('\''), local);
        }
        int valueStart = pos;
        while (!atEnd() && peek() != ';') {
            pos++;
        }
        String value = sql.substring(valueStart, pos).strip();
        if (value.isEmpty()) {
            throw syntax("SET " + name + " needs a value");
        }
        return new ParsedStatement.Set(name, value, local);
    }

    /** {@code RESET ALL} or {@code RESET name}. */
    ParsedStatement reset() {
        skipTrivia();
        String name = identifier("a parameter name or ALL");
        if (name.equals("all")) {
            return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.RESET_ALL, "");
        }
        if (name.equals("time")) {
            requireWords("ZONE");
            name = "timezone";
        }
        while (!atEnd() && peek() == '.') {
            pos++;
            name = name + "." + identifier("a parameter name");
        }
        return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.RESET, name);
    }

    /** {@code DEALLOCATE [PREPARE] name} or {@code DEALLOCATE [PREPARE] ALL}. */
    ParsedStatement deallocate() {
        skipTrivia();
        int at = pos;
        if (!word().equalsIgnoreCase("PREPARE")) {
            pos = at;
        }
        skipTrivia();
        at = pos;
        if (word().equalsIgnoreCase("ALL")) {
            return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.DEALLOCATE_ALL, "");
        }
        pos = at;
        return new ParsedStatement.SessionCommand(ParsedStatement.SessionCommand.Kind.DEALLOCATE,
                identifier("a prepared statement name or ALL"));
    }

    ParsedStatement show() {
        skipTrivia();
        String name = identifier("a parameter name");
        if (name.equals("transaction")) {
            requireWords("ISOLATION", "LEVEL");
            return new ParsedStatement.Show("transaction_isolation");
        }
        if (name.equals("time")) {
            requireWords("ZONE");
            return new ParsedStatement.Show("timezone");
        }
        if (name.equals("calls")) {
            int save = pos;
            skipTrivia();
            if (atEnd() || peek() == ';') {
                return new ParsedStatement.Select(JournalSqlParser.showCalls());
            }
            pos = save;
        }
        if (name.equals("call")) {
            int save = pos;
            skipTrivia();
            if (!atEnd() && peek() == '\'') {
                return showCall();
            }
            pos = save; // SHOW call: a parameter of that name (there is none)
        }
        while (!atEnd() && peek() == '.') {
            pos++;
            name = name + "." + identifier("a parameter name");
        }
        return new ParsedStatement.Show(name);
    }

    /** {@code SHOW CALL 'id'} from the quote on: the id must be a UUID in its canonical text form. */
    ParsedStatement showCall() {
        int at = pos;
        String id = quoted('\'');
        if (!UUID_TEXT.matcher(id).matches()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "invalid call id at position " + (at + 1)
                    + ": '" + Quoted.of(id)
                    + "' is not a UUID (SHOW CALL takes the id a CALL BINDING was told, e.g. '0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f')");
        }
        return new ParsedStatement.ShowCall(java.util.UUID.fromString(id));
    }

    /** The transaction modes after BEGIN or START TRANSACTION: checked, then ignored. */
    ParsedStatement begin() {
        transactionModes();
        return new ParsedStatement.Transaction(ParsedStatement.Transaction.Kind.BEGIN);
    }

    /** Transaction modes to the end of the statement, checked. */
    void transactionModes() {
        while (true) {
            skipTrivia();
            if (atEnd() || peek() == ';') {
                return;
            }
            if (peek() == ',') {
                pos++;
                continue;
            }
            int at = pos;
            if (!TRANSACTION_MODE_WORDS.contains(word().toUpperCase(Locale.ROOT))) {
                pos = at;
                throw syntax("expected a transaction mode, found " + describe(at));
            }
        }
    }

    ParsedStatement endBlock(ParsedStatement.Transaction.Kind kind) {
        int at = pos;
        optionalWord("WORK", "TRANSACTION");
        skipTrivia();
        int andAt = pos;
        if (word().equalsIgnoreCase("AND")) {
            skipTrivia();
            int noAt = pos;
            if (!word().equalsIgnoreCase("NO")) {
                throw unsupported(andAt, "AND CHAIN is not supported");
            }
            pos = noAt;
            requireWords("NO", "CHAIN");
        } else {
            pos = andAt;
        }
        skipTrivia();
        if (!atEnd() && peek() != ';' && kind == ParsedStatement.Transaction.Kind.ROLLBACK) {
            throw unsupported(at, "savepoints are not supported");
        }
        return new ParsedStatement.Transaction(kind);
    }
}
