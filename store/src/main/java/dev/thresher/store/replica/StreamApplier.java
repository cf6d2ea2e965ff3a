package dev.thresher.store.replica;

import dev.thresher.store.replica.PgOutput.Message;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Applies a replica's decoded stream messages to its generation: a transaction's changes are kept until its commit, then
 * applied at once under the write lock, and the partitions they touched accounted against the budget.
 */
final class StreamApplier {
    private final Generation g;
    private final ReplicaBudget budget;
    private final Map<Integer, TableReplica> relations = new HashMap<>();
    private final List<Message> pending = new ArrayList<>();
    boolean inTransaction;
    private int xid;

    /** A change of a table being added, kept with its transaction until the table's copy is in. */
    record Kept(int xid, Message change) {}

    StreamApplier(Generation g, ReplicaBudget budget) {
        this.g = g;
        this.budget = budget;
    }

    /** Applies what the stream has now, without waiting. */
    void pump(ReplicationSource source) throws SQLException {
        Message m;
        while ((m = source.poll()) != null) {
            accept(m);
        }
        catchUp(source);
    }

    /**
     * With no message waiting: everything up to the server's position is applied unless a transaction is half
     * read, so reads waiting for a position up to there may go on, and the server may recycle the WAL before it.
     */
    void catchUp(ReplicationSource source) throws SQLException {
        long position = source.serverPosition();
        g.serverPosition = Math.max(g.serverPosition, position);
        if (!inTransaction && position > g.applied) {
            g.advance(position);
            source.acknowledge(position);
        }
    }

    void accept(Message m) {
        switch (m) {
            case PgOutput.Begin b -> {
                inTransaction = true;
                xid = b.xid();
                pending.clear();
            }
            case PgOutput.Relation r -> relation(r);
            case PgOutput.Insert i -> keep(i.relation(), m);
            case PgOutput.Update u -> keep(u.relation(), m);
            case PgOutput.Delete d -> keep(d.relation(), m);
            case PgOutput.Truncate t -> pending.add(t);
            case PgOutput.Commit c -> commit(c);
            default -> { } // origins, types and logical messages change no rows
        }
    }

    private void keep(int relation, Message m) {
        if (relations.containsKey(relation)) {
            pending.add(m);
        }
    }

    private void relation(PgOutput.Relation r) {
        TableReplica t = g.tables.containsKey(r.name()) ? g.tables.get(r.name()) : g.adding.get(r.name());
        if (t == null || !t.namespace.equals(r.namespace())) {
            relations.remove(r.oid());
            return;
        }
        List<String> names = r.columns().stream().map(PgOutput.RelationColumn::name).toList();
        List<Integer> types = r.columns().stream().map(PgOutput.RelationColumn::typeOid).toList();
        if (!names.equals(t.relationColumns) || !types.equals(t.relationTypes)) {
            g.rebuild = "the columns of " + t.name + " changed";
            return;
        }
        relations.put(r.oid(), t);
    }

    private void commit(PgOutput.Commit c) {
        inTransaction = false;
        if (!pending.isEmpty()) {
            g.lock.writeLock().lock();
            try {
                for (Message m : pending) {
                    if (m instanceof PgOutput.Truncate tr) {
                        for (int relation : tr.relations()) {
                            route(relation, new PgOutput.Truncate(tr.options(), new int[] {relation}));
                        }
                    } else {
                        route(relationOf(m), m);
                    }
                    if (g.rebuild != null) {
                        break;
                    }
                }
                // under the write lock: a partition dropped for the budget is never half-read
                for (TableReplica t : g.tables.values()) {
                    for (HeldPartition h : t.held) {
                        if (!h.evicted && h.touched) {
                            h.touched = false;
                            h.account(budget);
                        }
                    }
                }
            } finally {
                g.lock.writeLock().unlock();
            }
            pending.clear();
        }
        if (g.rebuild == null) {
            g.advance(c.endLsn());
        }
    }

    /**
     * Applies a change of a replicated table; keeps one of a table being added; skips one of a table added to the
     * stream whose copy already holds it (its transaction is visible in the copy's snapshot).
     */
    private void route(int relation, Message m) {
        TableReplica t = relations.get(relation);
        if (t == null) {
            return;
        }
        if (g.adding.get(t.name) == t) {
            t.kept.add(new Kept(xid, m));
        } else if (t.visibleInCopy == null || !t.visibleInCopy.visible(xid)) {
            apply(m);
        }
    }

    private static int relationOf(Message m) {
        return switch (m) {
            case PgOutput.Insert i -> i.relation();
            case PgOutput.Update u -> u.relation();
            case PgOutput.Delete d -> d.relation();
            default -> -1;
        };
    }

    void apply(Message m) {
        switch (m) {
            case PgOutput.Insert i -> {
                TableReplica t = relations.get(i.relation());
                Tuple row = t.project(i.row());
                HeldPartition h = t.holding(slotOf(t, row));
                if (h != null) {
                    h.rows.insert(row);
                    h.touched = true;
                }
            }
            case PgOutput.Update u -> update(u);
            case PgOutput.Delete d -> {
                TableReplica t = relations.get(d.relation());
                Tuple old = t.project(d.old());
                int slot = slotOf(t, old);
                if (slot == Integer.MIN_VALUE) {
                    g.rebuild = "a delete from " + t.name + " without its slot";
                    return;
                }
                HeldPartition h = t.holding(slot);
                if (h != null) {
                    if (!h.rows.delete(old, d.oldIsKey())) {
                        g.rebuild = "a deleted row of " + t.name + " was not in the replica";
                    }
                    h.touched = true;
                }
            }
            case PgOutput.Truncate tr -> {
                for (int relation : tr.relations()) {
                    TableReplica t = relations.get(relation);
                    if (t != null) {
                        for (HeldPartition h : t.held) {
                            if (!h.evicted) {
                                h.rows.clear();
                                h.touched = true;
                            }
                        }
                    }
                }
            }
            default -> { }
        }
    }

    /** An update: in place when the row stays in its partition, else a delete from one and an insert into the other. */
    private void update(PgOutput.Update u) {
        TableReplica t = relations.get(u.relation());
        Tuple row = t.project(u.row());
        Tuple old = u.old() == null ? null : t.project(u.old());
        int newSlot = slotOf(t, row);
        int oldSlot = old == null ? newSlot : slotOf(t, old);
        if (oldSlot == Integer.MIN_VALUE) {
            g.rebuild = "an update of " + t.name + " without its old slot";
            return;
        }
        HeldPartition from = t.holding(oldSlot);
        HeldPartition to = t.holding(newSlot);
        if (from == to) {
            if (from != null && !from.rows.update(old, u.oldIsKey(), row)) {
                g.rebuild = "an updated row of " + t.name + " was not in the replica";
            }
            if (from != null) {
                from.touched = true;
            }
            return;
        }
        for (int i = 0; i < row.size(); i++) {
            if (row.isUnchanged(i)) {
                g.rebuild = "a row of " + t.name + " moved between partitions with an unchanged TOASTed value";
                return;
            }
        }
        if (from != null) {
            if (!from.rows.delete(old == null ? row : old, old != null && u.oldIsKey())) {
                g.rebuild = "a moved row of " + t.name + " was not in the replica";
                return;
            }
            from.touched = true;
        }
        if (to != null) {
            to.rows.insert(row);
            to.touched = true;
        }
    }

    /** The row's slot, or {@code Integer.MIN_VALUE} when the tuple does not carry it. */
    private static int slotOf(TableReplica t, Tuple row) {
        byte[] v = row.value(t.slotColumn);
        if (v == null || v == Tuple.UNCHANGED) {
            return Integer.MIN_VALUE;
        }
        return Integer.parseInt(new String(v, StandardCharsets.US_ASCII));
    }
}
