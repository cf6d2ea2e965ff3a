package dev.thresher.server.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class MainTest {

    @Test
    void everyCommandAndSubcommandAnswersHelpWithItsUsage() {
        CommandLine root = Main.commandLine();
        for (List<String> command : List.of(List.of("--help"), List.of("table", "--help"),
                List.of("table", "create", "--help"), List.of("partition", "move", "--help"),
                List.of("node", "drain", "--help"), List.of("shard", "add", "--help"), List.of("topology", "changes", "--help"),
                List.of("component", "test", "--help"), List.of("binding", "rollback", "--help"),
                List.of("journal", "--help"), List.of("journal", "ls", "--help"), List.of("journal", "show", "--help"))) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine cl = Main.commandLine();
            cl.setOut(new PrintWriter(out));
            cl.setErr(new PrintWriter(err));
            int exit = cl.execute(command.toArray(String[]::new));
            assertThat(exit).as("%s exits 0", command).isZero();
            assertThat(out.toString()).as("%s prints its usage", command).contains("Usage: thresher");
            assertThat(err.toString()).as("%s complains of nothing", command).isEmpty();
        }
        assertThat(root.getSubcommands()).containsKeys("partition", "leader", "shard", "topology", "node", "journal");
    }
}
