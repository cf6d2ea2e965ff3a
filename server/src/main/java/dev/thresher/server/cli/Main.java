package dev.thresher.server.cli;

import dev.thresher.errors.ThresherException;
import picocli.CommandLine.Command;
import picocli.CommandLine;

/** The {@code thresher} command line. */
@Command(name = "thresher", mixinStandardHelpOptions = true, version = "thresher 0.1.0",
        description = "A distributed map-reduce call runtime over partitioned PostgreSQL data.",
        subcommands = {DevCommand.class, NodeCommand.class, SlotCommand.class, TableCommand.class, LoadCommand.class,
                DeployCommand.class, BindingCommand.class, ComponentCommand.class, TopologyCommand.class,
                PartitionCommand.class, LeaderCommand.class, ShardCommand.class, JournalCommand.class,
                UserCommand.class, UserCommand.GrantCommand.class, UserCommand.RevokeCommand.class})
public final class Main implements Runnable {
    public static void main(String[] args) {
        String format = System.getenv("THRESHER_LOG_FORMAT");
        if (format != null && !format.equals("text") && !format.equals("json")) {
            // logback would log nothing at all with an appender it does not know
            System.err.println("thresher: THRESHER_LOG_FORMAT is text or json, was '" + format + "'");
            System.exit(2);
        }
        System.exit(commandLine().execute(args));
    }

    /** The command line, every subcommand answering {@code --help} (and {@code --version}). */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        withHelp(cl);
        return cl
                .setExecutionExceptionHandler((e, cmd, parsed) -> {
                    if (e instanceof ThresherException || e instanceof IllegalArgumentException) {
                        // Expected refusals (a taken port, a bad setting) read as one line, not a stack trace.
                        cmd.getErr().println(cmd.getCommandSpec().qualifiedName() + ": " + e.getMessage());
                        return 1;
                    }
                    throw e;
                });
    }

    private static void withHelp(CommandLine cl) {
        for (CommandLine sub : cl.getSubcommands().values()) {
            sub.getCommandSpec().mixinStandardHelpOptions(true);
            withHelp(sub);
        }
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

}
