package dev.thresher.http;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The health probes, open to the peers {@link HttpAccess#openEndpoints} names:
 *
 * <pre>
 * GET /livez     200 {"status":"live"} while the process serves
 * GET /readyz    200 {"status":"ready"} once the node leads its partitions and serves calls,
 *                else 503 {"status":"not ready","reason":"..."}
 * </pre>
 */
final class HealthRoutes {
    private HealthRoutes() {
    }

    /** @param readiness why the node is not ready, empty when it is */
    static void register(RouteTable<Exchange.Route> routes, Supplier<Optional<String>> readiness) {
        routes.add(HttpMethod.GET, "/livez", x -> x.send(HttpResponseStatus.OK, "{\"status\":\"live\"}"));
        routes.add(HttpMethod.GET, "/readyz", x -> {
            Optional<String> why = readiness.get();
            x.send(why.isEmpty() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                    why.isEmpty() ? "{\"status\":\"ready\"}" : "{\"status\":\"not ready\",\"reason\":"
                            + Responses.quote(why.get()) + "}");
        });
    }
}
