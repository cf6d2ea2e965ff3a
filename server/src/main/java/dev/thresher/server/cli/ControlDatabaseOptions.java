package dev.thresher.server.cli;

import dev.thresher.server.admin.TableAdmin;
import picocli.CommandLine.Option;

/**
 * The control database itself, for the commands that may run before any node does (registering the first shard
 * databases, listing them): given, they work on it directly; not given, they ask a node as every admin command does.
 */
final class ControlDatabaseOptions {
    @Option(names = "--control-url", defaultValue = "${env:THRESHER_CONTROL_URL}",
            description = "Before any node runs: the control database (JDBC URL; default $THRESHER_CONTROL_URL), worked on"
                    + " directly instead of through a node.")
    String controlUrl;

    @Option(names = "--db-user", defaultValue = "${env:THRESHER_DB_USER}", description = "Database user (default $THRESHER_DB_USER).")
    String user;

    @Option(names = "--db-password", defaultValue = "${env:THRESHER_DB_PASSWORD}",
            description = "Database password (default $THRESHER_DB_PASSWORD).")
    String password;

    boolean given() {
        return controlUrl != null && !controlUrl.isBlank();
    }

    TableAdmin admin() {
        return new TableAdmin(controlUrl, user, password, System.out);
    }
}
