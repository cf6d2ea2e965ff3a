package dev.thresher.server.admin;

import dev.thresher.bindings.TopologyService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.control.TopologyChanges;
import dev.thresher.store.control.TopologyStore.Lease;
import dev.thresher.store.control.TopologyStore.Move;
import dev.thresher.store.control.TopologyStore;
import dev.thresher.topology.Partition;
import java.io.IOException;
import java.io.PrintStream;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The topology changes of {@link TopologyService} against the control database and the shard databases: leader
 * transfers, drains, splits, moves and shard databases added or removed. Each is checked first, planned only on a
 * dry run, and audited in {@code topology_changes} (docs/operations.md, "Changing the topology").
 *
 * <p>A move runs in phases recorded in {@code partition_moves}, each safe to run again: <b>copy</b> (the source
 * table locked {@code SHARE}, so writers wait, and the slot range copied into the target, whatever an earlier
 * attempt left there removed first), <b>verify</b> (row count and a content checksum of both sides, under the same
 * lock), <b>cutover</b> (one control-database transaction: the partition's shard and a new epoch, its lease ended),
 * <b>cleanup</b> (the source rows removed). Asking for the move again resumes it at its recorded phase.
 */
public final class TopologyAdmin implements TopologyService {
    private static final Pattern SHARD_NAME = Pattern.compile("[a-z_][a-z0-9_-]{0,62}");

    private final TableAdmin tables;
    /** The work a move does on the shard databases: copying a partition's rows, counting and checksumming them. */
    private final PartitionCopy rows;
    /** A move's phases once it is recorded: copy, verify, cutover and cleanup. */
    private final MovePhases phases;
    private final DataSource control;
    private final TopologyStore topology;
    private final TopologyChanges audit;
    private final long leaseMs;
    private final int partitionsPerCall;
    private final PrintStream out;

    /**
     * @param limits the nodes' limits: {@code partitionLeaseMs} (how long a change waits for the nodes to act on it is
     *     counted in leases) and {@code coordinationSlots} (a split that would leave a table with more partitions
     *     than one call may cover is refused)
     * @param out progress, one line per step as it happens (the command line prints it; a node discards it)
     */
    public TopologyAdmin(TableAdmin tables, dev.thresher.limits.Limits limits, PrintStream out) {
        this.tables = tables;
        this.rows = new PartitionCopy(tables);
        this.control = tables.controlDb();
        this.topology = new TopologyStore(control);
        this.phases = new MovePhases(tables, rows, topology);
        this.audit = new TopologyChanges(control);
        this.leaseMs = limits.partitionLeaseMs();
        this.partitionsPerCall = limits.coordinationSlots();
        this.out = out;
    }

    // ---- the audit -----------------------------------------------------------------------------------------

    /** The steps of one change, printed as they happen. */
    private final class Steps {
        final List<String> lines = new ArrayList<>();
        /** The change's row in the audit. */
        long changeId;

        void add(String line) {
            lines.add(line);
            out.println(line);
            out.flush();
        }
    }

    private interface Work {
        void run(Steps steps) throws SQLException, IOException, InterruptedException;
    }

    private Change audited(String requestedBy, String command, boolean dryRun, Work work) {
        TopologyChanges.Started started = audit.start(requestedBy, command, dryRun);
        long id = started.changeId();
        Instant at = started.requestedAt();
        Steps steps = new Steps();
        steps.changeId = id;
        String outcome = "failed";
        try {
            work.run(steps);
            outcome = dryRun ? "planned" : "succeeded";
            return new Change(id, command, dryRun, outcome, List.copyOf(steps.lines), requestedBy, at);
        } catch (ThresherException e) {
            outcome = e.code() == ErrorCode.TOPOLOGY_CHANGE_REFUSED || e.code() == ErrorCode.INVALID_ARGUMENTS
                    ? "refused" : "failed";
            steps.lines.add(outcome + ": " + e.getMessage());
            throw e;
        } catch (SQLException | IOException e) {
            ThresherException te = store("a database", e);
            steps.lines.add("failed: " + te.getMessage());
            throw te;
        } catch (RuntimeException e) {
            steps.lines.add("failed: " + e);
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            steps.lines.add("failed: interrupted");
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted", e);
        } finally {
            try {
                audit.finish(id, outcome, String.join("\n", steps.lines));
            } catch (ThresherException e) {
                out.println("could not record the outcome of change " + id + ": " + e.getCause().getMessage());
            }
        }
    }

    @Override
    public List<Change> changes(int limit) {
        return audit.latest(Math.max(1, Math.min(limit, 10_000))).stream().map(r -> new Change(r.changeId(),
                r.command(), r.dryRun(), r.outcome(), r.detail() == null || r.detail().isEmpty() ? List.of()
                : List.of(r.detail().split("\n")), r.requestedBy(), r.requestedAt())).toList();
    }

    @Override
    public List<Shard> shards() {
        var t = tables.control().readTopology();
        List<Shard> shards = new ArrayList<>();
        for (var e : tables.shardNames().entrySet()) {
            int id = e.getKey();
            int partitions = (int) t.partitions().stream().filter(p -> p.shardId() == id).count();
            shards.add(new Shard(id, e.getValue(), partitions, t.candidatesOf(id).stream()
                    .map(c -> new ShardCandidate(c.hostId(), c.home())).toList()));
        }
        return shards;
    }

    @Override
    public String controlView() {
        var c = tables.control();
        long version = c.readTopologyVersion();
        return TopologyView.render(version, c.readTopology());
    }

    // ---- leader transfer -------------------------------------------------------------------------------------

    @Override
    public Change transferLeader(String requestedBy, int partitionId, String toHost, boolean dryRun) {
        return audited(requestedBy, "leader transfer " + partitionId + " --to " + toHost + dryRunFlag(dryRun), dryRun,
                steps -> {
                    Partition p = partition(partitionId);
                    Lease lease = lease(partitionId).orElse(null);
                    requireCandidate(toHost, p.shardId(), "lead partition " + partitionId);
                    if (lease != null && lease.live() && lease.host().equals(toHost) && lease.epoch() == p.epoch()) {
                        steps.add("partition " + partitionId + " is led by " + toHost + " already (epoch " + p.epoch() + ")");
                        return;
                    }
                    steps.add("partition " + partitionId + " (shard " + p.shardId() + ", epoch " + p.epoch() + ") is led by "
                            + (lease != null && lease.live() ? lease.host() : "nobody") + "; " + toHost
                            + " is a live candidate of shard " + p.shardId());
                    if (dryRun) {
                        steps.add("would ask the leader to hand partition " + partitionId + " to " + toHost
                                + " (it stops renewing, ends its lease, and " + toHost + " takes it at a new epoch)");
                        return;
                    }
                    topology.askTransfer(partitionId, toHost, p.epoch());
                    steps.add("asked: transfer of partition " + partitionId + " to " + toHost);
                    long started = System.nanoTime();
                    Lease now = awaitLease(partitionId, l -> l.live() && l.host().equals(toHost) && l.transferTo() == null,
                            3 * leaseMs + 5_000);
                    if (now == null) {
                        throw new ThresherException(ErrorCode.INTERNAL_ERROR, toHost + " has not taken partition "
                                + partitionId + " within " + (3 * leaseMs + 5_000) + " ms; the transfer stays asked for");
                    }
                    steps.add("partition " + partitionId + " is led by " + toHost + " at epoch " + now.epoch() + " after "
                            + msSince(started) + " ms");
                });
    }

    // ---- drain ---------------------------------------------------------------------------------------------

    @Override
    public Change drainNode(String requestedBy, String hostId, boolean dryRun) {
        return audited(requestedBy, "node drain " + hostId + dryRunFlag(dryRun), dryRun, steps -> {
            requireHost(hostId);
            List<TopologyStore.Led> led = topology.ledBy(hostId);
            List<String> orphans = new ArrayList<>();
            for (TopologyStore.Led pl : led) {
                List<String> others = liveCandidates(pl.shardId(), hostId);
                if (others.isEmpty()) {
                    orphans.add(Integer.toString(pl.partitionId()));
                } else {
                    steps.add("partition " + pl.partitionId() + " (shard " + pl.shardId() + ") passes to one of " + others);
                }
            }
            if (!orphans.isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "draining " + hostId + " would leave "
                        + (orphans.size() == 1 ? "partition " : "partitions ") + String.join(", ", orphans)
                        + " without a live candidate: start a node standing by for their shard first");
            }
            if (led.isEmpty()) {
                steps.add(hostId + " leads no partition");
            }
            if (dryRun) {
                steps.add("would drain " + hostId + ": it takes and renews no lease, and its " + led.size()
                        + " partitions pass to the candidates above");
                return;
            }
            topology.setDraining(hostId, true);
            steps.add("asked: " + hostId + " drains");
            long started = System.nanoTime();
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3 * leaseMs + 5_000);
            while (true) {
                long still = topology.liveLeaseCount(hostId);
                long leaderless = topology.leaderless(led.stream().map(TopologyStore.Led::partitionId).toList());
                if (still == 0 && leaderless == 0) {
                    break;
                }
                if (System.nanoTime() - until > 0) {
                    throw new ThresherException(ErrorCode.INTERNAL_ERROR, hostId + " still leads " + still + " and "
                            + leaderless + " of its partitions have no leader after " + msSince(started)
                            + " ms; it stays draining");
                }
                Thread.sleep(100);
            }
            for (TopologyStore.Led pl : led) {
                Lease l = topology.lease(pl.partitionId()).orElseThrow();
                steps.add("partition " + pl.partitionId() + " is led by " + l.host() + " at epoch " + l.epoch());
            }
            steps.add(hostId + " drained in " + msSince(started) + " ms; it still coordinates calls until stopped");
        });
    }

    @Override
    public Change undrainNode(String requestedBy, String hostId, boolean dryRun) {
        return audited(requestedBy, "node undrain " + hostId + dryRunFlag(dryRun), dryRun, steps -> {
            requireHost(hostId);
            if (dryRun) {
                steps.add("would let " + hostId + " lead again; its home shard's partitions return to it once it is settled");
                return;
            }
            topology.setDraining(hostId, false);
            steps.add(hostId + " may lead again; its home shard's partitions return to it once it has been live for two"
                    + " leases");
        });
    }

    // ---- split ---------------------------------------------------------------------------------------------

    @Override
    public Change splitPartition(String requestedBy, int partitionId, OptionalInt at, boolean dryRun) {
        return audited(requestedBy, "partition split " + partitionId + (at.isPresent() ? " --at " + at.getAsInt() : "")
                + dryRunFlag(dryRun), dryRun, steps -> {
            Partition p = partition(partitionId);
            if (p.slotLo() == p.slotHi()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                        + " holds one slot (" + p.slotLo() + "); it cannot be split");
            }
            int first = at.orElse(p.slotLo() + (p.slotHi() - p.slotLo() + 1) / 2);
            if (first <= p.slotLo() || first > p.slotHi()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "--at is the first slot of the new partition: "
                        + (p.slotLo() + 1) + ".." + p.slotHi() + " for partition " + partitionId + ", was " + first);
            }
            requireNoMove(partitionId);
            long partitions = topology.partitionCount(p.tenant(), p.table());
            if (partitions + 1 > partitionsPerCall) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "table " + p.table() + " has " + partitions
                        + " partitions; one more would be more than a call may cover (limits.coordinationSlots, "
                        + partitionsPerCall + ")");
            }
            long epoch = p.epoch() + 1;
            if (dryRun) {
                steps.add("would split partition " + partitionId + " (slots " + p.slotLo() + ".." + p.slotHi() + ", shard "
                        + p.shardId() + ", epoch " + p.epoch() + ") into " + partitionId + " (slots " + p.slotLo() + ".."
                        + (first - 1) + ") and a new partition (slots " + first + ".." + p.slotHi() + "), both at epoch "
                        + epoch + ", led by the same node; no row moves");
                return;
            }
            int newId = topology.split(p, first);
            steps.add("split: partition " + partitionId + " is slots " + p.slotLo() + ".." + (first - 1) + ", partition "
                    + newId + " is slots " + first + ".." + p.slotHi() + ", both on shard " + p.shardId() + " at epoch "
                    + epoch);
        });
    }

    // ---- move ----------------------------------------------------------------------------------------------

    @Override
    public Change movePartition(String requestedBy, int partitionId, String toShard, boolean dryRun) {
        return audited(requestedBy, "partition move " + partitionId + " --to " + toShard + dryRunFlag(dryRun), dryRun,
                steps -> move(steps, partitionId, toShard, dryRun));
    }

    /**
     * A move: started or resumed here, then its phases from the one recorded ({@link MovePhases}: copy, verify and
     * cutover under the source table's {@code SHARE} lock, then cleanup), and a wait for its new leader; a dry run only
     * says what it would do.
     */
    private void move(Steps steps, int partitionId, String toShardArg, boolean dryRun)
            throws SQLException, IOException, InterruptedException {
        Partition p = partition(partitionId);
        int to = shardId(toShardArg);
        Map<Integer, String> urls = tables.shardUrls();
        Move m = startOrResume(steps, p, to, urls, dryRun);
        if (m == null) {
            return;
        }
        String sourceUrl = urls.get(m.fromShard());
        if (!m.phase().equals("cleanup")) {
            phases.untilCleanup(p, m, sourceUrl, urls.get(m.toShard()), steps::add);
        }
        phases.cleanup(p, m, sourceUrl, steps::add);
        topology.endMove(partitionId);
        Lease lease = awaitLease(partitionId, l -> l.live(), 3 * leaseMs + 5_000);
        steps.add("partition " + partitionId + " moved to shard " + m.toShard()
                + (lease == null ? "; no node leads it yet (is a node a candidate of shard " + m.toShard() + "?)"
                : ", led by " + lease.host() + " at epoch " + lease.epoch()));
    }

    /**
     * The move of partition {@code p} to shard {@code to} as recorded: a new one started once its target is checked
     * (another shard, within the table's residency, reachable and writable), or the one recorded resumed by this
     * change; null for a dry run, after saying what it would do.
     */
    private Move startOrResume(Steps steps, Partition p, int to, Map<Integer, String> urls, boolean dryRun)
            throws SQLException {
        int partitionId = p.id();
        Optional<Move> recorded = topology.move(partitionId);
        if (recorded.isPresent() && recorded.get().toShard() != to) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                    + " is being moved to shard " + recorded.get().toShard() + " (phase " + recorded.get().phase()
                    + "); ask for that move again to resume it");
        }
        if (recorded.isEmpty()) {
            if (p.shardId() == to) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                        + " is on shard " + to + " already");
            }
            checkResidency(p, to);
            tables.checkWritable(to, urls.get(to));
            steps.add("partition " + partitionId + " of " + p.table() + " (slots " + p.slotLo() + ".." + p.slotHi()
                    + ", epoch " + p.epoch() + ") is on shard " + p.shardId() + "; shard " + to + " is reachable and writable");
            if (dryRun) {
                long rows = this.rows.rowsAndChecksum(urls.get(p.shardId()), p).rows();
                steps.add("would copy " + rows + " rows from shard " + p.shardId() + " to shard " + to
                        + " (writes to " + p.table() + " on shard " + p.shardId() + " wait meanwhile), verify their count and"
                        + " checksum, cut over to epoch " + (p.epoch() + 1) + " and remove them from shard " + p.shardId());
                return null;
            }
            topology.startMove(partitionId, p.shardId(), to, p.epoch(), steps.changeId);
            return topology.move(partitionId).orElseThrow();
        }
        steps.add("resuming the move of partition " + partitionId + " from shard " + recorded.get().fromShard()
                + " to shard " + to + " at phase " + recorded.get().phase());
        if (dryRun) {
            steps.add("would resume it at phase " + recorded.get().phase());
            return null;
        }
        // the change that started it (or last resumed it) ended without saying so: it was interrupted
        audit.interruptedMove(partitionId, steps.changeId);
        topology.resumeMove(partitionId, steps.changeId);
        return recorded.orElseThrow();
    }

    private void requireNoMove(int partitionId) {
        topology.move(partitionId).ifPresent(m -> {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "partition " + partitionId
                    + " is being moved to shard " + m.toShard() + " (phase " + m.phase() + "); finish the move first");
        });
    }

    private void checkResidency(Partition p, int to) {
        Optional<String> residency = tables.control().tables().residency(p.tenant(), p.table());
        if (residency.isPresent() && !List.of(residency.get().split(",")).contains(Integer.toString(to))) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "table " + p.table() + " is resident on shards "
                    + residency.get() + " only; shard " + to + " is not among them");
        }
    }

    // ---- shards --------------------------------------------------------------------------------------------

    /**
     * Registers a shard database. The first ones of a new cluster are registered before any node has run, on an empty
     * control database: its schema is created (or brought up to date) first, as a node does at start.
     */
    @Override
    public Change addShard(String requestedBy, String jdbcUrl, Optional<String> name, boolean dryRun) {
        try {
            ControlStore.migrate(control);
        } catch (RuntimeException e) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "control database: " + e.getMessage(), e);
        }
        return audited(requestedBy, "shard add " + redacted(jdbcUrl) + name.map(n -> " --name " + n).orElse("")
                + dryRunFlag(dryRun), dryRun, steps -> {
            if (jdbcUrl == null || !jdbcUrl.startsWith("jdbc:postgresql://")) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a shard database is a jdbc:postgresql:// URL");
            }
            if (name.isPresent() && !SHARD_NAME.matcher(name.get()).matches()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "a shard name is a lower-case letter or '_', then"
                        + " letters, digits, '_' or '-', at most 63 characters");
            }
            if (topology.shardWithUrl(jdbcUrl).isPresent()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "that database is a shard already");
            }
            int id = topology.nextShardId();
            String shardName = name.orElse("shard-" + id);
            if (topology.shardNamed(shardName).isPresent()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "a shard is named " + shardName + " already");
            }
            tables.checkWritable(id, jdbcUrl);
            steps.add("the database is reachable and writable");
            if (dryRun) {
                steps.add("would register it as shard " + id + " (" + shardName + ")");
                return;
            }
            topology.addShard(id, jdbcUrl, shardName);
            steps.add("registered as shard " + id + " (" + shardName + "); no node serves it yet: start one with"
                    + " node.shardId=" + id + " (its home) or list it in another node's node.standbyShards, then move"
                    + " partitions to it");
        });
    }

    @Override
    public Change removeShard(String requestedBy, String shard, boolean dryRun) {
        return audited(requestedBy, "shard remove " + shard + dryRunFlag(dryRun), dryRun, steps -> {
            int id = shardId(shard);
            long partitions = topology.partitionCountOnShard(id);
            if (partitions > 0) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "shard " + id + " holds " + partitions
                        + " partitions; move them away first (thresher partition move ID --to SHARD)");
            }
            long moves = topology.movesOfShard(id);
            if (moves > 0) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, "a partition move from or to shard " + id
                        + " is unfinished; finish it first");
            }
            List<String> live = topology.liveHomeHosts(id, 2 * leaseMs);
            if (!live.isEmpty()) {
                throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, (live.size() == 1 ? "node " + live.get(0)
                        + " is running with shard " + id + " as its home shard; stop it first" : "nodes "
                        + String.join(", ", live) + " are running with shard " + id + " as their home shard; stop them first"));
            }
            List<String> stopped = topology.homeHosts(id);
            steps.add("shard " + id + " holds no partition and no running node has it as its home"
                    + (stopped.isEmpty() ? "" : "; stopped node(s) " + stopped + " had, and are forgotten with it"));
            if (dryRun) {
                steps.add("would remove shard " + id + " (its rows stay in its database)");
                return;
            }
            topology.removeShard(id);
            steps.add("removed shard " + id);
        });
    }

    // ---- reading the topology ----------------------------------------------------------------------------------

    private Partition partition(int id) {
        return topology.partition(id)
                .orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no partition " + id));
    }

    private Optional<Lease> lease(int partitionId) {
        return topology.lease(partitionId);
    }

    private Lease awaitLease(int partitionId, java.util.function.Predicate<Lease> until, long boundMs)
            throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(boundMs);
        while (true) {
            long epoch = partition(partitionId).epoch();
            Optional<Lease> l = lease(partitionId);
            if (l.isPresent() && l.get().epoch() == epoch && until.test(l.get())) {
                return l.get();
            }
            if (System.nanoTime() - end > 0) {
                return null;
            }
            Thread.sleep(100);
        }
    }

    private void requireHost(String hostId) {
        if (!topology.hostExists(hostId)) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "there is no node " + hostId + "; the nodes are "
                    + topology.hostIds());
        }
    }

    private void requireCandidate(String hostId, int shard, String what) {
        requireHost(hostId);
        if (!liveCandidates(shard, null).contains(hostId)) {
            throw new ThresherException(ErrorCode.TOPOLOGY_CHANGE_REFUSED, hostId + " cannot " + what + ": it is not a"
                    + " live, undrained candidate of shard " + shard + "; the live candidates are " + liveCandidates(shard, null));
        }
    }

    /** The live, undrained candidate nodes of a shard, but {@code except}. */
    private List<String> liveCandidates(int shard, String except) {
        return topology.liveCandidates(shard, leaseMs, except);
    }

    /** A shard by id or name. */
    private int shardId(String shard) {
        if (shard == null || shard.isBlank()) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "name a shard by its id or name");
        }
        return topology.shardByNameOrId(shard).orElseThrow(() -> new ThresherException(ErrorCode.INVALID_ARGUMENTS,
                "there is no shard " + shard + "; the shards are " + topology.shardLabels()));
    }

    // ---- plumbing ----------------------------------------------------------------------------------------------

    private static ThresherException store(String what, Exception e) {
        return new ThresherException(ErrorCode.STORE_UNAVAILABLE, what + ": " + e.getMessage(), e);
    }

    private static String dryRunFlag(boolean dryRun) {
        return dryRun ? " --dry-run" : "";
    }

    /** A JDBC URL without its query (where a password may be). */
    private static String redacted(String url) {
        return url == null ? "" : url.replaceAll("\\?.*", "");
    }

    private static long msSince(long startNanos) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    }
}
