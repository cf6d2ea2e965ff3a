package dev.thresher.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalScope;
import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalService;
import dev.thresher.bindings.JournalView;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.handler.codec.http.HttpMethod;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class JournalRoutesTest {
    private static final UUID ID = UUID.fromString("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f");
    private static final Instant AT = Instant.parse("2025-01-31T09:15:02.123456Z");

    /** Records the queries; answers {@code rows} rows of made-up values, and whether more exist. */
    private static final class Journal implements JournalService {
        final List<String> tenants = new ArrayList<>();
        final List<JournalSelect> selects = new ArrayList<>();
        int rows = 2;
        boolean more;

        @Override
        public JournalRows select(JournalScope scope, JournalSelect select) {
            assertThat(scope.bindings()).as("an admin route sees every binding of its tenant").isEmpty();
            tenants.add(scope.tenant());
            selects.add(select);
            List<List<Object>> out = new ArrayList<>();
            for (int r = 0; r < rows; r++) {
                List<Object> row = new ArrayList<>();
                for (JournalColumn c : select.resolvedColumns()) {
                    row.add(switch (c.type()) {
                        case UUID -> ID;
                        case INT4 -> r;
                        case INT8 -> 10L;
                        case TIMESTAMPTZ -> AT;
                        case TEXT -> c.name().startsWith("error") ? null : "t";
                        case JSON -> "{\"a\":[1]}";
                    });
                }
                out.add(row);
            }
            return new JournalRows(select.resolvedColumns(), out, more);
        }
    }

    private static Object get(Journal j, String uri) {
        return JournalRoutes.route(j, "acme", "acme", uri).get();
    }

    @Test
    void onlyTheOperatorReadsAnotherTenantsJournal() {
        Journal j = new Journal();
        // an admin of tenant acme on a node whose tenant (the operator's) is ops
        assertThatThrownBy(() -> JournalRoutes.route(j, "acme", "ops", "/admin/invocations?tenant=other").get())
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                    assertThat(e.getMessage()).contains("only its own tenant");
                });
        assertThatThrownBy(() -> JournalRoutes.route(j, "acme", "ops", "/admin/invocations/" + ID + "?tenant=ops").get())
                .isInstanceOfSatisfying(ThresherException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED));
        assertThat(j.tenants).isEmpty();
        JournalRoutes.route(j, "acme", "ops", "/admin/invocations?tenant=acme").get();
        JournalRoutes.route(j, "acme", "ops", "/admin/invocations").get();
        JournalRoutes.route(j, "ops", "ops", "/admin/invocations?tenant=acme").get();
        assertThat(j.tenants).containsExactly("acme", "acme", "acme");
    }

    @Test
    void theListFiltersNewestFirstAndHandsOutACursorWhenMoreExist() {
        Journal j = new Journal();
        j.more = true;
        ObjectNode out = (ObjectNode) get(j, "/admin/invocations?binding=rev&state=failed&since=2025-01-01T00:00:00Z"
                + "&until=2025-02-01%2000:00:00%2B00&limit=2&tenant=other");
        assertThat(j.tenants).containsExactly("other");
        JournalSelect s = j.selects.get(0);
        assertThat(s.view()).isEqualTo(JournalView.INVOCATIONS);
        assertThat(s.columns()).doesNotContain("result").contains("call_id", "created_at", "error_name");
        assertThat(s.limit()).hasValue(2);
        assertThat(s.orderBy()).containsExactly(new JournalSelect.Order("created_at", true),
                new JournalSelect.Order("call_id", true));
        assertThat(s.where().orElseThrow().toString()).contains("column=binding, op=EQ, value=Text[value=rev]",
                "column=state, op=EQ, value=Text[value=failed]", "column=created_at, op=GE, value=Timestamp[value=2025-01-01T00:00:00Z]",
                "column=created_at, op=LT, value=Timestamp[value=2025-02-01T00:00:00Z]");
        assertThat(out.get("tenant").asText()).isEqualTo("other");
        assertThat(out.get("invocations")).hasSize(2);
        assertThat(out.get("invocations").get(1).get("call_id").asText()).isEqualTo(ID.toString());
        assertThat(out.get("invocations").get(1).get("attempts").asInt()).isEqualTo(1);
        assertThat(out.get("invocations").get(1).get("created_at").asText()).isEqualTo("2025-01-31T09:15:02.123456Z");
        assertThat(out.get("invocations").get(1).get("error_name").isNull()).isTrue();
        String next = out.get("next").asText();
        assertThat(next).isEqualTo(JournalRoutes.cursor(AT, ID));

        // the next page: the calls older than the cursor's, in the same order
        get(j, "/admin/invocations?after=" + next);
        assertThat(j.tenants).containsExactly("other", "acme");
        assertThat(j.selects.get(1).where()).contains(new JournalSelect.Or(
                new JournalSelect.Compare("created_at", JournalSelect.Op.LT, new JournalSelect.Timestamp(AT)),
                new JournalSelect.And(new JournalSelect.Compare("created_at", JournalSelect.Op.EQ, new JournalSelect.Timestamp(AT)),
                        new JournalSelect.Compare("call_id", JournalSelect.Op.LT, new JournalSelect.Text(ID.toString())))));
        assertThat(j.selects.get(1).limit()).hasValue(JournalRoutes.DEFAULT_LIMIT);

        j.more = false;
        assertThat(((ObjectNode) get(j, "/admin/invocations?limit=5000")).get("next").isNull()).isTrue();
        assertThat(j.selects.get(2).limit()).hasValue(JournalSelect.MAX_ROWS);
    }

    @Test
    void badParametersAreInvalidArguments() {
        Journal j = new Journal();
        for (String q : List.of("state=lost", "limit=0", "limit=ten", "since=yesterday", "until=2025-13-01", "after=bogus",
                "after=" + java.util.Base64.getUrlEncoder().encodeToString("12:not-a-uuid".getBytes()), "colour=red",
                "state=failed&state=running", "binding=", "tenant=%zz")) {
            assertThatThrownBy(() -> get(j, "/admin/invocations?" + q)).as(q).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        }
        for (String path : List.of("/admin/invocations/0f8e6d2c-1b7a-4c3%-9d5f-2a4b6c8d0e1f", "/admin/invocations/%zz",
                "/admin/invocations/%", "/admin/invocations/%C3%28")) {
            assertThatThrownBy(() -> get(j, path)).as(path).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        }
        assertThat(j.selects).isEmpty();
        assertThat(HttpStatuses.of(ErrorCode.INVALID_ARGUMENTS).code()).isEqualTo(400);
        assertThat(HttpStatuses.of(ErrorCode.UNKNOWN_COLUMN).code()).isEqualTo(400);
    }

    @Test
    void oneCallIsItsInvocationAndItsSlotsInSlotOrder() {
        Journal j = new Journal();
        j.rows = 1;
        ObjectNode out = (ObjectNode) get(j, "/admin/invocations/" + ID.toString().toUpperCase());
        assertThat(j.selects).hasSize(2);
        assertThat(j.selects.get(0).where()).contains(new JournalSelect.Compare("call_id", JournalSelect.Op.EQ,
                new JournalSelect.Text(ID.toString())));
        assertThat(j.selects.get(1).view()).isEqualTo(JournalView.SHARD_RUNS);
        assertThat(j.selects.get(1).orderBy()).containsExactly(new JournalSelect.Order("run_index", false));
        assertThat(out.get("invocation").get("result").get("a").get(0).asInt()).isEqualTo(1);
        assertThat(out.get("shard_runs")).hasSize(1);
        assertThat(out.get("shard_runs").get(0).get("epoch").asLong()).isEqualTo(10L);

        j.rows = 0;
        assertThatThrownBy(() -> get(j, "/admin/invocations/" + ID)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.UNKNOWN_CALL));
        assertThat(HttpStatuses.of(ErrorCode.UNKNOWN_CALL).code()).isEqualTo(404);
        assertThatThrownBy(() -> get(j, "/admin/invocations/42")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        assertThatThrownBy(() -> get(j, "/admin/invocations/" + ID + "?limit=3")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS));
        RouteTable<Exchange.Route> routes = new RouteTable<>();
        JournalRoutes.register(routes, j, new AdminWork(Runnable::run), "acme");
        assertThat(routes.lookup(HttpMethod.GET, "/admin/invocations")).isInstanceOf(RouteTable.Lookup.Found.class);
        assertThat(routes.lookup(HttpMethod.GET, "/admin/invocations/")).isInstanceOf(RouteTable.Lookup.Found.class);
        assertThat(routes.lookup(HttpMethod.GET, "/admin/invocations/" + ID)).isInstanceOf(RouteTable.Lookup.Found.class);
        assertThat(routes.lookup(HttpMethod.GET, "/admin/invocations/" + ID + "/slots"))
                .isInstanceOf(RouteTable.Lookup.NotFound.class);
        assertThat(routes.lookup(HttpMethod.GET, "/admin/invocations//")).isInstanceOf(RouteTable.Lookup.NotFound.class);
        assertThat(routes.lookup(HttpMethod.POST, "/admin/invocations/" + ID))
                .isEqualTo(new RouteTable.Lookup.WrongMethod<>(java.util.List.of(HttpMethod.GET)));
        RouteTable<Exchange.Route> none = new RouteTable<>();
        JournalRoutes.register(none, null, new AdminWork(Runnable::run), "acme");
        assertThat(none.lookup(HttpMethod.GET, "/admin/invocations")).as("no journal: no route")
                .isInstanceOf(RouteTable.Lookup.NotFound.class);
    }
}
