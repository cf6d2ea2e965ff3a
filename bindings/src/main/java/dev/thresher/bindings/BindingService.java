package dev.thresher.bindings;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Deploying component packages and managing binding versions, as the front doors reach it ({@code CREATE
 * BINDING} and {@code ALTER BINDING ... ROLLBACK} over pgwire, {@code /admin/bindings} over HTTP) and the
 * command line does ({@code thresher deploy}, {@code thresher binding}). Implemented by the node; every
 * method blocks, so front doors call it from worker threads, never from an event loop.
 */
public interface BindingService {

    /** What a deploy or rollback made the binding's current version; {@code unchanged} when it already was. */
    record Deployed(String binding, int version, String packageDigest, String manifestDigest, boolean unchanged) {
    }

    /** One immutable version of a binding as recorded: what it pins, who made it, when, and why if not a deploy. */
    record Version(String binding, int version, String packageDigest, String manifestDigest, Integer abiVersion,
                   String selector, String deployedBy, String note, Instant deployedAt) {
    }

    /**
     * Deploys a manifest and its module; everything is checked before anything is stored.
     *
     * @param deployedBy who deploys, recorded with the version
     */
    Deployed deploy(String tenant, String deployedBy, byte[] manifest, byte[] module);

    /** A new version pinning what version {@code to} pinned. */
    Deployed rollback(String tenant, String name, int to, String deployedBy);

    /** Each binding's current version. */
    List<Version> list(String tenant);

    /** Every version of a binding, oldest first. */
    List<Version> history(String tenant, String name);

    /** The manifest a version was deployed with, as deployed. */
    Optional<String> manifest(String manifestDigest);

    /**
     * Runs a binding command as the front door parsed it from {@code CREATE BINDING WITH MANIFEST '<json>' MODULE
     * '<module>'} or {@code ALTER BINDING name ROLLBACK TO VERSION n}, as {@code user} (recorded as
     * {@code pgwire:<user>}).
     *
     * @return the command tag ({@code CREATE BINDING}, {@code ALTER BINDING})
     */
    String execute(String tenant, String user, BindingCommand command);
}
