package dev.thresher.server.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

@Command(name = "binding", description = "Binding versions: list, show, history, rollback.",
        subcommands = {BindingCommand.ListBindings.class, BindingCommand.Show.class, BindingCommand.History.class,
                BindingCommand.Rollback.class})
final class BindingCommand implements Runnable {
    static String path(String binding) {
        return "/admin/bindings/" + AdminClient.segment(binding);
    }

    /** A text field of a node's JSON answer, or null. */
    static String text(JsonNode n, String field) {
        return n.path(field).isNull() || n.path(field).isMissingNode() ? null : n.path(field).asText();
    }

    static Instant deployedAt(JsonNode v) {
        return Instant.parse(v.path("deployedAt").asText()).truncatedTo(ChronoUnit.SECONDS);
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    static String line(JsonNode v) {
        String abi = text(v, "abiVersion");
        String note = text(v, "note");
        return String.format("%-24s v%-4d %s  abi %s  by %-16s %s%s", text(v, "binding"), v.path("version").asInt(),
                text(v, "packageDigest").substring(0, 19), abi == null ? "?" : abi, text(v, "deployedBy"),
                deployedAt(v), note == null ? "" : "  (" + note + ")");
    }

    @Command(name = "list", description = "Each binding's current version.")
    static final class ListBindings extends NodeAdminCommand {
        @Override
        void run(AdminClient node) throws Exception {
            node.get("/admin/bindings", Map.of()).forEach(v -> System.out.println(line(v)));
        }
    }

    @Command(name = "show", description = "A binding's current version: package, manifest, selector, who deployed it.")
    static final class Show extends NodeAdminCommand {
        @Parameters(index = "0", description = "Binding name.")
        String name;

        @Override
        void run(AdminClient node) throws Exception {
            JsonNode shown = node.get(path(name), Map.of());
            JsonNode v = shown.path("version");
            String manifestDigest = text(v, "manifestDigest");
            String abi = text(v, "abiVersion");
            String selector = text(v, "selector");
            String note = text(v, "note");
            System.out.printf("binding %s version %d%n  package   %s%n  manifest  %s%n  abi       %s%n  selector  %s%n"
                            + "  deployed  by %s at %s%s%n", text(v, "binding"), v.path("version").asInt(),
                    text(v, "packageDigest"), manifestDigest == null ? "(none)" : manifestDigest, abi == null ? "?" : abi,
                    selector == null ? "(none: an HTTP handler)" : selector, text(v, "deployedBy"), deployedAt(v),
                    note == null ? "" : " (" + note + ")");
            String manifest = text(shown, "manifestText");
            if (manifest != null) {
                System.out.println("  manifest:\n" + manifest.strip().indent(4).stripTrailing());
            }
        }
    }

    @Command(name = "history", description = "Every version of a binding, oldest first.")
    static final class History extends NodeAdminCommand {
        @Parameters(index = "0", description = "Binding name.")
        String name;

        @Override
        void run(AdminClient node) throws Exception {
            node.get(path(name) + "/history", Map.of()).forEach(v -> System.out.println(line(v)));
        }
    }

    @Command(name = "rollback", description = "A new version of a binding pinning what an older version pinned.")
    static final class Rollback extends NodeAdminCommand {
        @Parameters(index = "0", description = "Binding name.")
        String name;

        @Option(names = "--to", required = true, description = "The version to go back to.")
        int to;

        @Override
        void run(AdminClient node) throws Exception {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("to", to);
            body.put("by", operator());
            JsonNode d = node.post(path(name) + "/rollback", body);
            if (d.path("unchanged").asBoolean()) {
                System.out.printf("%s unchanged: version %d, its current one, pins what version %d pinned%n", name,
                        d.path("version").asInt(), to);
                return;
            }
            System.out.printf("rolled back %s: version %d pins version %d's package %s%n", name, d.path("version").asInt(),
                    to, d.path("packageDigest").asText());
        }
    }
}
