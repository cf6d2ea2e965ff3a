package dev.thresher.pgwire;

import dev.thresher.bindings.CallRequest;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * A call service for protocol tests: binding {@code echo} returns its arguments, a binding named like an
 * {@link ErrorCode} (any case) fails with that code, every other binding returns {@link #RESULT}.
 * Completes on another thread, as a real coordinator would, and like it tells the request's listener the
 * call id first ({@code call-<n>}, the id of the result). {@link #requests} keeps the requests without
 * their listeners, so they compare equal to requests built with the five-argument constructor.
 */
final class TestCallService implements CallService {
    static final String RESULT = "{\"total\": 42, \"unit\": \"€\"}";

    final List<CallRequest> requests = new CopyOnWriteArrayList<>();
    private final Executor executor = CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS);

    @Override
    public CompletableFuture<CallResult> call(CallRequest request) {
        requests.add(new CallRequest(request.tenant(), request.principal(), request.bindingName(),
                request.argumentsJson(), request.deadlineMs()));
        String callId = "call-" + requests.size();
        return CompletableFuture.supplyAsync(() -> {
            request.onRecorded().accept(callId);
            if (request.bindingName().equals("echo")) {
                return new CallResult(callId, request.argumentsJson());
            }
            for (ErrorCode code : ErrorCode.values()) {
                if (code.name().equals(request.bindingName().toUpperCase(Locale.ROOT))) {
                    throw new ThresherException(code, "test failure " + code);
                }
            }
            return new CallResult(callId, RESULT);
        }, executor);
    }
}
