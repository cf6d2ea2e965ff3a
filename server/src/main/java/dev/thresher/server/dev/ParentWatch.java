package dev.thresher.server.dev;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends this process when another one ends: how a node process of {@code thresher dev --processes} follows the dev
 * process that started it, even one killed with {@code kill -9} (which runs no shutdown hook and signals no child).
 * The watched process is polled every {@value #POLL_MS} ms (by pid and start time, so a reused pid is not mistaken for
 * it); once it is gone this process exits normally, so its shutdown hooks stop the node cleanly, and halts if that
 * takes longer than {@value #HALT_SECONDS} s.
 */
public final class ParentWatch {
    private static final Logger log = LoggerFactory.getLogger(ParentWatch.class);

    static final long POLL_MS = 500;
    static final long HALT_SECONDS = 30;

    private ParentWatch() {
    }

    /** Watches {@code pid} from a daemon thread; exits at once when it is not running now. */
    public static void exitWith(long pid) {
        Optional<ProcessHandle> parent = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
        if (parent.isEmpty()) {
            log.warn("process {} this node should stop with is not running: exiting", pid);
            exit();
            return;
        }
        Thread.ofPlatform().daemon().name("exit-with-" + pid).start(() -> {
            try {
                while (parent.get().isAlive()) {
                    Thread.sleep(POLL_MS);
                }
            } catch (InterruptedException e) {
                return;
            }
            log.warn("process {} (the dev cluster this node belongs to) ended: stopping", pid);
            exit();
        });
    }

    private static void exit() {
        Thread.ofPlatform().daemon().name("exit-with-halt").start(() -> {
            try {
                Thread.sleep(TimeUnit.SECONDS.toMillis(HALT_SECONDS));
            } catch (InterruptedException e) {
                return;
            }
            Runtime.getRuntime().halt(1);
        });
        System.exit(0);
    }
}
