package dev.thresher.server.cli;

import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.TableAdmin;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "table", description = "Create, list, show and drop tables.",
        subcommands = {TableCommand.Create.class, TableCommand.ListTables.class, TableCommand.Show.class, TableCommand.Alter.class, TableCommand.Migrate.class,
                TableCommand.Drop.class})
final class TableCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "create", description = "Create a table on the shard databases, partitioned by its key's slot.")
    static final class Create extends AdminCommand {
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
        java.util.List<String> shards = new java.util.ArrayList<>();

        @Override
        void run(TableAdmin admin) {
            var created = admin.create(cluster.tenant, name, key, columns, partitions, admin.shardIds(shards));
            System.out.printf("created table %s: %d partitions over shards %s%n", name, created.size(),
                    created.stream().map(dev.thresher.topology.Partition::shardId).distinct().sorted().toList());
        }
    }

    @Command(name = "list", description = "List the tables.")
    static final class ListTables extends AdminCommand {
        @Override
        void run(TableAdmin admin) {
            admin.list(cluster.tenant).forEach(System.out::println);
        }
    }

    @Command(name = "show", description = "Show a table's key and partitions with their leaders.")
    static final class Show extends AdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @Override
        void run(TableAdmin admin) {
            admin.show(cluster.tenant, name).forEach(System.out::println);
        }
    }

    @Command(name = "alter", description = "Change a table's schema on every shard database holding it, as its next"
            + " migration (per-shard status in table show).")
    static final class Alter extends AdminCommand {
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
        void run(TableAdmin admin) {
            var info = admin.alter(cluster.tenant, name, change.add != null
                    ? new dev.thresher.bindings.TableService.Change.AddColumn(change.add)
                    : new dev.thresher.bindings.TableService.Change.DropColumn(change.drop));
            exitIfFailed(info);
        }
    }

    @Command(name = "migrate", description = "Apply a table's pending and failed migrations again, in order, on each shard.")
    static final class Migrate extends AdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @Override
        void run(TableAdmin admin) {
            exitIfFailed(admin.migrate(cluster.tenant, name));
        }
    }

    /** A migration still failed on some shard: say so, and end the command with a failure. */
    static void exitIfFailed(dev.thresher.bindings.TableService.TableInfo info) {
        var failed = info.migrations().stream().filter(m -> m.states().containsValue("failed")).toList();
        if (!failed.isEmpty()) {
            throw new ThresherException(dev.thresher.errors.ErrorCode.STORE_UNAVAILABLE, "migration(s) "
                    + failed.stream().map(m -> m.version() + " (" + m.description() + ") failed on " + m.errors()).toList()
                    + "; fix the cause and run thresher table migrate " + info.name());
        }
    }

    @Command(name = "drop", description = "Drop a table (refused while a binding reads it).")
    static final class Drop extends AdminCommand {
        @Parameters(index = "0", description = "Table name.")
        String name;

        @Override
        void run(TableAdmin admin) {
            admin.drop(cluster.tenant, name);
            System.out.println("dropped table " + name);
        }
    }
}
