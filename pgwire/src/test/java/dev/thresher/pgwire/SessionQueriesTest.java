package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The SELECTs pgwire answers itself: matched strictly, answered from the session and the builtin types. */
class SessionQueriesTest {
    /** pgjdbc 42.7's TypeInfoCache lookups, as it sends them (Parse text, whitespace and all). */
    static final String PGJDBC_OID_BY_NAME = "SELECT pg_type.oid, typname   FROM pg_catalog.pg_type   LEFT   JOIN (select"
            + " ns.oid as nspoid, ns.nspname, r.r           from pg_namespace as ns           join ( select s.r,"
            + " (current_schemas(false))[s.r] as nspname                    from generate_series(1,"
            + " array_upper(current_schemas(false), 1)) as s(r) ) as r          using ( nspname )        ) as sp     ON"
            + " sp.nspoid = typnamespace  WHERE typname = $1  ORDER BY sp.r, pg_type.oid DESC LIMIT 1";
    static final String PGJDBC_KIND_BY_OID = "SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname,"
            + " pg_type.oid   FROM pg_catalog.pg_type   LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r          "
            + " from pg_namespace as ns           join ( select s.r, (current_schemas(false))[s.r] as nspname           "
            + "         from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r          using ("
            + " nspname )        ) as sp     ON sp.nspoid = typnamespace  WHERE pg_type.oid = $1  ORDER BY sp.r,"
            + " pg_type.oid DESC";
    static final String PGJDBC_NAME_BY_OID = "SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM"
            + " pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = $1";
    /** psql's \gdesc follow-up for a result of one json column named result. */
    static final String PSQL_GDESC = "SELECT name AS \"Column\", pg_catalog.format_type(tp, tpm) AS \"Type\"\n"
            + "FROM (VALUES ('result', '114'::pg_catalog.oid, -1)) s(name, tp, tpm)";

    private static final SessionQueries.Session SESSION = new SessionQueries.Session() {
        @Override
        public String user() {
            return "alice";
        }

        @Override
        public String database() {
            return "thresher";
        }

        @Override
        public int processId() {
            return 7;
        }

        @Override
        public String setting(String name) {
            if (name.equals("server_version_num")) {
                return "160000";
            }
            throw new ThresherException(ErrorCode.UNKNOWN_SETTING, "unrecognized configuration parameter \"" + name + "\"");
        }
    };

    private static SessionQueries.Query match(String sql) {
        return SessionQueries.match(sql, 0, sql.length()).orElseThrow(() -> new AssertionError("no match: " + sql));
    }

    private static List<List<String>> rows(String sql, String... parameters) {
        return match(sql).rows().of(SESSION, Arrays.asList(parameters));
    }

    private static List<String> names(SessionQueries.Query q) {
        return q.columns().stream().map(SessionQueries.Column::name).toList();
    }

    private static List<Integer> types(SessionQueries.Query q) {
        return q.columns().stream().map(SessionQueries.Column::typeOid).toList();
    }

    @Test
    void constantsAndSessionFunctionsWithPostgreSqlsColumnNamesAndTypes() {
        SessionQueries.Query one = match("SELECT 1");
        assertThat(names(one)).containsExactly("?column?");
        assertThat(types(one)).containsExactly(23);
        assertThat(one.parameterCount()).isZero();
        assertThat(rows("select 1")).containsExactly(List.of("1"));
        assertThat(types(match("SELECT 5000000000"))).containsExactly(20);

        String sql = "SELECT version(), pg_catalog.current_schema(), current_database() AS db, current_user, session_user \"Who\","
                + " current_setting('Server_Version_Num'), pg_backend_pid(), 'x' label, -3";
        SessionQueries.Query q = match(sql);
        assertThat(names(q)).containsExactly("version", "current_schema", "db", "current_user", "Who", "current_setting",
                "pg_backend_pid", "label", "?column?");
        assertThat(types(q)).containsExactly(25, 19, 19, 19, 19, 25, 23, 25, 23);
        assertThat(rows(sql)).containsExactly(List.of("PostgreSQL " + PgSession.SERVER_VERSION, "public", "thresher",
                "alice", "alice", "160000", "7", "x", "-3"));
        assertThat(rows("SELECT pg_advisory_unlock_all()")).containsExactly(List.of(""));
        assertThat(types(match("SELECT pg_advisory_unlock_all()"))).containsExactly(PgTypes.VOID_OID);
        assertThatThrownBy(() -> rows("SELECT current_setting('nope')")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_SETTING));
    }

    @Test
    void pgjdbcLooksUpATypeByNameBoundOrInlined() {
        SessionQueries.Query q = match(PGJDBC_OID_BY_NAME);
        assertThat(names(q)).containsExactly("oid", "typname");
        assertThat(types(q)).containsExactly(26, 19);
        assertThat(q.parameterTypes()).containsExactly(25);
        assertThat(q.rows().of(SESSION, List.of("jsonb"))).containsExactly(List.of("3802", "jsonb"));
        assertThat(q.rows().of(SESSION, List.of("hstore"))).isEmpty();
        // the simple query mode inlines the parameter
        String inlined = PGJDBC_OID_BY_NAME.replace("$1", "('jsonb')");
        assertThat(match(inlined).parameterCount()).isZero();
        assertThat(rows(inlined)).containsExactly(List.of("3802", "jsonb"));
    }

    @Test
    void pgjdbcLooksUpATypesKindAndNameByOid() {
        assertThat(names(match(PGJDBC_KIND_BY_OID))).containsExactly("is_array", "typtype", "typname", "oid");
        assertThat(match(PGJDBC_KIND_BY_OID).parameterTypes()).containsExactly(26);
        assertThat(rows(PGJDBC_KIND_BY_OID, "3802")).containsExactly(List.of("f", "b", "jsonb", "3802"));
        assertThat(rows(PGJDBC_KIND_BY_OID.replace("$1", "('2278'::int8)"))).containsExactly(List.of("f", "p", "void", "2278"));
        assertThat(rows(PGJDBC_KIND_BY_OID, "424242")).isEmpty();
        assertThatThrownBy(() -> rows(PGJDBC_KIND_BY_OID, "x")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        assertThat(rows(PGJDBC_NAME_BY_OID, "114")).containsExactly(List.of("t", "pg_catalog", "json"));
        assertThat(rows(PGJDBC_NAME_BY_OID.replace("$1", "('2278'::int4)"))).containsExactly(List.of("t", "pg_catalog", "void"));
    }

    @Test
    void psqlsDescribeOfAResult() {
        SessionQueries.Query q = match(PSQL_GDESC);
        assertThat(names(q)).containsExactly("Column", "Type");
        assertThat(types(q)).containsExactly(19, 25);
        assertThat(rows(PSQL_GDESC)).containsExactly(List.of("result", "json"));
        String two = "SELECT name AS \"Spalte\", pg_catalog.format_type(tp, tpm) AS \"Typ\" FROM (VALUES ('a', '23'::pg_catalog.oid,"
                + " -1), (E'b\\\\c', '424242'::pg_catalog.oid, 4)) s(name, tp, tpm)";
        assertThat(names(match(two))).containsExactly("Spalte", "Typ");
        assertThat(rows(two)).containsExactly(List.of("a", "integer"), List.of("b\\c", "???"));
        // an escape string is decoded as every grammar decodes it: octal, hex and Unicode escapes too
        assertThat(rows("SELECT E'\\101\\x42\\u00e9\\U0001F600\\n''' AS s")).containsExactly(List.of("AB\u00e9\uD83D\uDE00\n'"));
        assertThatThrownBy(() -> match("SELECT E'\\uZZZZ'")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.SYNTAX_ERROR));
    }

    @ParameterizedTest
    @ValueSource(strings = {"SELECT 2 + 2", "SELECT now()", "SELECT 1 FROM t", "SELECT version(1)", "SELECT current_user()",
        "SELECT current_setting($1)", "SELECT 1.5", "SELECT", "SELECT 1,", "SELECT 1 AS", "SELECT * FROM thresher.invocations",
        "SELECT pg_type.oid, typname FROM pg_catalog.pg_type WHERE typname = $1",
        "SELECT name AS \"Column\", pg_catalog.format_type(tp, tpm) AS \"Type\" FROM (VALUES ('a', $1, -1)) s(name, tp, tpm)",
        "SELECT 'unterminated"})
    void anythingElseIsNotMatched(String sql) {
        assertThat(SessionQueries.match(sql, 0, sql.length())).isEqualTo(Optional.empty());
    }

    @Test
    void binaryValuesAreTheTypesBinaryFormats() {
        assertThat(SessionQueries.encode(23, "1", (short) 1)).containsExactly(0, 0, 0, 1);
        assertThat(SessionQueries.encode(20, "-1", (short) 1)).containsExactly(-1, -1, -1, -1, -1, -1, -1, -1);
        assertThat(SessionQueries.encode(26, "4294967295", (short) 1)).containsExactly(-1, -1, -1, -1);
        assertThat(SessionQueries.encode(16, "t", (short) 1)).containsExactly(1);
        assertThat(SessionQueries.encode(18, "b", (short) 1)).containsExactly('b');
        assertThat(SessionQueries.encode(2278, "", (short) 1)).isEmpty();
        assertThat(SessionQueries.encode(19, "jsonb", (short) 1)).isEqualTo("jsonb".getBytes());
        assertThat(SessionQueries.encode(23, "1", (short) 0)).isEqualTo("1".getBytes());
        assertThat(SessionQueries.encode(23, null, (short) 1)).isNull();
    }
}
