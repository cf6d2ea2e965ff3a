package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** {@link JournalSqlParser}'s own lexer as it was before it read {@link SqlLexer}'s tokens: the oracle of {@link LexerEquivalenceTest}. */
final class OldJournalLexer {
    private final String sql;
    private final int to;
    private int pos;

    OldJournalLexer(String sql, int from, int to) {
        this.sql = sql;
        this.pos = from;
        this.to = to;
    }

    List<String> all() {
        List<String> out = new ArrayList<>();
        while (true) {
            skipTrivia();
            if (pos >= to) {
                // lookahead past the end stays END
                for (int i = 0; i < 4; i++) {
                    out.add("END::" + to);
                }
                return out;
            }
            out.add(token());
        }
    }

    private String token() {
        int at = pos;
        char c = sql.charAt(pos);
        if (isIdentifierStart(c)) {
            while (pos < to && isIdentifierPart(sql.charAt(pos))) {
                pos++;
            }
            String word = sql.substring(at, pos);
            if (pos < to && sql.charAt(pos) == '\'' && word.length() == 1 && "eEbBxXnNuU".indexOf(word.charAt(0)) >= 0) {
                throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "string constants with a prefix ("
                        + word + "'...') are not supported (position " + (at + 1) + "); write '...'");
            }
            if (pos < to && sql.charAt(pos) == '&' && word.equalsIgnoreCase("u")) {
                throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT,
                        "Unicode escapes (U&) are not supported (position " + (at + 1) + ")");
            }
            return tok("WORD", CallStatementParser.checkedName(word.toLowerCase(Locale.ROOT), "a name", at),
                    at);
        }
        if (c == '"') {
            String name = quoted('"');
            if (name.isEmpty()) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (at + 1)
                        + ": zero-length quoted identifier");
            }
            return tok("QUOTED", CallStatementParser.checkedName(name, "a name", at), at);
        }
        if (c == '\'') {
            return tok("STRING", quoted('\''), at);
        }
        if (c == '$') {
            if (pos + 1 < to && Character.isDigit(sql.charAt(pos + 1))) {
                pos++;
                int from = pos;
                while (pos < to && Character.isDigit(sql.charAt(pos))) {
                    pos++;
                }
                return tok("PARAM", sql.substring(from, pos), at);
            }
            return tok("STRING", dollarQuoted(), at);
        }
        if (Character.isDigit(c) || c == '.' && pos + 1 < to && Character.isDigit(sql.charAt(pos + 1))) {
            while (pos < to && Character.isDigit(sql.charAt(pos))) {
                pos++;
            }
            if (pos < to && sql.charAt(pos) == '.') {
                pos++;
                while (pos < to && Character.isDigit(sql.charAt(pos))) {
                    pos++;
                }
            }
            if (pos < to && (sql.charAt(pos) == 'e' || sql.charAt(pos) == 'E')) {
                int save = pos++;
                if (pos < to && (sql.charAt(pos) == '+' || sql.charAt(pos) == '-')) {
                    pos++;
                }
                if (pos < to && Character.isDigit(sql.charAt(pos))) {
                    while (pos < to && Character.isDigit(sql.charAt(pos))) {
                        pos++;
                    }
                } else {
                    pos = save;
                }
            }
            if (pos < to && isIdentifierStart(sql.charAt(pos))) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (at + 1)
                        + ": trailing junk after numeric literal");
            }
            return tok("NUMBER", sql.substring(at, pos), at);
        }
        for (String op : List.of("::", "<=", ">=", "<>", "!=", "||")) {
            if (sql.startsWith(op, pos) && pos + op.length() <= to) {
                pos += op.length();
                return tok("SYMBOL", op, at);
            }
        }
        pos++;
        return tok("SYMBOL", String.valueOf(c), at);
    }

    private String quoted(char quote) {
        int open = pos++;
        StringBuilder out = new StringBuilder();
        while (true) {
            int close = sql.indexOf(quote, pos);
            if (close < 0 || close >= to) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (open + 1) + ": "
                        + (quote == '"' ? "unterminated quoted identifier" : "unterminated quoted string"));
            }
            out.append(sql, pos, close);
            pos = close + 1;
            if (pos < to && sql.charAt(pos) == quote) {
                out.append(quote);
                pos++;
            } else {
                return out.toString();
            }
        }
    }

    private String dollarQuoted() {
        int open = pos;
        int tagEnd = pos + 1;
        while (tagEnd < to && (isIdentifierStart(sql.charAt(tagEnd)) || Character.isDigit(sql.charAt(tagEnd)))) {
            tagEnd++;
        }
        if (tagEnd >= to || sql.charAt(tagEnd) != '$') {
            throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (open + 1)
                    + ": unexpected '$'");
        }
        String delimiter = sql.substring(open, tagEnd + 1);
        int close = sql.indexOf(delimiter, tagEnd + 1);
        if (close < 0 || close >= to) {
            throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (open + 1)
                    + ": unterminated dollar-quoted string");
        }
        pos = close + delimiter.length();
        return sql.substring(tagEnd + 1, close);
    }

    private void skipTrivia() {
        while (pos < to) {
            char c = sql.charAt(pos);
            if (Character.isWhitespace(c)) {
                pos++;
            } else if (sql.startsWith("--", pos)) {
                int eol = sql.indexOf('\n', pos);
                pos = eol < 0 || eol >= to ? to : eol + 1;
            } else if (sql.startsWith("/*", pos)) {
                int open = pos;
                int depth = 0;
                do {
                    if (pos >= to) {
                        throw new ThresherException(ErrorCode.SYNTAX_ERROR, "syntax error at position " + (open + 1)
                                + ": unterminated /* comment");
                    }
                    if (sql.startsWith("/*", pos)) {
                        depth++;
                        pos += 2;
                    } else if (sql.startsWith("*/", pos)) {
                        depth--;
                        pos += 2;
                    } else {
                        pos++;
                    }
                } while (depth > 0);
            } else {
                return;
            }
        }
    }

    private static boolean isIdentifierStart(char c) {
        return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static boolean isIdentifierPart(char c) {
        return isIdentifierStart(c) || (c >= '0' && c <= '9') || c == '$';
    }

    private static String tok(String kind, String text, int at) {
        return kind + ":" + text + ":" + at;
    }
}
