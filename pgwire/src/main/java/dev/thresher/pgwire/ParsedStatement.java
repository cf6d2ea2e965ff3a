package dev.thresher.pgwire;

import dev.thresher.errors.ThresherException;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/** What {@link CallStatementParser} makes of one SQL string: the closed set of statements pgwire serves. */
sealed interface ParsedStatement {

    /** How many {@code $n} parameters the statement uses. */
    int parameterCount();

    /** Only whitespace, comments or semicolons: answered with {@code EmptyQueryResponse}. */
    record Empty() implements ParsedStatement {
        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /** {@code CALL BINDING name(argument)}. */
    record Call(String bindingName, Argument argument) implements ParsedStatement {
        public Call {
            Objects.requireNonNull(bindingName, "bindingName");
            Objects.requireNonNull(argument, "argument");
        }

        @Override
        public int parameterCount() {
            return argument instanceof Argument.Parameter p ? p.index() : 0;
        }
    }

    /**
     * {@code SET [SESSION | LOCAL] name = value} (or {@code TO}). The settings Thresher acts on (see
     * {@link SessionSettings}) are kept, per session or, with {@code LOCAL}, until the end of the transaction; any
     * other is accepted and ignored because drivers send {@code SET extra_float_digits = 3} and the like while
     * connecting. {@code SET SESSION CHARACTERISTICS AS TRANSACTION ...} is the setting
     * {@code session_characteristics}, accepted and ignored.
     *
     * @param value the value with quotes removed, or the raw text of an unquoted value
     * @param local {@code SET LOCAL}: lasts until the end of the transaction block
     */
    record Set(String name, String value, boolean local) implements ParsedStatement {
        public Set {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
        }

        /** A session {@code SET}. */
        public Set(String name, String value) {
            this(name, value, false);
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * {@code SHOW name}, answered with one row and one text column named after the parameter.
     *
     * @param name the parameter, lower-cased unless quoted; {@code SHOW TRANSACTION ISOLATION LEVEL} is
     *     {@code transaction_isolation}, {@code SHOW TIME ZONE} is {@code timezone}, {@code SHOW ALL} is {@code all}
     */
    record Show(String name) implements ParsedStatement {
        public Show {
            Objects.requireNonNull(name, "name");
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * {@code SHOW CALL 'id'}: the outcome of one of the tenant's calls, looked up by the id the caller was told
     * when the invocation was recorded, answered with one row.
     */
    record ShowCall(UUID callId) implements ParsedStatement {
        public ShowCall {
            Objects.requireNonNull(callId, "callId");
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * A query of a journal view: {@code SELECT ... FROM thresher.invocations} or {@code thresher.shard_runs}
     * ({@link JournalSqlParser}), and {@code SHOW CALLS}, the most recent calls. Answered with the view's rows from
     * the control database, scoped to the connection's tenant.
     */
    record Select(dev.thresher.bindings.JournalSelect select) implements ParsedStatement {
        public Select {
            Objects.requireNonNull(select, "select");
        }

        @Override
        public int parameterCount() {
            return select.parameterTypes().keySet().stream().mapToInt(Integer::intValue).max().orElse(0);
        }
    }

    /**
     * A transaction-control statement. Calls are not transactional: a block only tracks the status byte
     * of ReadyForQuery, as PostgreSQL reports it, so clients that wrap statements in BEGIN and COMMIT work.
     */
    record Transaction(Kind kind) implements ParsedStatement {
        /** {@code BEGIN} and {@code START TRANSACTION}; {@code COMMIT} and {@code END}; {@code ROLLBACK} and {@code ABORT}. */
        enum Kind { BEGIN, COMMIT, ROLLBACK }

        public Transaction {
            Objects.requireNonNull(kind, "kind");
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * A {@code SELECT} answered by pgwire itself from the session and a fixed catalog (a constant, {@code version()},
     * {@code current_setting('name')}, the type lookups drivers make): see {@link SessionQueries}.
     */
    record Answered(SessionQueries.Query query) implements ParsedStatement {
        public Answered {
            Objects.requireNonNull(query, "query");
        }

        @Override
        public int parameterCount() {
            return query.parameterCount();
        }
    }

    /**
     * A statement that resets session state, as pools and drivers send it when a connection is handed back:
     * {@code DISCARD ALL}, {@code RESET name}, {@code RESET ALL}, {@code DEALLOCATE [PREPARE] name | ALL},
     * {@code CLOSE ALL} and {@code UNLISTEN * | name} (there is no LISTEN).
     *
     * @param name the setting of {@code RESET} or the prepared statement of {@code DEALLOCATE}; empty for the others
     */
    record SessionCommand(Kind kind, String name) implements ParsedStatement {
        enum Kind {
            DISCARD_ALL("DISCARD ALL"), RESET("RESET"), RESET_ALL("RESET"), DEALLOCATE("DEALLOCATE"),
            DEALLOCATE_ALL("DEALLOCATE ALL"), CLOSE_ALL("CLOSE CURSOR ALL"), UNLISTEN("UNLISTEN");

            /** PostgreSQL's command tag. */
            final String tag;

            Kind(String tag) {
                this.tag = tag;
            }
        }

        public SessionCommand {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(name, "name");
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /** The single argument of a call. */
    sealed interface Argument {
        /** A string literal holding the JSON arguments, quotes removed and {@code ''} unescaped. */
        record Literal(String json) implements Argument {
            public Literal {
                Objects.requireNonNull(json, "json");
            }
        }

        /** A bind parameter {@code $index} (1-based); only {@code $1} exists today. */
        record Parameter(int index) implements Argument {
            public Parameter {
                if (index != 1) {
                    throw new IllegalArgumentException("only $1 is supported, was $" + index);
                }
            }
        }
    }

    /**
     * {@code COPY table [(columns)] FROM STDIN} with its options resolved to PostgreSQL's defaults.
     *
     * @param columns the columns named, in order; empty for all of the table's
     * @param csv CSV format (else PostgreSQL's text format)
     * @param header the first line names the columns and is skipped (CSV only)
     * @param delimiter the field separator: {@code ','} for CSV, tab for text unless given
     * @param nullString the text of a NULL: {@code ""} (unquoted) for CSV, {@code \N} for text unless given
     */
    record Copy(String table, List<String> columns, boolean csv, boolean header, char delimiter, String nullString)
            implements ParsedStatement {
        public Copy {
            Objects.requireNonNull(table, "table");
            columns = List.copyOf(columns);
            Objects.requireNonNull(nullString, "nullString");
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * {@code INSERT} read into the table service's command ({@link InsertGrammar}). A malformed one is refused when it
     * runs, after the session's permission is checked, as {@link TableStatement} is.
     *
     * @param command the command, its {@code $n} parameters unbound until {@link #bind}; null when {@code refusal}
     *     says why there is none
     * @param parameterCount the highest {@code $n} it names
     */
    record Insert(dev.thresher.bindings.InsertCommand command, ThresherException refusal, int parameterCount)
            implements ParsedStatement {
        static Insert of(String sql, int parameterCount) {
            try {
                return new Insert(InsertGrammar.parse(sql), null, parameterCount);
            } catch (ThresherException e) {
                return new Insert(null, e, parameterCount);
            }
        }

        /** This INSERT with its parameters' values ({@code null} for NULL) in their places; a refused one as it is. */
        Insert bind(List<String> values) {
            return command == null ? this : new Insert(command.bind(values), null, 0);
        }

        /** The command to run. @throws ThresherException why the statement is refused */
        dev.thresher.bindings.InsertCommand typed() {
            if (refusal != null) {
                throw refusal;
            }
            return command;
        }
    }

    /**
     * {@code CREATE TABLE}, {@code ALTER TABLE} or {@code DROP TABLE} read into the table service's command
     * ({@link DdlGrammar#table}). A malformed one is refused when it runs, after the session's permission is checked
     * and the statements before it in its query ran, as the table service refused it before it read commands.
     *
     * @param command the command, or null when {@code refusal} says why there is none
     */
    record TableStatement(dev.thresher.bindings.TableCommand command, ThresherException refusal)
            implements ParsedStatement {
        static TableStatement of(String sql) {
            try {
                return new TableStatement(DdlGrammar.table(sql), null);
            } catch (ThresherException e) {
                return new TableStatement(null, e);
            }
        }

        /**
         * The command.
         *
         * @throws ThresherException why the statement is none
         */
        dev.thresher.bindings.TableCommand typed() {
            if (command == null) {
                throw new ThresherException(refusal.code(), refusal.getMessage());
            }
            return command;
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * {@code CREATE BINDING} or {@code ALTER BINDING} read into the binding service's command
     * ({@link DdlGrammar#binding}); a malformed one is refused when it runs, as {@link TableStatement} is.
     *
     * @param command the command, or null when {@code refusal} says why there is none
     */
    record BindingStatement(dev.thresher.bindings.BindingCommand command, ThresherException refusal)
            implements ParsedStatement {
        static BindingStatement of(String sql) {
            try {
                return new BindingStatement(DdlGrammar.binding(sql), null);
            } catch (ThresherException e) {
                return new BindingStatement(null, e);
            }
        }

        /**
         * The command.
         *
         * @throws ThresherException why the statement is none
         */
        dev.thresher.bindings.BindingCommand typed() {
            if (command == null) {
                throw new ThresherException(refusal.code(), refusal.getMessage());
            }
            return command;
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }

    /**
     * {@code CREATE USER}, {@code ALTER USER}, {@code DROP USER}, {@code GRANT} or {@code REVOKE} read into the access
     * service's statement ({@link AccessGrammar}); a malformed one is refused when it runs, as {@link TableStatement}
     * is.
     *
     * @param statement the statement, or null when {@code refusal} says why there is none
     */
    record AccessStatement(dev.thresher.bindings.access.AccessStatement statement, ThresherException refusal)
            implements ParsedStatement {
        static AccessStatement of(String sql) {
            try {
                return new AccessStatement(AccessGrammar.parse(sql), null);
            } catch (ThresherException e) {
                return new AccessStatement(null, e);
            }
        }

        /**
         * The statement.
         *
         * @throws ThresherException why it is none
         */
        dev.thresher.bindings.access.AccessStatement typed() {
            if (statement == null) {
                throw new ThresherException(refusal.code(), refusal.getMessage());
            }
            return statement;
        }

        @Override
        public int parameterCount() {
            return 0;
        }
    }
}
