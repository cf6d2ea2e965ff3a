package dev.thresher.server.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine;

/**
 * A command run against a running cluster through a node's admin HTTP API ({@link AdminClient}): it acts in the
 * tenant of the token it is given (the node's admin token: the node's tenant).
 */
abstract class NodeAdminCommand implements Callable<Integer> {
    @CommandLine.Mixin
    AdminClient node;

    abstract void run(AdminClient node) throws Exception;

    @Override
    public final Integer call() throws Exception {
        run(node);
        return 0;
    }

    /** Who an admin command acts as, for the record of who deployed or changed what: the operating system's user. */
    static String operator() {
        return "cli:" + System.getProperty("user.name", "unknown");
    }
}
