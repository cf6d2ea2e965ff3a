package dev.thresher.bindings;

import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * What the HTTP front door calls for a request under {@code /v1/http/<binding>/}: the node resolves the HTTP
 * handler binding, matches the request to one of its routes and runs the handler's {@code handle} (which may make
 * one nested distributed call through the call API). The future completes with the handler's response, or
 * exceptionally with a {@code dev.thresher.errors.ThresherException} carrying the typed cause. A request no route
 * serves fails {@code UNSUPPORTED_STATEMENT} with a {@link RouteRefusal} cause: answered 404 when no route matches
 * its path, 405 when only routes of other methods do. Implementations never block the calling thread.
 */
public interface HandlerService {
    CompletableFuture<HandlerResponse> handle(HandlerRequest request);

    /** Why no route served a request: none matched its path ({@code allowed} empty), or only these methods' did. */
    final class RouteRefusal extends RuntimeException {
        private final Set<String> allowed;

        public RouteRefusal(Set<String> allowed) {
            super(allowed.isEmpty() ? "no route matches the path" : "the path is served for " + allowed, null, false, false);
            this.allowed = java.util.Collections.unmodifiableSet(new java.util.LinkedHashSet<>(allowed));
        }

        /** The methods routes serve the path with; empty when no route matches it. */
        public Set<String> allowed() {
            return allowed;
        }
    }
}
