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
 * Completes on another thread, as a real coordinator would.
 */
final class TestCallService implements CallService {
    static final String RESULT = "{\"total\": 42, \"unit\": \"€\"}";

    final List<CallRequest> requests = new CopyOnWriteArrayList<>();
    private final Executor executor = CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS);

    @Override
    public CompletableFuture<CallResult> call(CallRequest request) {
        requests.add(request);
        return CompletableFuture.supplyAsync(() -> {
            if (request.bindingName().equals("echo")) {
                return new CallResult("call-" + requests.size(), request.argumentsJson());
            }
            for (ErrorCode code : ErrorCode.values()) {
                if (code.name().equals(request.bindingName().toUpperCase(Locale.ROOT))) {
                    throw new ThresherException(code, "test failure " + code);
                }
            }
            return new CallResult("call-" + requests.size(), RESULT);
        }, executor);
    }
}
