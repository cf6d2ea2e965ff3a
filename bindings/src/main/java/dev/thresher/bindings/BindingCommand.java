package dev.thresher.bindings;

import java.util.Objects;

/**
 * A binding statement as the front door parsed it ({@code CREATE BINDING}, {@code ALTER BINDING} over pgwire), for
 * {@link BindingService#execute(String, String, BindingCommand)}: the service runs commands, it reads no SQL.
 */
public sealed interface BindingCommand {
    /**
     * {@code CREATE BINDING WITH MANIFEST '<json>' MODULE '<module>'}: a deploy of the manifest's bytes and the module's
     * (the SQL text decoded from hex, with or without a {@code \x} prefix, or base64).
     */
    record Deploy(byte[] manifest, byte[] module) implements BindingCommand {
        public Deploy {
            manifest = manifest.clone();
            module = module.clone();
        }

        @Override
        public byte[] manifest() {
            return manifest.clone();
        }

        @Override
        public byte[] module() {
            return module.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Deploy d && java.util.Arrays.equals(manifest, d.manifest)
                    && java.util.Arrays.equals(module, d.module);
        }

        @Override
        public int hashCode() {
            return 31 * java.util.Arrays.hashCode(manifest) + java.util.Arrays.hashCode(module);
        }

        @Override
        public String toString() {
            return "Deploy[manifest=" + manifest.length + " bytes, module=" + module.length + " bytes]";
        }
    }

    /** {@code ALTER BINDING name ROLLBACK TO VERSION n}: a new version pinning what version {@code version} pinned. */
    record Rollback(String binding, int version) implements BindingCommand {
        public Rollback {
            Objects.requireNonNull(binding, "binding");
        }
    }

    /** The command tag a client is answered with once the command ran. */
    default String tag() {
        return switch (this) {
            case Deploy d -> "CREATE BINDING";
            case Rollback r -> "ALTER BINDING";
        };
    }
}
