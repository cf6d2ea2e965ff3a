package dev.thresher.http;

import static dev.thresher.http.Wire.closedByServer;
import static dev.thresher.http.Wire.connect;
import static dev.thresher.http.Wire.get;
import static dev.thresher.http.Wire.read;
import static dev.thresher.http.Wire.send;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.TableService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A load's body ({@code POST /admin/tables/{name}/rows}) read as it arrives: larger than any other request may be,
 * framed by length or in chunks, after a {@code 100 Continue}; the connection carries the next request once the body
 * was read to its end, and closes when the answer came before it; a body that stops arriving fails the load.
 */
class HttpFrontUploadTest {
    /** What each load was given: its table, header flag, and the lines and bytes it read. */
    record Seen(String table, boolean header, long lines, long bytes) {}

    private final LinkedBlockingQueue<Seen> seen = new LinkedBlockingQueue<>();
    private HttpFront front;

    private HttpFront start(Limits limits) throws InterruptedException {
        TableService tables = (TableService) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {TableService.class}, (proxy, method, args) -> {
                    if (method.getName().equals("list")) {
                        return List.of();
                    }
                    if (!method.getName().equals("load")) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    return load((String) args[1], (Boolean) args[2], (InputStream) args[3]);
                });
        front = HttpFront.builder().listen("127.0.0.1", 0).tenant("t1").limits(limits).calls(Wire.StubCalls.echo())
                .tables(tables).start();
        return front;
    }

    /** Counts lines; a line {@code bad} fails the load at once, the rest of the body unread. */
    private TableService.Loaded load(String table, boolean header, InputStream in) {
        long lines = 0;
        long bytes = 0;
        StringBuilder line = new StringBuilder();
        byte[] buf = new byte[8192];
        try {
            for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                bytes += n;
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        if (line.toString().equals("bad")) {
                            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line " + (lines + 1) + ": bad");
                        }
                        lines++;
                        line.setLength(0);
                    } else if (line.length() < 8) {
                        line.append((char) buf[i]);
                    }
                }
            }
        } catch (IOException e) {
            seen.add(new Seen(table, header, -1, bytes));
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, e.getMessage());
        }
        seen.add(new Seen(table, header, lines, bytes));
        return new TableService.Loaded(lines, Map.of(1, lines), 1);
    }

    @AfterEach
    void stop() {
        if (front != null) {
            front.close();
        }
    }

    private static String head(String path, String framing) {
        return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: text/csv\r\n" + framing + "\r\n";
    }

    @Test
    void aBodyManyTimesThePayloadLimitIsReadAsItArrivesAndTheConnectionCarriesTheNextRequest() throws Exception {
        start(Wire.limits(Map.of("directCallPayloadBytes", "65536")));
        byte[] row = "12345,europe,19.50\n".getBytes(StandardCharsets.US_ASCII);
        int rows = 400_000; // 7.6 MB: over a hundred times the payload limit, and over the upload's buffer
        try (Socket s = connect(front)) {
            send(s, head("/admin/tables/sales/rows?header=true", "Content-Length: " + (long) rows * row.length + "\r\n"));
            OutputStream out = s.getOutputStream();
            for (int i = 0; i < rows; i++) {
                out.write(row);
            }
            out.flush();
            Wire.Response res = read(s);
            assertThat(res.status()).as(res.body()).isEqualTo(200);
            assertThat(res.json().path("rows").asLong()).isEqualTo(rows);
            assertThat(res.json().path("rowsByShard").path("1").asLong()).isEqualTo(rows);
            assertThat(res.header("connection")).isEqualToIgnoringCase("keep-alive");
            assertThat(seen.poll()).isEqualTo(new Seen("sales", true, rows, (long) rows * row.length));

            send(s, get("/admin/tables"));
            assertThat(read(s).status()).as("the next request on the same connection").isEqualTo(200);
        }
    }

    @Test
    void aChunkedBodyAfterAHundredContinueIsReadToItsEnd() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, head("/admin/tables/sales/rows", "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n"));
            Wire.Response proceed = read(s);
            assertThat(proceed.status()).isEqualTo(100);
            StringBuilder body = new StringBuilder();
            for (int i = 0; i < 3; i++) {
                String chunk = "1,a,2.5\n2,b,3.5\n";
                body.append(Integer.toHexString(chunk.length())).append("\r\n").append(chunk).append("\r\n");
            }
            send(s, body + "0\r\n\r\n");
            Wire.Response res = read(s);
            assertThat(res.status()).as(res.body()).isEqualTo(200);
            assertThat(res.json().path("rows").asLong()).isEqualTo(6);
            assertThat(seen.poll()).isEqualTo(new Seen("sales", false, 6, 48));
        }
    }

    @Test
    void aLoadRefusedBeforeItsBodyEndsIsAnsweredAndTheConnectionClosesOnceTheRestOfTheBodyWasRead() throws Exception {
        start(Limits.DEFAULTS); // the request timeout is 30 s: a close before it is the body's end
        int length = 3_000_000;
        byte[] start = "1,a,2\nbad\n".getBytes(StandardCharsets.US_ASCII);
        try (Socket s = connect(front)) {
            send(s, head("/admin/tables/sales/rows", "Content-Length: " + length + "\r\n"));
            send(s, start);
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.errorCode()).isEqualTo(ErrorCode.INVALID_ARGUMENTS.code());
            assertThat(res.json().at("/error/message").asText()).isEqualTo("line 2: bad");
            assertThat(res.header("connection")).isEqualToIgnoringCase("close");
            // a client still sending after the answer is not reset: the rest is read and dropped
            s.getOutputStream().write(new byte[length - start.length]);
            s.getOutputStream().flush();
            assertThat(closedByServer(s)).as("closed once the body ended").isTrue();
        }
    }

    @Test
    void aBodyThatStopsArrivingFailsTheLoadWithinTheRequestTimeout() throws Exception {
        start(Wire.limits(Map.of("httpRequestTimeoutMs", "400")));
        try (Socket s = connect(front)) {
            send(s, head("/admin/tables/sales/rows", "Content-Length: 1000\r\n"));
            send(s, "1,a,2\n");
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.json().at("/error/message").asText()).contains("the body stopped arriving")
                    .contains("400 ms");
            assertThat(closedByServer(s)).as("closed within the request timeout after the answer").isTrue();
        }
        assertThat(seen.poll()).isEqualTo(new Seen("sales", false, -1, 6));
    }

    @Test
    void anUploadWithAnUnknownHeaderFlagIsRefusedWithoutALoad() throws Exception {
        start(Limits.DEFAULTS);
        try (Socket s = connect(front)) {
            send(s, head("/admin/tables/sales/rows?header=yes", "Content-Length: 6\r\n") + "1,a,2\n");
            Wire.Response res = read(s);
            assertThat(res.status()).isEqualTo(400);
            assertThat(res.json().at("/error/message").asText()).isEqualTo("header is true or false, once");
        }
        assertThat(seen).isEmpty();
    }

    @Test
    void onlyALoadsPathStreams() {
        assertThat(TableRoutes.uploads(io.netty.handler.codec.http.HttpMethod.POST, "/admin/tables/sales/rows")).isTrue();
        for (String path : List.of("/admin/tables/rows", "/admin/tables//rows", "/admin/tables/a/b/rows",
                "/admin/tables/sales/rowsx", "/admin/tables/sales/migrations")) {
            assertThat(TableRoutes.uploads(io.netty.handler.codec.http.HttpMethod.POST, path)).as(path).isFalse();
        }
        assertThat(TableRoutes.uploads(io.netty.handler.codec.http.HttpMethod.PUT, "/admin/tables/sales/rows")).isFalse();
    }
}
