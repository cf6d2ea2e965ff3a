package dev.thresher.server.handlers;

import dev.thresher.bindings.Budgets;
import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.HandlerRequest;
import dev.thresher.bindings.HandlerResponse;
import dev.thresher.bindings.HandlerService;
import dev.thresher.bindings.abi.HttpRequestCodec;
import dev.thresher.bindings.http.Route;
import dev.thresher.bindings.http.RouteTable;
import dev.thresher.bindings.http.UrlEncoding;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.ComponentCache;
import dev.thresher.cellhost.HandlerOutcome;
import dev.thresher.cellhost.NestedCalls;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.Quoted;
import dev.thresher.errors.ThresherException;
import dev.thresher.http.ErrorJson;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.Manifest;
import dev.thresher.limits.InFlight;
import dev.thresher.store.DbDeadline;
import dev.thresher.store.control.BindingCatalog;
import dev.thresher.store.control.ControlCache;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's HTTP handlers: what the HTTP front door's {@code /v1/http/<binding>/...} routes reach (docs/components.md,
 * "HTTP handlers").
 *
 * <pre>
 * request: deadline (Thresher-Deadline-Ms, default limits.callDeadlineMs, at most limits.maxCallDeadlineMs)
 *   -> a handler thread: one of limits.handlerConcurrency; none free within limits.admissionWaitMs   CELL_UNAVAILABLE
 *   -> the binding's current version, kind http (the node's ControlCache: until a notification or poll) UNKNOWN_BINDING
 *   -> its routes: the one matching method and path                                                404 / 405
 *   -> the request encoded (HttpRequestCodec), the handler's cell: handle(req_len) within the deadline and budgets.runMs
 *        call(descriptor, args): the call API, on the coordinator's threads; this thread waits, to the deadline
 *   -> the response the guest built, or its typed failure
 * </pre>
 *
 * The handler thread only waits while the nested call runs: the call plans and reduces on the coordinator's own
 * threads and its shard runs on the leaders' shard pools, none of which a handler holds, so handlers waiting cannot
 * starve the calls they wait for. A nested call goes through the node's front-door call service, so a stopping node
 * refuses it as it refuses any new call, and counts it among the calls it waits for.
 */
public final class HttpHandlers implements HandlerService, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HttpHandlers.class);
    /** A call descriptor: a binding's name, optionally pinned to a version. */
    private static final Pattern DESCRIPTOR = Pattern.compile("([A-Za-z_][A-Za-z0-9_]{0,62})(?:@([1-9][0-9]{0,8}))?");

    private final String hostId;
    private final ControlCache catalog;
    private final ComponentCache components;
    private final CellHost cells;
    private final CallService calls;
    private final Limits limits;
    private final ThreadPoolExecutor threads;
    /** Each handler's routes and budgets as parsed from its current version's manifest, kept while it stays current. */
    private final ConcurrentHashMap<String, Handler> parsed = new ConcurrentHashMap<>();
    private final InFlight inFlight = new InFlight();
    private final AtomicBoolean admitting = new AtomicBoolean(true);

    /** A handler binding's current version, its manifest parsed. */
    private record Handler(String name, int version, String componentDigest, RouteTable routes, Budgets budgets) {
    }

    /**
     * @param catalog the node's cache of the control database, read for handler bindings; a request waits for a read
     *     no longer than its deadline ({@code DbDeadline})
     * @param calls the node's front-door call service: nested calls are calls like any other
     */
    private final dev.thresher.bindings.access.AccessService access;

    public HttpHandlers(String hostId, ControlCache catalog, ComponentCache components, CellHost cells, CallService calls,
                 Limits limits) {
        this(hostId, catalog, components, cells, calls, limits, null);
    }

    /**
     * As above, a nested call checked against the grants of the request's user in {@code access} (null: not checked):
     * a handler calls only what the user calling it may call.
     */
    public HttpHandlers(String hostId, ControlCache catalog, ComponentCache components, CellHost cells, CallService calls,
                 Limits limits, dev.thresher.bindings.access.AccessService access) {
        this.access = access;
        this.hostId = hostId;
        this.catalog = catalog;
        this.components = components;
        this.cells = cells;
        this.calls = calls;
        this.limits = limits;
        this.threads = new ThreadPoolExecutor(limits.handlerConcurrency(), limits.handlerConcurrency(), 60, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), Thread.ofPlatform().name(hostId + "-handler-", 0).daemon().factory());
        threads.allowCoreThreadTimeOut(true);
    }

    @Override
    public CompletableFuture<HandlerResponse> handle(HandlerRequest request) {
        return inFlight.track(() -> {
            if (!admitting.get()) {
                return CompletableFuture.failedFuture(new ThresherException(ErrorCode.HOST_UNREACHABLE, "node " + hostId
                        + " is stopping and takes no new requests; send it to another node"));
            }
            long deadlineMs = request.deadlineMs().orElse(limits.callDeadlineMs());
            if (deadlineMs <= 0 || deadlineMs > limits.maxCallDeadlineMs()) {
                return CompletableFuture.failedFuture(new ThresherException(ErrorCode.INVALID_DEADLINE, "a request deadline is 1.."
                        + limits.maxCallDeadlineMs() + " ms, was " + deadlineMs));
            }
            long now = System.nanoTime();
            Deadline deadline = Deadline.afterMillis(now, deadlineMs);
            CompletableFuture<HandlerResponse> answer = new CompletableFuture<>();
            AtomicBoolean started = new AtomicBoolean();
            try {
                threads.execute(() -> {
                    if (!started.compareAndSet(false, true)) {
                        return; // answered busy already
                    }
                    try {
                        answer.complete(run(request, deadline));
                    } catch (Throwable t) {
                        answer.completeExceptionally(t);
                    }
                });
            } catch (RejectedExecutionException e) {
                return CompletableFuture.failedFuture(new ThresherException(ErrorCode.HOST_UNREACHABLE, "node " + hostId
                        + " is stopping and takes no new requests; send it to another node"));
            }
            boolean untilDeadline = deadline.remainingMillis() <= limits.admissionWaitMs();
            long waitMs = Math.min(limits.admissionWaitMs(), deadline.remainingMillis());
            CompletableFuture.delayedExecutor(waitMs, TimeUnit.MILLISECONDS).execute(() -> {
                if (started.compareAndSet(false, true)) {
                    answer.completeExceptionally(untilDeadline
                            ? new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the request's deadline passed while it"
                                    + " waited for a handler thread; no guest code ran").beforeGuestCode()
                            : new ThresherException(ErrorCode.CELL_UNAVAILABLE, "this node runs "
                                    + limits.handlerConcurrency() + " handler invocations already"
                                    + " (limits.handlerConcurrency) and none ended within limits.admissionWaitMs ("
                                    + limits.admissionWaitMs() + " ms); retry, or send it to another node").beforeGuestCode());
                }
            });
            return answer;
        });
    }

    /** Runs one request on this (handler) thread; its database waits end at its deadline. */
    private HandlerResponse run(HandlerRequest request, Deadline deadline) {
        try (DbDeadline scope = DbDeadline.enter(deadline)) {
            return runWithin(request, deadline);
        }
    }

    private HandlerResponse runWithin(HandlerRequest request, Deadline deadline) {
        deadline.check("before the request was handled");
        Handler h = handler(request.tenant(), request.binding());
        RouteTable.Match match = h.routes().match(request.method(), request.path());
        String where = request.method() + " /v1/http/" + request.binding() + request.path();
        if (match instanceof RouteTable.NoRoute) {
            throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "no route of HTTP handler " + h.name() + " matches "
                    + where + "; its routes are " + h.routes().routes(), new RouteRefusal(Set.of()));
        }
        if (match instanceof RouteTable.MethodNotAllowed m) {
            throw new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "HTTP handler " + h.name() + " serves "
                    + request.path() + " for " + String.join(", ", m.allowed()) + ", not " + request.method(),
                    new RouteRefusal(m.allowed()));
        }
        RouteTable.Matched matched = (RouteTable.Matched) match;
        byte[] encoded = HttpRequestCodec.encode(new HttpRequestCodec.Request(matched.index(), request.method(),
                request.path().isEmpty() ? "/" : request.path(), matched.route().path(), pairs(matched.parameters()),
                UrlEncoding.queryParameters(request.rawQuery()), passed(matched.route(), request.headers()), request.body()));
        Component component = components.get(h.componentDigest());
        Deadline run = h.budgets().runDeadline(deadline);
        HandlerOutcome outcome;
        try {
            outcome = cells.handle(component, encoded, run, new Nested(request));
        } catch (RuntimeException e) {
            // the handler's guest code ran unless the cell host proves it did not: a new request runs it again
            ThresherException failed = ThresherException.of(h.budgets().overRunBudget(e, deadline, "handle"));
            throw CellHost.refusedBeforeGuest(e) ? failed.beforeGuestCode() : failed.afterGuestCode();
        }
        return new HandlerResponse(outcome.status(), outcome.headers(), outcome.body());
    }

    private static List<Map.Entry<String, String>> pairs(Map<String, String> m) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        m.forEach((k, v) -> out.add(HttpRequestCodec.Request.pair(k, v)));
        return out;
    }

    /** The request headers a route's handler is given, in request order. */
    private static List<Map.Entry<String, String>> passed(Route route, List<Map.Entry<String, String>> headers) {
        List<String> names = route.passedHeaders();
        List<Map.Entry<String, String>> out = new ArrayList<>();
        for (Map.Entry<String, String> h : headers) {
            if (names.contains(h.getKey())) {
                out.add(h);
            }
        }
        return out;
    }

    /**
     * The current version of an HTTP handler binding, as the node's {@link ControlCache} holds it (so a redeploy is
     * served as soon as its notification arrives on this node, and within {@code limits.topologyPollMs} whatever
     * happened to it), its manifest parsed once per version.
     *
     * @throws ThresherException {@link ErrorCode#UNKNOWN_BINDING} when there is no such binding or it is a
     *     distributed call's
     */
    private Handler handler(String tenant, String name) {
        String key = tenant + "/" + name;
        BindingCatalog.Current current = catalog.currentVersion(tenant, name).orElse(null);
        if (current == null) {
            parsed.remove(key);
            throw new ThresherException(ErrorCode.UNKNOWN_BINDING, "there is no HTTP handler " + Quoted.of(name)
                    + " for tenant '" + Quoted.of(tenant) + "'");
        }
        if (!current.handler() || current.manifest() == null) {
            parsed.remove(key);
            throw new ThresherException(ErrorCode.UNKNOWN_BINDING, "binding " + name + " is a distributed call, not"
                    + " an HTTP handler: call it with POST /v1/bindings/" + name + "/call");
        }
        Handler known = parsed.get(key);
        if (known != null && known.version() == current.version()) {
            return known;
        }
        Manifest m = Manifest.parse(current.manifest().getBytes(StandardCharsets.UTF_8));
        Budgets b = current.budgets();
        Handler h = new Handler(name, current.version(), current.packageDigest(), new RouteTable(m.routes()),
                new Budgets(b.runMs(), b.memoryBytes(), 0, 0, 0, b.moduleBytes()));
        parsed.put(key, h);
        return h;
    }

    /** A handler's nested calls, through the node's call service; what the guest reads of each. */
    private final class Nested implements NestedCalls {
        private final HandlerRequest request;

        Nested(HandlerRequest request) {
            this.request = request;
        }

        @Override
        public Outcome call(String descriptor, String argumentsJson, Deadline deadline) {
            Matcher d = DESCRIPTOR.matcher(descriptor);
            if (!d.matches()) {
                return refused(new ThresherException(ErrorCode.INVALID_ARGUMENTS, "call descriptor '" + descriptor
                        + "' is not a binding's name, or name@version"));
            }
            long ms = Math.min(deadline.remainingMillis(), limits.maxCallDeadlineMs());
            if (ms <= 0) {
                return refused(new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the request's deadline passed before"
                        + " its nested call of " + d.group(1) + " was made").beforeGuestCode());
            }
            if (access != null && !request.principal().equals(dev.thresher.http.HttpAccess.ADMIN_TOKEN_USER)) {
                try {
                    access.principal(request.principal()).orElseThrow(() -> new ThresherException(
                            ErrorCode.PERMISSION_DENIED, "permission denied: the request's user no longer exists"))
                            .checkCall(d.group(1));
                } catch (ThresherException e) {
                    return refused(e.beforeGuestCode());
                }
            }
            CallRequest call = new CallRequest(request.tenant(), request.principal(), d.group(1), argumentsJson,
                    Optional.of(ms));
            if (d.group(2) != null) {
                call = call.pinned(Integer.parseInt(d.group(2)));
            }
            CompletableFuture<CallResult> future;
            try {
                future = calls.call(call);
            } catch (RuntimeException e) {
                return refused(ThresherException.of(e));
            }
            try {
                CallResult r = future.get(Math.max(0, deadline.remainingNanos()), TimeUnit.NANOSECONDS);
                return new Outcome(0, r.resultJson().getBytes(StandardCharsets.UTF_8), null);
            } catch (TimeoutException e) {
                return refused(new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "the nested call of " + d.group(1)
                        + " did not finish within the request's deadline").afterGuestCode());
            } catch (ExecutionException e) {
                return refused(ThresherException.of(e.getCause()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                log.debug("handler thread interrupted while its nested call of {} ran", d.group(1));
                return refused(new ThresherException(ErrorCode.HOST_UNREACHABLE, "node " + hostId
                        + " stopped while the nested call of " + d.group(1) + " ran").afterGuestCode());
            }
        }

        @Override
        public Outcome refused(ThresherException failure) {
            return new Outcome(failure.code().code(), ErrorJson.of(failure).getBytes(StandardCharsets.UTF_8), failure);
        }
    }

    /** From now on every request is refused with {@code HOST_UNREACHABLE} (retryable: nothing ran). */
    public void stopAdmitting() {
        admitting.set(false);
    }

    /** Requests admitted whose answer the front door has not been handed yet. */
    public int inFlight() {
        return inFlight.get();
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
