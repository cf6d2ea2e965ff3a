package dev.thresher.server.cli;

import dev.thresher.server.admin.TableAdmin;
import java.util.concurrent.Callable;
import picocli.CommandLine;

/** A command run against the cluster's control database: opens the admin, runs, closes it. */
abstract class AdminCommand implements Callable<Integer> {
    @CommandLine.Mixin
    ClusterOptions cluster;

    abstract void run(TableAdmin admin) throws Exception;

    @Override
    public final Integer call() throws Exception {
        try (TableAdmin admin = cluster.admin()) {
            run(admin);
            return 0;
        }
    }

}
