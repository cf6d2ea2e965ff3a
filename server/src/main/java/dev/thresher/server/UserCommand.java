package dev.thresher.server;

import dev.thresher.bindings.access.AccessStatement;
import dev.thresher.bindings.access.Grant;
import dev.thresher.bindings.access.Identifiers;
import dev.thresher.bindings.access.Privilege;
import dev.thresher.bindings.access.Scram;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
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
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code thresher user add|remove|list|password|token|revoke-tokens}, {@code thresher grant ...} and
 * {@code thresher revoke ...}: users and grants, written straight to the control database (as its owner, so in any
 * tenant: {@code --tenant}). The same changes are SQL over pgwire for a tenant's admins ({@code CREATE USER},
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

    /** A command on the users of the control database. */
    abstract static class UsersCommand implements Callable<Integer> {
        @CommandLine.Mixin
        Main.ClusterOptions cluster;

        abstract void run(AccessStore users);

        @Override
        public final Integer call() throws Exception {
            try (TableAdmin admin = cluster.admin()) {
                ControlStore.migrate(admin.controlDb());
                run(new AccessStore(admin.controlDb()));
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
        void run(AccessStore users) {
            String password = passwordStdin ? readPassword() : newSecret();
            Scram.Verifier verifier = new AccessStatement.Password(password).verifier();
            users.createUser(cluster.tenant, Identifiers.userName(name), verifier, "thresher user add");
            if (admin) {
                users.grant(Optional.empty(), name, Grant.of(Privilege.ADMIN), "thresher user add");
            }
            System.out.printf("added user %s to tenant %s%s%n", name, cluster.tenant, admin ? " (admin)" : "");
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
        void run(AccessStore users) {
            if (!users.dropUser(Optional.empty(), name)) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "no user " + Identifiers.quoted(name));
            }
            System.out.println("removed user " + name);
        }
    }

    @Command(name = "list", description = "Every user: tenant, grants, tokens.")
    static final class ListUsers extends UsersCommand {
        @Option(names = "--all-tenants", description = "Users of every tenant (default: --tenant's only).")
        boolean all;

        @Override
        void run(AccessStore users) {
            List<AccessStore.UserRow> rows = users.list(all ? Optional.empty() : Optional.of(cluster.tenant));
            System.out.printf("%-24s %-16s %-6s %s%n", "USER", "TENANT", "TOKENS", "GRANTS");
            for (AccessStore.UserRow r : rows) {
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
        void run(AccessStore users) {
            String password = passwordStdin ? readPassword() : newSecret();
            if (!users.setPassword(Optional.empty(), name, new AccessStatement.Password(password).verifier())) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "no user " + Identifiers.quoted(name));
            }
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
        void run(AccessStore users) {
            String token = "thr_" + newSecret();
            if (!users.addToken(Optional.empty(), name, token, "thresher user token")) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "no user " + Identifiers.quoted(name));
            }
            System.out.println(token);
        }
    }

    @Command(name = "revoke-tokens", description = "Revoke every bearer token of a user.")
    static final class RevokeTokens extends UsersCommand {
        @Parameters(index = "0", description = "The user name.")
        String name;

        @Override
        void run(AccessStore users) {
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
        void run(AccessStore users) {
            if (!(dev.thresher.pgwire.AccessGrammar.parse("GRANT " + String.join(" ", words)) instanceof AccessStatement.GrantTo g)) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "expected a grant");
            }
            if (!users.grant(Optional.empty(), g.user(), g.grant(), "thresher grant")) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "no user " + Identifiers.quoted(g.user()));
            }
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
        void run(AccessStore users) {
            if (!(dev.thresher.pgwire.AccessGrammar.parse("REVOKE " + String.join(" ", words)) instanceof AccessStatement.RevokeFrom r)) {
                throw new ThresherException(ErrorCode.SYNTAX_ERROR, "expected a revoke");
            }
            if (!users.revoke(Optional.empty(), r.user(), r.grant())) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "no user " + Identifiers.quoted(r.user()));
            }
            System.out.println("revoked " + r.grant().text() + " from " + r.user());
        }
    }
}
