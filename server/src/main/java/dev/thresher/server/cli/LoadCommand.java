package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.file.Path;
import java.util.TreeMap;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code thresher load}: sends a CSV file to a node ({@code POST /admin/tables/{name}/rows}), which routes each row to
 * the shard its key's slot names; the file streams through, so it may be of any size.
 */
@Command(name = "load", description = "Load a CSV file into a table, each row to the shard its key's slot names.")
final class LoadCommand extends NodeAdminCommand {
    @Parameters(index = "0", description = "Table name.")
    String table;

    @Parameters(index = "1", description = "The CSV file (RFC 4180; UTF-8).")
    Path file;

    @Option(names = "--header", description = "The first line names the columns.")
    boolean header;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    void run(AdminClient node) throws Exception {
        JsonNode loaded;
        try {
            loaded = node.postFile(TableCommand.path(table) + "/rows?header=" + header, file);
        } catch (ThresherException e) {
            if (e.code() == ErrorCode.STORE_UNAVAILABLE || e.code() == ErrorCode.HOST_UNREACHABLE) {
                throw e; // says itself what was committed
            }
            throw new ThresherException(e.code(), e.getMessage() + "; nothing was loaded", e);
        }
        TreeMap<Integer, Long> byShard = new TreeMap<>();
        loaded.path("rowsByShard").properties().forEach(e -> byShard.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
        spec.commandLine().getOut().printf("loaded %,d rows into %s in %,d ms (%s)%n", loaded.path("rows").asLong(), table,
                loaded.path("millis").asLong(), byShard.entrySet().stream()
                        .map(e -> "shard " + e.getKey() + ": " + e.getValue()).collect(Collectors.joining(", ")));
    }
}
