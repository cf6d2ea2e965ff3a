package dev.thresher.coordinator;

import dev.thresher.bindings.Binding;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ControlStore;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import dev.thresher.topology.Partition;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.ShardRunHandler;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import dev.thresher.wire.WireMessage;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the shards sent to this node: re-checks leadership, epoch, binding and deadline here,
 * reads the partition's batch from the local replica, runs the guest and answers with its partials.
 */
public final class ShardExecutor implements ShardRunHandler {
    private static final Logger log = LoggerFactory.getLogger(ShardExecutor.class);

    private final String hostId;
    private final ControlStore control;
    private final LeaseKeeper leases;
    private final ShardReader reader;
    private final CellHost cells;
    private final ComponentCache components;
    private final Limits limits;
    private final ExecutorService executor;
    private final Map<String, Binding> bindings = new ConcurrentHashMap<>();

    public ShardExecutor(String hostId, ControlStore control, LeaseKeeper leases, ShardReader reader, CellHost cells,
                         Limits limits, ExecutorService executor) {
        this.hostId = hostId;
        this.control = control;
        this.leases = leases;
        this.reader = reader;
        this.cells = cells;
        this.components = new ComponentCache(control);
        this.limits = limits;
        this.executor = executor;
    }

    @Override
    public CompletableFuture<WireMessage> handle(ShardRunRequest request, long receivedNanos) {
        long deadlineNanos = receivedNanos + TimeUnit.MICROSECONDS.toNanos(request.remainingBudgetMicros());
        return CompletableFuture.supplyAsync(() -> execute(request, deadlineNanos), executor);
    }

    private WireMessage execute(ShardRunRequest request, long deadlineNanos) {
        boolean guestStarted = false;
        try {
            Partition partition = leases.ledPartition(request.partitionId(), request.epoch())
                    .orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE, "node " + hostId
                            + " does not lead partition " + request.partitionId() + " under epoch " + request.epoch()));
            Binding binding = binding(request);
            Component component = components.get(binding.componentDigest());
            checkDeadline(deadlineNanos, "before reading partition " + partition.id());
            ShardBatch batch = reader.read(partition, binding.selector(), limits.rowsPerBatch(), limits.batchMaxBytes(),
                    deadlineNanos);
            guestStarted = true;
            RunOutcome outcome = cells.run(component, batch.bytes(), request.argumentsJson(), deadlineNanos);
            return new ShardRunResult(request.requestId(), request.wireId(), partition.id(), partition.epoch(),
                    batch.rowCount(), outcome.emitCount(), TimeUnit.NANOSECONDS.toMicros(batch.readNanos()),
                    TimeUnit.NANOSECONDS.toMicros(outcome.guestNanos()), outcome.partials());
        } catch (RuntimeException e) {
            ThresherException te = ThresherException.of(e);
            if (te.code() == ErrorCode.INTERNAL_ERROR) {
                log.error("shard run {} failed", request.wireId(), e);
            }
            // Before cells.run the guest provably did not start; inside it, CellHost marks its refusals.
            boolean started = guestStarted && !CellHost.refusedBeforeGuest(e);
            return new ShardRunFailure(request.requestId(), request.wireId(), te.code().code(), started, te.getMessage());
        }
    }

    private Binding binding(ShardRunRequest request) {
        String key = request.tenant() + '\0' + request.bindingName() + '\0' + request.componentDigest();
        Binding b = bindings.get(key);
        if (b == null) {
            b = control.binding(request.tenant(), request.bindingName(), request.componentDigest())
                    .orElseThrow(() -> new ThresherException(ErrorCode.TARGET_STALE, "binding " + request.bindingName()
                            + " with component " + request.componentDigest() + " is not known here"));
            bindings.put(key, b);
        }
        return b;
    }

    private static void checkDeadline(long deadlineNanos, String when) {
        if (System.nanoTime() - deadlineNanos >= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed " + when);
        }
    }
}
