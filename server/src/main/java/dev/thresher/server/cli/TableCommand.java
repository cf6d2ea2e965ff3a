package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/** {@code thresher table}: the node's {@code /admin/tables} routes, their tables printed as lines. */
@Command(name = "table", description = "Create, list, show and drop tables.",
        subcommands = {TableCommand.Create.class, TableCommand.ListTables.class, TableCommand.Show.class,
                TableCommand.Alter.class, TableCommand.Migrate.class, TableCommand.Drop.class})
final class TableCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    static String path(String table) {
        return "/admin/tables/" + AdminClient.segment(table);
    }

    @Command(name = "create", description = "Create a table on the shard databases, partitioned by its key's slot.")
    static final class Create extends NodeAdminCommand {
        @Parameters(index = "0", description = "Table name (lower case).")
        String name;

        @Option(names = "--key", required = true, description = "The partition key column (smallint, integer, bigint, text, uuid or bytea).")
        String key;

        @Option(names = "--columns", required = true, description = "Columns, as in 'order_id bigint, region text not null, amount double precision not null'.")
        String columns;

        @Option(names = "--partitions", defaultValue = "16", description = "Partitions, tiling the 16384 slots (default ${DEFAULT-VALUE}).")
        int partitions;

        @Option(names = "--shards", split = ",", description = "Shard databases (ids or names) to spread the partitions"
                + " over, and to keep them on: the table is resident there, a move elsewhere is refused (default: all,"
                + " not pinned).")
        List<String> shards = new ArrayList<>();

        @Override
        void run(AdminClient node) throws Exception {
            List<Integer> ids = new ArrayList<>();
            if (!shards.isEmpty()) {
                Map<Integer, String> names = new LinkedHashMap<>();
                node.get("/admin/shards", Map.of()).forEach(sh -> names.put(sh.path("id").asInt(), sh.path("name").asText()));
                for (String s : shards) {
                    String t = s.strip();
                    ids.add(names.entrySet().stream().filter(e -> e.getValue().equals(t) || e.getKey().toString().equals(t))
                            .map(Map.Entry::getKey).findFirst().orElseThrow(() -> new ThresherException(
                                    ErrorCode.INVALID_CONFIGURATION, "there is no shard database " + t + "; the shards are "
                                    + names)));
                }
            }
            Map<String, Object> spec = new LinkedHashMap<>();
            spec.put("name", name);
            spec.put("key", key);
            spec.put("columns", columns);
            spec.put("partitions", partitions);
            spec.put("shards", ids);
            JsonNode created = node.post("/admin/tables", spec);
            Map<Integer, Integer> byShard = new TreeMap<>();
            created.path("partitions").forEach(p -> byShard.merge(p.path("shard").asInt(), 1, Integer::sum));
            byShard.forEach((shard, n) -> System.out.printf("shard %d: created %s with %d partitions%n", shard, name, n));
            System.out.printf("created table %s: %d partitions over shards %s%n", name, created.path("partitions").size(),
                    List.copyOf(byShard.keySet()));
        }
    }

    @Command(name = "list", description = "List the tables.")
    static final class ListTables extends NodeAdminCommand {
        @Override
        void run(AdminClient node) throws Exception {
            for (JsonNode t : node.get("/admin/tables", Map.of())) {
                TreeSet<Integer> shards = new TreeSet<>();
                t.path("partitions").forEach(p -> shards.add(p.path("shard").asInt()));
                System.out.println(String.format("%-24s key %-12s %3d partitions on shards %s%s", t.path("name").asText(),
                        t.path("keyColumn").asText() + " " + t.path("keyType").asText(), t.path("partitions").size(),
                        List.copyOf(shards), problem(t).map(p -> "  NOT TILING: " + p).orElse("")));
            }
        }
    }

    static java.util.Optional<String> problem(JsonNode table) {
        JsonNode p = table.path("tilingProblem");
        return p.isTextual() ? java.util.Optional.of(p.asText()) : java.util.Optional.empty();
    }

    @Command(name = "show", description = "Show a table's key and partitions with their leaders.")
    static final class Show extends NodeAdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @Override
        void run(AdminClient node) throws Exception {
            JsonNode t = node.get(path(name), Map.of());
            System.out.println("table " + name + ", key " + t.path("keyColumn").asText() + " " + t.path("keyType").asText());
            problem(t).ifPresent(p -> System.out.println("NOT TILING: " + p));
            for (JsonNode p : t.path("partitions")) {
                String leader = p.path("leader").asText("");
                System.out.println(String.format("  partition %-5d slots %5d..%-5d shard %d  epoch %d  leader %s",
                        p.path("id").asInt(), p.path("slotLo").asInt(), p.path("slotHi").asInt(), p.path("shard").asInt(),
                        p.path("epoch").asLong(), leader.isEmpty() ? "none" : leader));
            }
            System.out.println("schema migrations:");
            for (JsonNode m : t.path("migrations")) {
                StringBuilder line = new StringBuilder(String.format("  %-3d %-40s", m.path("version").asInt(),
                        m.path("description").asText()));
                JsonNode errors = m.path("errors");
                m.path("states").properties().forEach(e -> line.append("  shard ").append(e.getKey()).append(' ')
                        .append(e.getValue().asText()).append(errors.has(e.getKey())
                                ? " (" + errors.path(e.getKey()).asText() + ")" : ""));
                System.out.println(line);
            }
        }
    }

    @Command(name = "alter", description = "Change a table's schema on every shard database holding it, as its next"
            + " migration (per-shard status in table show).")
    static final class Alter extends NodeAdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @CommandLine.ArgGroup(exclusive = true, multiplicity = "1")
        Change change;

        static final class Change {
            @Option(names = "--add-column", description = "A column to add, as in 'discount double precision'.")
            String add;

            @Option(names = "--drop-column", description = "A column to drop (not the key).")
            String drop;
        }

        @Override
        void run(AdminClient node) throws Exception {
            JsonNode info = node.post(path(name) + "/migrations", change.add != null
                    ? Map.of("addColumn", change.add) : Map.of("dropColumn", change.drop));
            JsonNode migrations = info.path("migrations");
            if (!migrations.isEmpty()) {
                printStates(migrations.get(migrations.size() - 1));
            }
            exitIfFailed(info);
        }
    }

    @Command(name = "migrate", description = "Apply a table's pending and failed migrations again, in order, on each shard.")
    static final class Migrate extends NodeAdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @Override
        void run(AdminClient node) throws Exception {
            JsonNode info = node.post(path(name) + "/migrate", Map.of());
            info.path("migrations").forEach(TableCommand::printStates);
            exitIfFailed(info);
        }
    }

    /** Where a migration stands on each shard holding the table, one line a shard. */
    static void printStates(JsonNode m) {
        JsonNode errors = m.path("errors");
        new TreeMap<>(m.path("states").properties().stream().collect(java.util.stream.Collectors.toMap(
                e -> Integer.parseInt(e.getKey()), e -> e.getValue().asText()))).forEach((shard, state) ->
                System.out.printf("shard %d: migration %d (%s) %s%n", shard, m.path("version").asInt(),
                        m.path("description").asText(), errors.has(shard.toString())
                                ? state + ": " + errors.path(shard.toString()).asText() : state));
    }

    /** A migration still failed on some shard: say so, and end the command with a failure. */
    static void exitIfFailed(JsonNode info) {
        List<String> failed = new ArrayList<>();
        for (JsonNode m : info.path("migrations")) {
            boolean any = false;
            for (JsonNode state : m.path("states")) {
                any |= state.asText().equals("failed");
            }
            if (any) {
                Map<String, String> errors = new TreeMap<>();
                m.path("errors").properties().forEach(e -> errors.put(e.getKey(), e.getValue().asText()));
                failed.add(m.path("version").asInt() + " (" + m.path("description").asText() + ") failed on " + errors);
            }
        }
        if (!failed.isEmpty()) {
            throw new ThresherException(ErrorCode.STORE_UNAVAILABLE, "migration(s) " + failed
                    + "; fix the cause and run thresher table migrate " + info.path("name").asText());
        }
    }

    @Command(name = "drop", description = "Drop a table (refused while a binding reads it).")
    static final class Drop extends NodeAdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @Override
        void run(AdminClient node) throws Exception {
            JsonNode t = node.get(path(name), Map.of());
            node.delete(path(name));
            TreeSet<Integer> shards = new TreeSet<>();
            t.path("partitions").forEach(p -> shards.add(p.path("shard").asInt()));
            shards.forEach(shard -> System.out.printf("shard %d: dropped %s%n", shard, name));
            System.out.println("dropped table " + name);
        }
    }
}
