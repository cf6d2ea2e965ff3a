package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.server.node.Node;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The node's page for people, loaded in headless Chromium (Debian's {@code chromium}, which {@code .ci/run}
 * installs): the list of recent invocations, and a real call's timeline of slots. Screenshots are saved under
 * {@code tests/target/ui/}.
 */
class UiIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path SHOTS = Path.of("target", "ui");

    /** Chromium's rendering of {@code url} after its scripts ran, and a screenshot of it in {@code shot}. */
    private static String render(String url, Path shot) throws Exception {
        Files.createDirectories(SHOTS);
        Path profile = Files.createTempDirectory("thresher-ui-chromium-");
        List<String> base = List.of(chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + profile,
                "--window-size=1400,1000", "--virtual-time-budget=10000");
        List<String> dump = new ArrayList<>(base);
        dump.addAll(List.of("--dump-dom", url));
        String dom = run(dump);
        List<String> screenshot = new ArrayList<>(base);
        screenshot.addAll(List.of("--screenshot=" + shot.toAbsolutePath(), url));
        run(screenshot);
        assertThat(shot).as("the screenshot").exists();
        assertThat(Files.size(shot)).isPositive();
        return dom;
    }

    private static String chromium() {
        for (String c : List.of("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")) {
            if (Files.isExecutable(Path.of(c))) {
                return c;
            }
        }
        throw new AssertionError("no Chromium: .ci/run installs Debian's chromium package");
    }

    private static String run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(90, TimeUnit.SECONDS)).as("chromium finished").isTrue();
        return new String(out, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static String call(Node n, String body) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create(n.httpAddress() + "/v1/bindings/revenue_by_region/call"))
                .header("Authorization", "Bearer " + Cluster.get().adminToken()).POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).path("call_id").asText();
    }

    /** The one section of the page that is not hidden. */
    private static String shown(String dom) {
        Matcher m = Pattern.compile("<section id=\"(\\w+)\"( hidden(=\"\")?)?>").matcher(dom);
        List<String> visible = new ArrayList<>();
        while (m.find()) {
            if (m.group(2) == null) {
                visible.add(m.group(1));
            }
        }
        assertThat(visible).as("visible sections").hasSize(1);
        return visible.get(0);
    }

    private static int count(String haystack, String needle) {
        Matcher m = Pattern.compile(Pattern.quote(needle)).matcher(haystack);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    @Test
    void thePageListsRecentInvocationsAndShowsARealCallsTimelineOfSlots() throws Exception {
        DevCluster c = Cluster.get();
        Node n = c.nodes().get(0);
        String callId = call(n, "{}");
        int slots = c.options().partitions();

        String list = render(n.httpAddress() + "/ui/#token=" + c.adminToken(), SHOTS.resolve("invocations.png"));
        assertThat(shown(list)).isEqualTo("list");
        assertThat(list).contains(callId).contains("succeeded");

        String detail = render(n.httpAddress() + "/ui/#call=" + callId + "&token=" + c.adminToken(),
                SHOTS.resolve("timeline.png"));
        assertThat(shown(detail)).isEqualTo("detail");
        assertThat(detail).contains("Call " + callId).contains("revenue_by_region");
        assertThat(count(detail, "class=\"lane\"")).as("a lane per slot and one for reduce").isEqualTo(slots + 1);
        for (String phase : List.of("dispatch", "read", "guest", "publish", "reduce")) {
            assertThat(detail).as("bars of phase %s", phase).contains("data-phase=\"" + phase + "\"");
        }
        assertThat(detail).doesNotContain("class=\"lane failed\"");

        // without the token the page asks for it and shows nothing of the journal
        String login = render(n.httpAddress() + "/ui/", SHOTS.resolve("login.png"));
        assertThat(shown(login)).isEqualTo("login");
        assertThat(login).doesNotContain(callId);
    }
}
