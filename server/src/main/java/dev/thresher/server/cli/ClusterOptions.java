package dev.thresher.server.cli;

import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.dev.DevCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Where the cluster's control database is: a dev cluster's directory, or a JDBC URL and credentials. */
final class ClusterOptions {
    @Option(names = "--dev", defaultValue = ".thresher/dev",
            description = "A running dev cluster's directory (default ${DEFAULT-VALUE}); its endpoints.json names the databases.")
    Path dev;

    @Option(names = "--control-url", defaultValue = "${env:THRESHER_CONTROL_URL}",
            description = "The control database (JDBC URL; default $THRESHER_CONTROL_URL); overrides --dev.")
    String controlUrl;

    @Option(names = "--db-user", defaultValue = "${env:THRESHER_DB_USER}", description = "Database user (default $THRESHER_DB_USER).")
    String user;

    @Option(names = "--db-password", defaultValue = "${env:THRESHER_DB_PASSWORD}",
            description = "Database password (default $THRESHER_DB_PASSWORD).")
    String password;

    @Option(names = "--tenant", defaultValue = DevCluster.TENANT, description = "Tenant (default ${DEFAULT-VALUE}).")
    String tenant;

    /**
     * The dev cluster's endpoints file: under {@code --dev}; when that is the default and holds none, under the
     * nearest directory above the working one that has a running dev cluster's, so the commands work from a
     * project directory inside the repository too.
     */
    Path devEndpoints() {
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

    TableAdmin admin() throws IOException {
        String url = controlUrl;
        String u = user;
        String pw = password;
        if (url == null || url.isBlank()) {
            Path endpoints = devEndpoints();
            if (!Files.exists(endpoints)) {
                throw new IllegalArgumentException("no control database: pass --control-url, or start ./thresher dev"
                        + " (no " + endpoints + ")");
            }
            var tree = new com.fasterxml.jackson.databind.ObjectMapper().readTree(endpoints.toFile());
            url = tree.path("postgres").path("control").asText();
            u = u != null ? u : tree.path("user").asText(null);
            pw = pw != null ? pw : tree.path("password").asText(null);
        }
        return new TableAdmin(url, u, pw, System.out);
    }
}
