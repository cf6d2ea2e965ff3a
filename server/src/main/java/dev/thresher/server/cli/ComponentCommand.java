package dev.thresher.server.cli;

import dev.thresher.server.admin.BindingAdmin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "component", description = "Work on a component package without a cluster: test.",
        subcommands = {ComponentCommand.Test.class})
final class ComponentCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    @Command(name = "test", description = "Run a package's run on every simulated partition of a CSV file's rows and"
            + " its reduce on the merged partials, on the real host code, without a cluster or PostgreSQL; print the"
            + " partials per partition and the result.")
    static final class Test implements Callable<Integer> {
        @Parameters(index = "0", description = "The package directory (thresher.json and its module).")
        Path dir;

        @Option(names = "--table", description = "Read the rows of this table of a running cluster instead, partition by"
                + " partition, with the selector's columns and filter (through a node, as the admin commands reach it).")
        String table;

        @CommandLine.Mixin
        AdminClient node;

        @Option(names = "--csv", description = "The rows the selector selects: a header naming its"
                + " columns (name or name:type, type one of int8, float8, text, bool, bytea; a trailing ? makes a column"
                + " nullable), then one record per row; an unquoted empty field is NULL.")
        Path csv;

        @Option(names = "--partitions", defaultValue = "1", description = "Partitions to deal the rows to, in order"
                + " (default ${DEFAULT-VALUE}).")
        int partitions;

        @Option(names = "--args", defaultValue = "{}", description = "The call's JSON arguments (default ${DEFAULT-VALUE}).")
        String args;

        @Override
        public Integer call() throws IOException {
            if (partitions < 1 || partitions > dev.thresher.limits.Limits.DEFAULTS.coordinationSlots()) {
                throw new IllegalArgumentException("--partitions: 1 to " + dev.thresher.limits.Limits.DEFAULTS.coordinationSlots()
                        + " (limits.coordinationSlots), was " + partitions);
            }
            var limits = dev.thresher.limits.Limits.DEFAULTS;
            dev.thresher.coordinator.Coordinator.checkArguments(args, limits); // as a cluster checks a call's
            BindingAdmin.Package pkg = BindingAdmin.read(dir, limits);
            BindingAdmin.Checked checked = BindingAdmin.check(pkg.manifest(), pkg.module(), limits);
            if (checked.manifest().handler()) {
                throw new IllegalArgumentException(dir + " is an HTTP handler: deploy it and send it requests"
                        + " (docs/components.md, \"HTTP handlers\"); component test runs run and reduce");
            }
            dev.thresher.bindings.Selector selector = dev.thresher.bindings.Selector.parse(checked.manifest().selector());
            if ((csv == null) == (table == null)) {
                throw new IllegalArgumentException("pass --csv FILE, or --table NAME to read a running cluster's table");
            }
            ComponentHarness harness = new ComponentHarness(limits);
            java.util.Map<String, String> heading = new java.util.LinkedHashMap<>();
            heading.put("component", checked.manifest().binding() + " (guest ABI " + checked.manifest().abiVersion()
                    + ", " + BindingAdmin.sha256(checked.wasm()) + ")");
            java.util.List<ComponentHarness.PartitionInput> inputs;
            if (csv != null) {
                ComponentHarness.Rows rows;
                try (var reader = java.nio.file.Files.newBufferedReader(csv)) {
                    rows = ComponentHarness.readCsv(reader, selector);
                }
                heading.put("rows", rows.rows().size() + " from " + csv + " as " + rows.columns().stream()
                        .map(c -> c.name() + " " + c.type().name().toLowerCase(java.util.Locale.ROOT) + (c.nullable() ? "" : " not null"))
                        .toList() + (selector.where().isPresent() ? "; the selector's WHERE is not applied" : ""));
                inputs = harness.deal(rows, partitions, checked.manifest().abiVersion());
            } else {
                try {
                    inputs = harness.fromTable(node, table, checked.manifest().selector(), checked.manifest().abiVersion());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted while the node read " + table);
                }
                heading.put("rows", inputs.stream().mapToLong(ComponentHarness.PartitionInput::rows).sum() + " from table "
                        + table + " in " + inputs.size() + " partitions, with the selector's filter");
            }
            ComponentHarness.Outcome outcome = harness.run(checked, inputs, args);
            System.out.print(ComponentHarness.describe(outcome, heading));
            return outcome.succeeded() ? 0 : 1;
        }
    }
}
