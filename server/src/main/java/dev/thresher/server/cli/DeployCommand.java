package dev.thresher.server.cli;

import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.admin.TableAdmin;
import java.io.IOException;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

@Command(name = "deploy", description = "Deploy a component package: DIR holds thresher.json (the manifest) and the"
        + " module it names; everything is checked before anything is stored.")
final class DeployCommand extends AdminCommand {
    @Parameters(index = "0", description = "The package directory.")
    Path dir;

    @Override
    void run(TableAdmin admin) throws IOException {
        BindingAdmin.Deployed d = new BindingAdmin(admin, dev.thresher.limits.Limits.DEFAULTS)
                .deployDir(cluster.tenant, operator(), dir);
        System.out.printf("%s %s version %d%n  package  %s%n  manifest %s%n", d.unchanged() ? "unchanged:" : "deployed",
                d.binding(), d.version(), d.packageDigest(), d.manifestDigest());
    }
}
