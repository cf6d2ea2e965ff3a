package dev.thresher.server.cli;

import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.CsvLoader;
import dev.thresher.server.admin.TableAdmin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "load", description = "Load a CSV file into a table, each row to the shard its key's slot names.")
final class LoadCommand extends AdminCommand {
    @Parameters(index = "0", description = "Table name.")
    String table;

    @Parameters(index = "1", description = "The CSV file (RFC 4180; UTF-8).")
    Path file;

    @Option(names = "--header", description = "The first line names the columns.")
    boolean header;

    @Override
    void run(TableAdmin admin) throws IOException {
        try (var in = Files.newBufferedReader(file, java.nio.charset.StandardCharsets.UTF_8)) {
            CsvLoader.Loaded loaded = new CsvLoader(admin, System.err).load(cluster.tenant, table, in, header);
            System.out.printf("loaded %,d rows into %s in %,d ms (%s)%n", loaded.rows(), table, loaded.millis(),
                    loaded.rowsByShard().entrySet().stream().map(e -> "shard " + e.getKey() + ": " + e.getValue())
                            .collect(java.util.stream.Collectors.joining(", ")));
        } catch (ThresherException e) {
            if (e.code() == dev.thresher.errors.ErrorCode.STORE_UNAVAILABLE) {
                throw e; // says itself what was committed
            }
            throw new ThresherException(e.code(), e.getMessage() + "; nothing was loaded", e);
        }
    }
}
