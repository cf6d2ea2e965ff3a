package dev.thresher.server.cli;

import dev.thresher.topology.Slots;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "slot", description = "Print the slot of a bigint key, or of a text key with --text.")
final class SlotCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "The key.")
    String key;

    @Option(names = "--text", description = "Hash the key as text (UTF-8) instead of bigint.")
    boolean text;

    @Override
    public Integer call() {
        if (text) {
            System.out.println(Slots.ofText(key));
            return 0;
        }
        try {
            System.out.println(Slots.ofLong(Long.parseLong(key)));
            return 0;
        } catch (NumberFormatException e) {
            System.err.println("'" + key + "' is not a bigint; pass --text to hash it as text");
            return 2;
        }
    }
}
