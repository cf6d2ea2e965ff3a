package dev.thresher.coordinator;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.bindings.Binding;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.ReduceOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.store.control.ControlStore;
import dev.thresher.topology.Topology;
import dev.thresher.wire.WireMessage.ShardRunFailure;
import dev.thresher.wire.WireMessage.ShardRunRequest;
import dev.thresher.wire.WireMessage.ShardRunResult;
import dev.thresher.wire.WireClient;
import dev.thresher.wire.WireMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Coordinates calls accepted on this node.
 *
 * <pre>
 *  call ─► check arguments ─► resolve binding ─► read topology ─► plan (no rows read)
 *       ─► record invocation ─► dispatch shards through the bounded pool (stop admitting on failure)
 *       ─► settle started shards ─► validate every slot ─► reduce here ─► publish once ─► result
 * </pre>
 *
 * One absolute deadline bounds every step; it crosses the wire as remaining budget.
 */
public final class Coordinator implements CallService {
    private static final Logger log = LoggerFactory.getLogger(Coordinator.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String hostId;
    private final ControlStore control;
    private final WireClient wire;
    private final CellHost cells;
    private final ComponentCache components;
    private final Limits limits;
    private final ExecutorService callExecutor;
    private final ExecutorService guestExecutor;
    private final Semaphore shardPool;
    private final AtomicLong requestIds = new AtomicLong();

    /**
     * @param callExecutor runs each call from acceptance to publication (virtual threads fit: calls mostly wait)
     * @param guestExecutor platform threads that run guest code (polyglot contexts stay off virtual threads)
     */
    public Coordinator(String hostId, ControlStore control, WireClient wire, CellHost cells, Limits limits,
                       ExecutorService callExecutor, ExecutorService guestExecutor) {
        this.hostId = hostId;
        this.control = control;
        this.wire = wire;
        this.cells = cells;
        this.components = new ComponentCache(control);
        this.limits = limits;
        this.callExecutor = callExecutor;
        this.guestExecutor = guestExecutor;
        this.shardPool = new Semaphore(limits.shardConcurrency(), true);
    }

    @Override
    public CompletableFuture<CallResult> call(CallRequest request) {
        long startNanos = System.nanoTime();
        return CompletableFuture.supplyAsync(() -> run(request, startNanos), callExecutor);
    }

    private CallResult run(CallRequest request, long startNanos) {
        long deadlineMs = request.deadlineMs().orElse(limits.callDeadlineMs());
        if (deadlineMs <= 0 || deadlineMs > limits.maxCallDeadlineMs()) {
            throw new ThresherException(ErrorCode.INVALID_DEADLINE, "a call deadline is 1.." + limits.maxCallDeadlineMs()
                    + " ms, was " + deadlineMs);
        }
        long deadlineNanos = startNanos + TimeUnit.MILLISECONDS.toNanos(deadlineMs);
        long deadlineEpochMs = System.currentTimeMillis() + deadlineMs;
        checkArguments(request.argumentsJson());
        Binding binding = control.currentBinding(request.tenant(), request.bindingName())
                .orElseThrow(() -> new ThresherException(ErrorCode.UNKNOWN_BINDING, "binding '" + request.bindingName()
                        + "' does not exist for tenant '" + request.tenant() + "'"));
        Topology topology = control.readTopology();
        UUID callId = UUID.randomUUID();
        CallPlan plan = CallPlanner.plan(callId, binding, topology, limits);
        control.insertInvocation(callId, binding, request.principal(), hostId, plan.targets().size(), deadlineEpochMs);
        try {
            Map<Integer, ShardRunResult> results = dispatch(plan, request, deadlineNanos);
            List<Partial> merged = SlotValidator.validate(plan, results, limits);
            checkDeadline(deadlineNanos, "before reduce");
            byte[] partials = PartialsCodec.encode(merged);
            ReduceOutcome reduced = CompletableFuture.supplyAsync(() -> cells.reduce(
                    components.get(binding.componentDigest()), partials, request.argumentsJson(), deadlineNanos),
                    guestExecutor).join();
            if (reduced.resultJson().length() > limits.resultMaxBytes()) {
                throw new ThresherException(ErrorCode.RESULT_TOO_LARGE, "the reduced result exceeds "
                        + limits.resultMaxBytes() + " bytes");
            }
            if (!control.publishResult(callId, reduced.resultJson())) {
                throw new ThresherException(ErrorCode.INTERNAL_ERROR, "call " + callId + " finished twice");
            }
            log.debug("call {} of {} published after {} µs", callId, binding.name(),
                    TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - startNanos));
            return new CallResult(callId.toString(), reduced.resultJson());
        } catch (RuntimeException e) {
            ThresherException te = ThresherException.of(e);
            try {
                control.failInvocation(callId, te.code(), te.getMessage());
            } catch (RuntimeException recordFailure) {
                log.warn("could not record the failure of call {}: {}", callId, recordFailure.toString());
            }
            throw te;
        }
    }

    /**
     * Sends every shard through the bounded pool in slot order. Once one fails or the deadline
     * passes no new shard is admitted; started shards settle; the failure of the lowest slot surfaces.
     */
    private Map<Integer, ShardRunResult> dispatch(CallPlan plan, CallRequest request, long deadlineNanos) {
        Map<Integer, ShardRunResult> results = new ConcurrentHashMap<>();
        Map<Integer, ThresherException> failures = new ConcurrentHashMap<>();
        AtomicReference<ThresherException> stop = new AtomicReference<>();
        List<CompletableFuture<Void>> started = new ArrayList<>();
        for (ShardTarget t : plan.targets()) {
            if (stop.get() != null) {
                break;
            }
            long waitNanos = deadlineNanos - System.nanoTime();
            boolean admitted;
            try {
                admitted = waitNanos > 0 && shardPool.tryAcquire(waitNanos, TimeUnit.NANOSECONDS);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted while dispatching", ie);
            }
            if (!admitted) {
                stop.compareAndSet(null, new ThresherException(ErrorCode.DEADLINE_EXCEEDED,
                        "deadline passed before slot " + t.slotIndex() + " was admitted"));
                break;
            }
            long remainingMicros = TimeUnit.NANOSECONDS.toMicros(deadlineNanos - System.nanoTime());
            ShardRunRequest req = new ShardRunRequest(requestIds.incrementAndGet(), plan.callId().toString(), t.wireId(),
                    request.tenant(), plan.binding().name(), plan.binding().componentDigest(), t.slotIndex(),
                    t.partition().id(), t.partition().epoch(), Math.max(0, remainingMicros), 1, request.argumentsJson());
            CompletableFuture<Void> f;
            try {
                f = wire.send(t.leader().wireHost(), t.leader().wirePort(), req)
                        .orTimeout(Math.max(1, remainingMicros), TimeUnit.MICROSECONDS)
                        .handle((reply, error) -> {
                            shardPool.release();
                            ThresherException failure = error != null ? asShardFailure(t, error) : settle(t, reply, results);
                            if (failure != null) {
                                failures.put(t.slotIndex(), failure);
                                stop.compareAndSet(null, failure);
                            }
                            return null;
                        });
            } catch (RuntimeException e) {
                shardPool.release();
                failures.put(t.slotIndex(), ThresherException.of(e));
                stop.compareAndSet(null, ThresherException.of(e));
                break;
            }
            started.add(f);
        }
        CompletableFuture.allOf(started.toArray(CompletableFuture[]::new)).join();
        if (!failures.isEmpty()) {
            throw new TreeMap<>(failures).firstEntry().getValue();
        }
        if (stop.get() != null) {
            throw stop.get();
        }
        return results;
    }

    private static ThresherException settle(ShardTarget t, WireMessage reply, Map<Integer, ShardRunResult> results) {
        return switch (reply) {
            case ShardRunResult r -> {
                results.put(t.slotIndex(), r);
                yield null;
            }
            case ShardRunFailure f -> new ThresherException(ErrorCode.ofCode(f.errorCode()),
                    "slot " + t.slotIndex() + " (partition " + t.partition().id() + " on " + t.leader().hostId() + "): "
                            + f.message());
            case WireMessage.Hello h -> unexpected(t, h);
            case WireMessage.HelloAck h -> unexpected(t, h);
            case WireMessage.HelloReject h -> unexpected(t, h);
            case ShardRunRequest r -> unexpected(t, r);
        };
    }

    private static ThresherException unexpected(ShardTarget t, WireMessage reply) {
        return new ThresherException(ErrorCode.INTERNAL_ERROR, "slot " + t.slotIndex()
                + " answered with an unexpected message " + reply.getClass().getSimpleName());
    }

    private static ThresherException asShardFailure(ShardTarget t, Throwable error) {
        Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                ? error.getCause() : error;
        if (cause instanceof java.util.concurrent.TimeoutException) {
            return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for slot "
                    + t.slotIndex() + " (partition " + t.partition().id() + " on " + t.leader().hostId() + ")");
        }
        ThresherException te = ThresherException.of(cause);
        return new ThresherException(te.code(), "slot " + t.slotIndex() + " (partition " + t.partition().id() + " on "
                + t.leader().hostId() + "): " + te.getMessage(), te);
    }

    private void checkArguments(String argumentsJson) {
        int bytes = argumentsJson.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > limits.directCallPayloadBytes()) {
            throw new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, "arguments are " + bytes + " bytes; the limit is "
                    + limits.directCallPayloadBytes());
        }
        try (JsonParser p = JSON.createParser(argumentsJson)) {
            if (p.nextToken() == null) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments are empty; pass a JSON value such as '{}'");
            }
            p.skipChildren();
            if (p.nextToken() != null) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments hold more than one JSON value");
            }
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments are not valid JSON: "
                    + e.getOriginalMessage());
        } catch (IOException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "arguments could not be read: " + e.getMessage());
        }
    }

    private static void checkDeadline(long deadlineNanos, String when) {
        if (System.nanoTime() - deadlineNanos >= 0) {
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed " + when);
        }
    }
}
