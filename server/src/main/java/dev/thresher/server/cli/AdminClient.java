package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The one way the command line reaches a running cluster: a node's admin HTTP API ({@code /admin/...}), with the
 * admin token. The node is {@code --node URL}, else the nodes of a running dev cluster's {@code endpoints.json}
 * (under {@code --dev}), tried in turn until one answers; the token is {@code $THRESHER_HTTP_ADMINTOKEN}, else the
 * dev cluster's. A read goes to the next node when one cannot be reached; a change only when the connection was
 * refused (it was never sent), so no change is made twice.
 *
 * <p>An answer that is not 2xx is thrown as the {@link ThresherException} its JSON error names (code and message), so
 * a command fails with the node's own words.
 */
class AdminClient {
    static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--node", defaultValue = "${env:THRESHER_NODE}", description = "A node's HTTP address"
            + " (http://host:port; default $THRESHER_NODE, else the nodes of the dev cluster under --dev, in turn). Its admin"
            + " token is $THRESHER_HTTP_ADMINTOKEN (default: the dev cluster's).")
    String node;

    @Option(names = "--dev", defaultValue = ".thresher/dev",
            description = "A running dev cluster's directory (default ${DEFAULT-VALUE}); its endpoints.json names the"
                    + " nodes and their admin token.")
    Path dev;

    /**
     * The dev cluster's {@code endpoints.json}: under {@code --dev}; when that is the default and holds none, under the
     * nearest directory above the working one that has a running dev cluster's, so the commands work from a project
     * directory inside the repository too.
     */
    Path endpoints() {
        Path endpoints = dev.resolve("endpoints.json");
        if (Files.exists(endpoints) || dev.isAbsolute() || !dev.equals(Path.of(".thresher/dev"))) {
            return endpoints;
        }
        for (Path d = Path.of("").toAbsolutePath().getParent(); d != null; d = d.getParent()) {
            Path up = d.resolve(dev).resolve("endpoints.json");
            if (Files.exists(up)) {
                return up;
            }
        }
        return endpoints;
    }

    String token() throws IOException {
        String env = System.getenv("THRESHER_HTTP_ADMINTOKEN");
        if (env != null && !env.isBlank()) {
            return env.trim();
        }
        Path endpoints = endpoints();
        if (Files.exists(endpoints)) {
            String t = JSON.readTree(endpoints.toFile()).path("token").asText("");
            if (!t.isEmpty()) {
                return t;
            }
        }
        throw new IllegalArgumentException("no admin token: set THRESHER_HTTP_ADMINTOKEN to the node's http.adminToken"
                + (node == null ? ", or start ./thresher dev (no token in " + endpoints + ")" : ""));
    }

    List<String> nodes() throws IOException {
        if (node != null && !node.isBlank()) {
            return List.of(node.endsWith("/") ? node.substring(0, node.length() - 1) : node);
        }
        Path endpoints = endpoints();
        if (!Files.exists(endpoints)) {
            throw new IllegalArgumentException("no node to ask: pass --node http://host:port, or start ./thresher dev"
                    + " (no " + endpoints + ")");
        }
        List<String> out = new ArrayList<>();
        JSON.readTree(endpoints.toFile()).path("http").forEach(n -> out.add(n.asText()));
        if (out.isEmpty()) {
            throw new IllegalArgumentException(endpoints + " names no node's HTTP address; pass --node http://host:port");
        }
        return out;
    }

    /** {@code GET path?query} (null values left out). */
    JsonNode get(String path, Map<String, String> query) throws IOException, InterruptedException {
        StringBuilder qs = new StringBuilder();
        query.forEach((k, v) -> {
            if (v != null) {
                qs.append(qs.isEmpty() ? "?" : "&").append(k).append('=').append(URLEncoder.encode(v, StandardCharsets.UTF_8));
            }
        });
        return send("GET", path + qs, null, null);
    }

    JsonNode post(String path, Object body) throws IOException, InterruptedException {
        return send("POST", path, HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body), StandardCharsets.UTF_8),
                "application/json");
    }

    /** {@code POST path} with a file as the body, sent as it is read ({@code text/csv}: a table's rows). */
    JsonNode postFile(String path, Path file) throws IOException, InterruptedException {
        if (!Files.isReadable(file)) {
            throw new IllegalArgumentException("cannot read " + file);
        }
        return send("POST", path, HttpRequest.BodyPublishers.ofFile(file), "text/csv; charset=utf-8");
    }

    JsonNode delete(String path) throws IOException, InterruptedException {
        return send("DELETE", path, null, null);
    }

    /** A path segment (a table's or binding's name) as the URL carries it. */
    static String segment(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** {@code GET path}: the answer's JSON text as the node wrote it. */
    String getText(String path) throws IOException, InterruptedException {
        return exchange("GET", path, null, null);
    }

    private JsonNode send(String method, String pathAndQuery, HttpRequest.BodyPublisher body, String contentType)
            throws IOException, InterruptedException {
        String text = exchange(method, pathAndQuery, body, contentType);
        try {
            return JSON.readTree(text);
        } catch (IOException e) {
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, "the node answered " + method + " " + pathAndQuery
                    + " with no JSON: " + text);
        }
    }

    private String exchange(String method, String pathAndQuery, HttpRequest.BodyPublisher body, String contentType)
            throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        String token = token();
        List<String> nodes = nodes();
        IOException unreachable = null;
        for (String base : nodes) {
            URI uri;
            try {
                uri = URI.create(base + pathAndQuery);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("not an HTTP address: " + base);
            }
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).header("Authorization", "Bearer " + token);
            if (method.equals("GET")) {
                // a read waits as long as a read takes; a change (a move copies rows) as long as it takes
                request.timeout(Duration.ofSeconds(30));
            }
            request.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : body);
            if (body != null) {
                request.header("Content-Type", contentType);
            }
            HttpResponse<String> r;
            try {
                r = client.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            } catch (IOException e) {
                // refused, timed out, cut: the next node may answer a read, and a change that was never sent
                if (!method.equals("GET") && !(e instanceof ConnectException)) {
                    throw new ThresherException(ErrorCode.HOST_UNREACHABLE, base + " did not answer " + method + " "
                            + pathAndQuery + " (" + e + "); it may have been made: look before asking again");
                }
                unreachable = e;
                continue;
            }
            if (r.statusCode() / 100 != 2) {
                JsonNode answer;
                try {
                    answer = JSON.readTree(r.body());
                } catch (IOException e) {
                    throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, base + " answered " + r.statusCode()
                            + " with no JSON: " + r.body());
                }
                JsonNode error = answer.path("error");
                throw new ThresherException(ErrorCode.ofCode(error.path("code").asInt(9001)),
                        error.path("message").asText(base + " answered " + r.statusCode()));
            }
            return r.body();
        }
        throw new ThresherException(ErrorCode.HOST_UNREACHABLE, "no node answered (" + String.join(", ", nodes)
                + "): " + unreachable);
    }
}
