package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.limits.Limits;
import dev.thresher.server.node.NodeConfig;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The files the release tarball ships beside the code say what the code does: the example node configuration names
 * every key a node reads, each limit at its default, and is a configuration a node accepts; the systemd unit of
 * docs/deployment.md is the one shipped.
 */
class ReleaseFilesTest {
    private static final Path EXAMPLE = Path.of("..", "dist", "src", "conf", "node.properties.example");
    private static final Path UNIT = Path.of("..", "dist", "src", "conf", "thresher-node@.service");
    private static final Path PAGE = Path.of("..", "docs", "deployment.md");

    @Test
    void exampleConfigurationNamesEveryKeyOnceAndEveryLimitAtItsDefault() throws Exception {
        List<String> lines = Files.readAllLines(EXAMPLE);
        for (String key : NodeConfig.keys()) {
            assertThat(lines.stream().filter(l -> l.startsWith(key + "=") || l.startsWith("#" + key + "=")))
                    .as("%s in the example configuration", key).hasSize(1);
        }
        assertThat(lines.stream().filter(l -> l.matches("#?[a-zA-Z.]+=.*"))
                .map(l -> l.replaceFirst("^#", "").replaceFirst("=.*", "")))
                .as("keys of the example configuration").allMatch(NodeConfig.keys()::contains);
        for (var limit : Limits.DEFAULTS.asMap().entrySet()) {
            assertThat(lines).as("limits.%s at its default", limit.getKey())
                    .contains("#limits." + limit.getKey() + "=" + limit.getValue());
        }
    }

    @Test
    void exampleConfigurationIsOneANodeAccepts() throws Exception {
        Properties p = new Properties();
        p.load(new StringReader(Files.readString(EXAMPLE)));
        Map<String, String> map = new HashMap<>();
        p.stringPropertyNames().forEach(k -> map.put(k, p.getProperty(k)));
        NodeConfig config = NodeConfig.fromProperties(map);
        assertThat(config.limits()).isEqualTo(Limits.DEFAULTS);
        assertThat(List.of(config.pgwirePort(), config.httpPort(), config.wirePort()))
                .as("the example's ports are the defaults").isEqualTo(List.of(5433, 8433, 7433));
        assertThat(config.failpointsEnabled()).isFalse();
    }

    @Test
    void deploymentPageShowsTheShippedUnit() throws Exception {
        String page = Files.readString(PAGE);
        String unit = Files.readString(UNIT);
        assertThat(page).contains("```ini\n" + unit + "```\n");
    }
}
