package dev.thresher.bindings;

import static dev.thresher.bindings.JournalType.INT4;
import static dev.thresher.bindings.JournalType.INT8;
import static dev.thresher.bindings.JournalType.JSON;
import static dev.thresher.bindings.JournalType.TEXT;
import static dev.thresher.bindings.JournalType.TIMESTAMPTZ;
import static dev.thresher.bindings.JournalType.UUID;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The read-only views of the coordination journal an operator queries: {@code thresher.invocations} (one row per
 * call) and {@code thresher.shard_runs} (one row per shard run a leader journaled: its outcome, and its
 * publication when it was published). The same columns, with the same names and types, over pgwire
 * ({@code SELECT}), HTTP ({@code /admin/invocations}) and the command line ({@code thresher journal}); every query is
 * scoped to one tenant. Rows live as long as the coordination state they come from
 * ({@code limits.coordinationRetentionMs}).
 *
 * <p>A view or column renamed keeps its former name as another name of the same thing, so a saved query goes on
 * working: {@code thresher.shard_slots} is {@code thresher.shard_runs}, and its {@code slot_index} is
 * {@code run_index}, answered under the name the query used (docs/operations.md, "Renamed").
 */
public enum JournalView {
    INVOCATIONS("invocations", List.of(
            new JournalColumn("call_id", UUID, "the call's id (the one its caller was told)"),
            new JournalColumn("binding", TEXT, "the binding called"),
            new JournalColumn("binding_version", INT4, "the binding version the call pinned"),
            new JournalColumn("component_digest", TEXT, "the component the version pins (sha256:...)"),
            new JournalColumn("principal", TEXT, "who called (the pgwire user, or http)"),
            new JournalColumn("state", TEXT, "running, succeeded or failed"),
            new JournalColumn("error_code", INT4, "a failed call's Thresher code, else NULL"),
            new JournalColumn("error_name", TEXT, "that code's name (GUEST_TRAP, ...)"),
            new JournalColumn("error_category", TEXT, "that code's category (GUEST_FAILURE, ...)"),
            new JournalColumn("retry_class", TEXT, "that code's retry class (TERMINAL, RETRYABLE, AMBIGUOUS)"),
            new JournalColumn("error_message", TEXT, "a failed call's message, else NULL"),
            new JournalColumn("attempts", INT4, "slot runs the coordinator sent, retries included"),
            new JournalColumn("slot_count", INT4, "the slots (partitions) the call covers"),
            new JournalColumn("slots_published", INT8, "the slots published so far"),
            new JournalColumn("coordinator_host", TEXT, "the node that coordinated the call"),
            new JournalColumn("published_by", TEXT, "the node that published the result, else NULL"),
            new JournalColumn("created_at", TIMESTAMPTZ, "when the invocation was recorded"),
            new JournalColumn("deadline_at", TIMESTAMPTZ, "the call's deadline, on the control database's clock"),
            new JournalColumn("finished_at", TIMESTAMPTZ, "when it succeeded or failed, NULL while running"),
            new JournalColumn("deadline_ms", INT8, "the deadline the call asked for, in milliseconds"),
            new JournalColumn("duration_ms", INT8, "finished_at - created_at in milliseconds, NULL while running"),
            new JournalColumn("reduce_host", TEXT, "the node whose reduce was journaled, else NULL"),
            new JournalColumn("reduce_micros", INT8, "the journaled reduce's guest time in microseconds, else NULL"),
            new JournalColumn("result", JSON, "a succeeded call's published result, else NULL")),
            List.of("created_at", "call_id"), List.of(), Map.of()),
    SHARD_RUNS("shard_runs", List.of(
            new JournalColumn("call_id", UUID, "the call"),
            new JournalColumn("run_index", INT4, "the shard run's index in its call, 0 to slot_count - 1"),
            new JournalColumn("wire_id", TEXT, "the shard run's wire identity (<call>/shard/<run_index>)"),
            new JournalColumn("partition_id", INT4, "the partition the shard run read"),
            new JournalColumn("epoch", INT8, "the partition's epoch the run was fenced by"),
            new JournalColumn("host_id", TEXT, "the leader that ran and journaled it"),
            new JournalColumn("attempts", INT4, "the attempt that produced the journaled outcome (1, or 2 after a"
                    + " retry); NULL for outcomes journaled before it was recorded"),
            new JournalColumn("state", TEXT, "published, failed (the guest failed: see error_*), or unpublished (the"
                    + " outcome was journaled but its publication fenced out: lease lost or deadline passed)"),
            new JournalColumn("lease_until", TIMESTAMPTZ, "the published shard run's lease, else NULL"),
            new JournalColumn("rows_read", INT4, "rows handed to the guest"),
            new JournalColumn("emits", INT4, "partials the guest emitted"),
            new JournalColumn("entries", INT4, "entries of the published partials, else NULL"),
            new JournalColumn("read_micros", INT8, "time reading the partition, in microseconds; NULL when not recorded"),
            new JournalColumn("guest_micros", INT8, "the guest's run time, in microseconds"),
            new JournalColumn("guest_started_at", TIMESTAMPTZ, "when the leader started the guest, on the control"
                    + " database's clock (an upper bound)"),
            new JournalColumn("journaled_at", TIMESTAMPTZ, "when the outcome was journaled"),
            new JournalColumn("published_at", TIMESTAMPTZ, "when the shard run was published, else NULL"),
            new JournalColumn("error_code", INT4, "a failed shard run's Thresher code, else NULL"),
            new JournalColumn("error_name", TEXT, "that code's name"),
            new JournalColumn("error_category", TEXT, "that code's category"),
            new JournalColumn("retry_class", TEXT, "that code's retry class"),
            new JournalColumn("error_message", TEXT, "a failed shard run's message, else NULL")),
            List.of("journaled_at", "call_id", "run_index"), List.of("shard_slots"), Map.of("slot_index", "run_index"));

    private final String viewName;
    private final List<JournalColumn> columns;
    private final List<String> recencyOrder;
    private final List<String> formerNames;
    private final Map<String, String> formerColumns;

    JournalView(String viewName, List<JournalColumn> columns, List<String> recencyOrder, List<String> formerNames,
                Map<String, String> formerColumns) {
        this.viewName = viewName;
        this.columns = List.copyOf(columns);
        this.recencyOrder = List.copyOf(recencyOrder);
        this.formerNames = List.copyOf(formerNames);
        this.formerColumns = Map.copyOf(formerColumns);
    }

    /** The schema the views live in over pgwire: {@code thresher.invocations}. */
    public static final String SCHEMA = "thresher";

    /** The view's name without its schema. */
    public String viewName() {
        return viewName;
    }

    /** {@code thresher.<name>}. */
    public String qualifiedName() {
        return SCHEMA + "." + viewName;
    }

    /** Every column, in order ({@code SELECT *}). */
    public List<JournalColumn> columns() {
        return columns;
    }

    /**
     * The column called {@code name} (exactly: names are lower case); a former name of a column is that column
     * answered under the former name.
     */
    public Optional<JournalColumn> column(String name) {
        String current = currentName(name);
        for (JournalColumn c : columns) {
            if (c.name().equals(current)) {
                return Optional.of(current.equals(name) ? c : new JournalColumn(name, c.type(), c.description()));
            }
        }
        return Optional.empty();
    }

    /** The name a column is called now: {@code name}, or the column's new name when {@code name} is a former one. */
    public String currentName(String name) {
        return formerColumns.getOrDefault(name, name);
    }

    /** The view's former names (without schema), each still another name of it. */
    public List<String> formerNames() {
        return formerNames;
    }

    /** Former column names, each to the column's name now. */
    public Map<String, String> formerColumns() {
        return formerColumns;
    }

    /** Whether {@code name} (without schema, exactly: names are lower case) is this view's name or a former one. */
    public boolean answersTo(String name) {
        return viewName.equals(name) || formerNames.contains(name);
    }

    /**
     * The columns that order the view's rows newest first when each is descending, and make the order total: a
     * query's own {@code ORDER BY} is followed by them, so a page of rows ({@code LIMIT}, {@code OFFSET}) is the
     * same whenever it is asked for.
     */
    public List<String> recencyOrder() {
        return recencyOrder;
    }

    /** The view {@code name} (without schema, any case) names, if any. */
    public static Optional<JournalView> named(String name) {
        for (JournalView v : values()) {
            if (v.answersTo(name.toLowerCase(Locale.ROOT))) {
                return Optional.of(v);
            }
        }
        return Optional.empty();
    }
}
