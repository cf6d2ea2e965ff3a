package dev.thresher.server.cli;

import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.Scram;
import dev.thresher.bindings.access.UserService;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.server.admin.TableAdmin;
import dev.thresher.server.admin.UserAdmin;
import dev.thresher.server.dev.DevCluster;
import dev.thresher.store.control.AccessStore;
import dev.thresher.store.control.ControlStore;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/**
 * {@code thresher user add|remove|list|password|token|revoke-tokens}, {@code thresher grant ...} and
 * {@code thresher revoke ...}: users and grants, through a node's admin routes ({@code /admin/users},
 * {@code /admin/grants}: with the admin token, an operator's, in any tenant: {@code --tenant}), or with
 * {@code --control-url} straight to the control database (bootstrap: before anyone can log in). The same changes are SQL over pgwire for a tenant's admins ({@code CREATE USER},
 * {@code GRANT}, ...). Every node applies them within moments.
 */
@Command(name = "user", description = "Users who may log in (pgwire, SCRAM-SHA-256) and call over HTTP (bearer tokens).",
        subcommands = {UserCommand.Add.class, UserCommand.Remove.class, UserCommand.ListUsers.class,
                UserCommand.Password.class, UserCommand.Token.class, UserCommand.RevokeTokens.class})
final class UserCommand implements Runnable {
    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    /**
     * A command on the users: through a node's {@code /admin/users} and {@code /admin/grants} routes, or, given
     * {@code --control-url}, on the control database directly (bootstrap: the first users, before anyone can log in).
     */
    abstract static class UsersCommand implements Callable<Integer> {
        @CommandLine.Mixin
        AdminClient node;

        @CommandLine.Mixin
        ControlDatabaseOptions control;

        @Option(names = "--tenant", description = "Tenant (default: the admin token's, the node's tenant; on the control"
                + " database directly, " + DevCluster.TENANT + ").")
        String tenant;

        /**
         * @param tenant {@code --tenant}, or the control database's default; null through a node (the token's)
         */
        abstract void run(UserService users, String tenant) throws Exception;

        @Override
        public final Integer call() throws Exception {
            if (!control.given()) {
                run(new NodeUsers(node), tenant);
                return 0;
            }
            try (TableAdmin admin = control.admin()) {
                ControlStore.migrate(admin.controlDb());
                run(new UserAdmin(new AccessStore(admin.controlDb())), tenant == null ? DevCluster.TENANT : tenant);
                return 0;
            }
        }
    }

    static String newSecret() {
        byte[] b = new byte[24];
        new SecureRandom().nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    static String readPassword() {
        try {
            String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            if (line == null || line.isEmpty()) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "--password-stdin: no password on standard input");
            }
            return line;
        } catch (java.io.IOException e) {
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "--password-stdin: " + e.getMessage());
        }
    }

    @Command(name = "add", description = "Add a user to a tenant (--tenant); prints a new password unless --password-stdin.")
    static final class Add extends UsersCommand {
        @Parameters(index = "0", description = "The user name (1 to 63 bytes).")
        String name;

        @Option(names = "--password-stdin", description = "Read the password from standard input (one line).")
        boolean passwordStdin;

        @Option(names = "--admin", description = "Grant admin of the tenant too.")
        boolean admin;

        @Override
        void run(UserService users, String tenant) {
            String password = passwordStdin ? readPassword() : newSecret();
            Scram.Verifier verifier = new AccessStatement.Password(password).verifier();
            String added = users.add(tenant, name, verifier, admin, "thresher user add");
            System.out.printf("added user %s to tenant %s%s%n", name, added, admin ? " (admin)" : "");
            if (!passwordStdin) {
                System.out.println("password: " + password);
            }
        }
    }

    @Command(name = "remove", description = "Remove a user with its grants and tokens.")
    static final class Remove extends UsersCommand {
        @Parameters(index = "0", description = "The user name.")
        String name;

        @Override
        void run(UserService users, String tenant) {
            users.remove(Optional.empty(), name);
            System.out.println("removed user " + name);
        }
    }

    @Command(name = "list", description = "Every user: tenant, grants, tokens.")
    static final class ListUsers extends UsersCommand {
        @Option(names = "--all-tenants", description = "Users of every tenant (default: --tenant's only).")
        boolean all;

        @Override
        void run(UserService users, String tenant) {
            List<UserService.User> rows = users.list(all ? Optional.empty() : Optional.ofNullable(tenant));
            System.out.printf("%-24s %-16s %-6s %s%n", "USER", "TENANT", "TOKENS", "GRANTS");
            for (UserService.User r : rows) {
                System.out.printf("%-24s %-16s %-6d %s%n", r.name(), r.tenant(), r.tokens(),
                        r.grants().isEmpty() ? "(none)" : String.join(", ", r.grants()));
            }
        }
    }

    @Command(name = "password", description = "Set a user's password; prints a new one unless --password-stdin.")
    static final class Password extends UsersCommand {
        @Parameters(index = "0", description = "The user name.")
        String name;

        @Option(names = "--password-stdin", description = "Read the password from standard input (one line).")
        boolean passwordStdin;

        @Override
        void run(UserService users, String tenant) {
            String password = passwordStdin ? readPassword() : newSecret();
            users.setPassword(Optional.empty(), name, new AccessStatement.Password(password).verifier());
            System.out.println("password of " + name + " set");
            if (!passwordStdin) {
                System.out.println("password: " + password);
            }
        }
    }

    @Command(name = "token", description = "Make a bearer token for the user's HTTP requests; printed once, kept as a digest.")
    static final class Token extends UsersCommand {
        @Parameters(index = "0", description = "The user name.")
        String name;

        @Override
        void run(UserService users, String tenant) {
            String token = "thr_" + newSecret();
            users.addToken(Optional.empty(), name, token, "thresher user token");
            System.out.println(token);
        }
    }

    @Command(name = "revoke-tokens", description = "Revoke every bearer token of a user.")
    static final class RevokeTokens extends UsersCommand {
        @Parameters(index = "0", description = "The user name.")
        String name;

        @Override
        void run(UserService users, String tenant) {
            System.out.println("revoked " + users.revokeTokens(Optional.empty(), name) + " tokens of " + name);
        }
    }

    /** {@code thresher grant call on binding X to U}, {@code ... call on all bindings ...}, {@code deploy}, {@code admin}. */
    @Command(name = "grant", description = "Grant a user: call on binding NAME | call on all bindings | deploy | admin, then"
            + " 'to USER' (e.g. thresher grant call on binding revenue_by_region to ann).")
    static final class GrantCommand extends UsersCommand {
        @Parameters(arity = "1..*", description = "The grant, as in SQL's GRANT.")
        List<String> words;

        @Override
        void run(UserService users, String tenant) {
            if (!(dev.thresher.pgwire.AccessGrammar.parse("GRANT " + String.join(" ", words)) instanceof AccessStatement.GrantTo g)) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "expected a grant");
            }
            users.grant(Optional.empty(), g.user(), g.grant(), "thresher grant");
            System.out.println("granted " + g.grant().text() + " to " + g.user());
        }
    }

    /** {@code thresher revoke ... from U}. */
    @Command(name = "revoke", description = "Revoke a grant: call on binding NAME | call on all bindings | deploy | admin,"
            + " then 'from USER'.")
    static final class RevokeCommand extends UsersCommand {
        @Parameters(arity = "1..*", description = "The grant, as in SQL's REVOKE.")
        List<String> words;

        @Override
        void run(UserService users, String tenant) {
            if (!(dev.thresher.pgwire.AccessGrammar.parse("REVOKE " + String.join(" ", words)) instanceof AccessStatement.RevokeFrom r)) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "expected a revoke");
            }
            users.revoke(Optional.empty(), r.user(), r.grant());
            System.out.println("revoked " + r.grant().text() + " from " + r.user());
        }
    }
}
