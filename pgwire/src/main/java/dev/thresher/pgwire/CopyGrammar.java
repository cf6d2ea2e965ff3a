package dev.thresher.pgwire;

import dev.thresher.errors.Quoted;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** {@code COPY ... FROM STDIN} and its options, from the word after {@code COPY} on; the grammar is {@link CallStatementParser}'s. */
final class CopyGrammar extends SqlScanner {
    CopyGrammar(String sql, int pos) {
        super(sql, pos);
    }

    /**
     * {@code COPY table [(column, ...)] FROM STDIN [[WITH] (option, ...) | legacy options]}; options
     * {@code FORMAT text|csv}, {@code HEADER [boolean]}, {@code DELIMITER 'c'}, {@code NULL 'string'},
     * {@code QUOTE '"'}, {@code ESCAPE '"'}, {@code ENCODING 'UTF8'}; legacy {@code CSV}, {@code HEADER},
     * {@code DELIMITER [AS] 'c'}, {@code NULL [AS] 'string'} (what psql's {@code \copy} sends).
     */
    ParsedStatement copy(int start) {
        skipTrivia();
        String table = qualifiedTable();
        skipTrivia();
        List<String> columns = columnList();
        fromStdin();
        CopyOptions o = new CopyOptions();
        skipTrivia();
        optionalWord("WITH");
        skipTrivia();
        if (!atEnd() && peek() == '(') {
            options(o);
        } else {
            legacyOptions(o);
        }
        return o.statement(table, columns);
    }

    /** {@code [(column, ...)]}: the columns the rows hold, in order; empty when not listed. */
    private List<String> columnList() {
        List<String> columns = new ArrayList<>();
        if (!atEnd() && peek() == '(') {
            pos++;
            do {
                skipTrivia();
                columns.add(identifier("a column name"));
                skipTrivia();
            } while (!atEnd() && peek() == ',' && ++pos > 0);
            expect(')');
        }
        return columns;
    }

    /** {@code FROM STDIN}: the one direction and source served; {@code TO}, a file and a program are refused. */
    private void fromStdin() {
        skipTrivia();
        int directionAt = pos;
        String direction = word();
        if (direction.equalsIgnoreCase("TO")) {
            throw unsupported(directionAt, "COPY ... TO is not served: read the shard databases with SQL, or call a binding");
        }
        if (!direction.equalsIgnoreCase("FROM")) {
            pos = directionAt;
            throw syntax("expected FROM STDIN, found " + describe(directionAt));
        }
        skipTrivia();
        int sourceAt = pos;
        String source = word();
        if (!source.equalsIgnoreCase("STDIN")) {
            throw unsupported(sourceAt, "COPY FROM a file or a program is not served: the server reads neither; send"
                    + " the rows with COPY ... FROM STDIN (psql: \\copy table FROM 'file')");
        }
    }

    /** {@code (option [value], ...)}, the form PostgreSQL documents. */
    private void options(CopyOptions o) {
        pos++;
        do {
            skipTrivia();
            int at = pos;
            String option = word().toUpperCase(Locale.ROOT);
            skipTrivia();
            switch (option) {
                case "FORMAT" -> o.format(word(), at);
                case "HEADER" -> o.header = atEnd() || peek() == ',' || peek() == ')' || booleanValue(word(), at);
                case "DELIMITER" -> o.delimiter = singleChar(stringValue(), "DELIMITER", at);
                case "NULL" -> o.nullString = stringValue();
                case "QUOTE", "ESCAPE" -> o.quoteOrEscape(option, stringValue(), at);
                case "ENCODING" -> o.encoding(stringValue(), at);
                default -> throw unsupported(at, "COPY option " + describe(at) + " is not served");
            }
            skipTrivia();
        } while (!atEnd() && peek() == ',' && ++pos > 0);
        expect(')');
    }

    /** The options before PostgreSQL 9.0, unparenthesized, to the statement's end (what psql's {@code \copy} sends). */
    private void legacyOptions(CopyOptions o) {
        while (true) {
            skipTrivia();
            int at = pos;
            String option = word().toUpperCase(Locale.ROOT);
            switch (option) {
                case "" -> {
                    return;
                }
                case "CSV" -> o.format("csv", at);
                case "BINARY" -> o.format("binary", at);
                case "HEADER" -> o.header = true;
                case "DELIMITER" -> {
                    optionalWord("AS");
                    skipTrivia();
                    o.delimiter = singleChar(stringValue(), "DELIMITER", at);
                }
                case "NULL" -> {
                    optionalWord("AS");
                    skipTrivia();
                    o.nullString = stringValue();
                }
                case "QUOTE", "ESCAPE" -> {
                    optionalWord("AS");
                    skipTrivia();
                    o.quoteOrEscape(option, stringValue(), at);
                }
                default -> throw unsupported(at, "COPY option " + describe(at) + " is not served");
            }
        }
    }

    /** The options of one COPY, with PostgreSQL's defaults per format. */
    final class CopyOptions {
        boolean csv;
        boolean header;
        Character delimiter;
        String nullString;

        void format(String name, int at) {
            switch (name.toLowerCase(Locale.ROOT)) {
                case "csv" -> csv = true;
                case "text" -> csv = false;
                case "binary" -> throw unsupported(at, "COPY in binary format is not served; use text or csv");
                default -> throw syntax("COPY format " + describe(at) + " is not recognized");
            }
        }

        void quoteOrEscape(String option, String value, int at) {
            if (!value.equals("\"")) {
                throw unsupported(at, "COPY " + option + " other than '\"' is not served");
            }
        }

        void encoding(String value, int at) {
            if (!value.replace("-", "").equalsIgnoreCase("UTF8")) {
                throw unsupported(at, "COPY ENCODING '" + Quoted.of(value) + "' is not served; data is UTF-8");
            }
        }

        ParsedStatement.Copy statement(String table, List<String> columns) {
            char d = delimiter != null ? delimiter : csv ? ',' : '\t';
            String n = nullString != null ? nullString : csv ? "" : "\\N";
            if (header && !csv) {
                throw unsupported(pos, "COPY HEADER is served with FORMAT csv only");
            }
            if (d == '\n' || d == '\r' || d == '\\' || (csv && d == '"')) {
                throw unsupported(pos, "COPY DELIMITER " + describeChar(d) + " is not allowed");
            }
            return new ParsedStatement.Copy(table, columns, csv, header, d, n);
        }
    }

    static String describeChar(char c) {
        return c < ' ' ? String.format("U+%04X", (int) c) : "'" + c + "'";
    }

    boolean booleanValue(String w, int at) {
        return switch (w.toLowerCase(Locale.ROOT)) {
            case "true", "on", "1", "yes" -> true;
            case "false", "off", "0", "no" -> false;
            case "match" -> throw unsupported(at, "COPY HEADER MATCH is not served; use HEADER true");
            default -> throw syntax("expected a boolean for HEADER, found " + describe(at));
        };
    }

    String stringValue() {
        if (atEnd() || peek() != '\'') {
            throw syntax("expected a quoted string, found " + describe(pos));
        }
        return quoted('\'');
    }

    char singleChar(String value, String option, int at) {
        if (value.length() != 1 || value.charAt(0) > 0x7f) { // one byte of UTF-8, as PostgreSQL requires
            throw unsupported(at, "COPY " + option + " must be a single one-byte character");
        }
        return value.charAt(0);
    }

    /** A table name, optionally qualified by the schema {@code public}. */
    String qualifiedTable() {
        String name = identifier("a table name");
        if (!atEnd() && peek() == '.') {
            if (!name.equals("public")) {
                throw syntax("tables live in the shard databases' public schema, not '" + Quoted.of(name) + "'");
            }
            pos++;
            name = identifier("a table name");
        }
        return name;
    }
}
