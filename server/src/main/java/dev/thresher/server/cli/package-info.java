/** The {@code thresher} command line (picocli): one class per command family, {@link dev.thresher.server.cli.Main} the entry point. */
package dev.thresher.server.cli;
