package dev.thresher.server.cli;

import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.admin.TableAdmin;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "binding", description = "Binding versions: list, show, history, rollback.",
        subcommands = {BindingCommand.ListBindings.class, BindingCommand.Show.class, BindingCommand.History.class,
                BindingCommand.Rollback.class})
final class BindingCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    static String line(BindingAdmin.Version v) {
        return String.format("%-24s v%-4d %s  abi %s  by %-16s %s%s", v.binding(), v.version(),
                v.packageDigest().substring(0, 19), v.abiVersion() == null ? "?" : v.abiVersion(), v.deployedBy(),
                v.deployedAt().truncatedTo(java.time.temporal.ChronoUnit.SECONDS), v.note() == null ? "" : "  (" + v.note() + ")");
    }

    @Command(name = "list", description = "Each binding's current version.")
    static final class ListBindings extends AdminCommand {
        @Override
        void run(TableAdmin admin) {
            new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS).list(cluster.tenant)
                    .forEach(v -> System.out.println(line(v)));
        }
    }

    @Command(name = "show", description = "A binding's current version: package, manifest, selector, who deployed it.")
    static final class Show extends AdminCommand {
        @Parameters(index = "0", description = "Binding name.")
        String name;

        @Override
        void run(TableAdmin admin) {
            BindingAdmin b = new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS);
            BindingAdmin.Version v = b.show(cluster.tenant, name);
            System.out.printf("binding %s version %d%n  package   %s%n  manifest  %s%n  abi       %s%n  selector  %s%n"
                            + "  deployed  by %s at %s%s%n", v.binding(), v.version(), v.packageDigest(),
                    v.manifestDigest() == null ? "(none)" : v.manifestDigest(), v.abiVersion() == null ? "?" : v.abiVersion(),
                    v.selector() == null ? "(none: an HTTP handler)" : v.selector(), v.deployedBy(),
                    v.deployedAt().truncatedTo(java.time.temporal.ChronoUnit.SECONDS),
                    v.note() == null ? "" : " (" + v.note() + ")");
            b.manifest(v.manifestDigest()).ifPresent(m -> System.out.println("  manifest:\n" + m.strip().indent(4).stripTrailing()));
        }
    }

    @Command(name = "history", description = "Every version of a binding, oldest first.")
    static final class History extends AdminCommand {
        @Parameters(index = "0", description = "Binding name.")
        String name;

        @Override
        void run(TableAdmin admin) {
            new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS).history(cluster.tenant, name)
                    .forEach(v -> System.out.println(line(v)));
        }
    }

    @Command(name = "rollback", description = "A new version of a binding pinning what an older version pinned.")
    static final class Rollback extends AdminCommand {
        @Parameters(index = "0", description = "Binding name.")
        String name;

        @Option(names = "--to", required = true, description = "The version to go back to.")
        int to;

        @Override
        void run(TableAdmin admin) {
            BindingAdmin.Deployed d = new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS)
                    .rollback(cluster.tenant, name, to, operator());
            System.out.printf("rolled back %s: version %d pins version %d's package %s%n", name, d.version(), to,
                    d.packageDigest());
        }
    }
}
