package dev.thresher.tests;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.thresher.server.dev.DevRecovery;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code thresher dev --processes}: every node a process of its own, named with its pid in {@code endpoints.json}, so
 * one can be killed as in production; the node processes stop with the dev process, on Ctrl-C and on {@code kill -9}.
 */
class DevProcessesIT {
    @Test
    void aKilledNodeProcessFailsOverAndCtrlCStopsTheOthers() throws Exception {
        Path root = Files.createTempDirectory("thresher-dev-processes-");
        Path dir = root.resolve("dev");
        Path log = root.resolve("dev.log");
        int port = DevLaunch.freePortRun();
        Process dev = DevLaunch.start(dir, port, log, "--processes");
        List<Long> nodes = new ArrayList<>();
        try {
            JsonNode endpoints = DevLaunch.awaitUp(dev, dir, log);
            nodes.addAll(nodePids(endpoints, dir));
            assertThat(endpoints.get("pgwire").get(0).asText()).isEqualTo("127.0.0.1:" + port);

            JsonNode before = DevLaunch.call("127.0.0.1:" + port);
            assertThat(DevLaunch.rows(before)).isEqualTo(5000);

            // node-2 leads shard 2's partitions; node-1, through which we call, stands by for shard 2.
            long node2 = nodes.get(1);
            ProcessHandle.of(node2).orElseThrow().destroyForcibly();
            assertThat(DevLaunch.awaitGone(node2, 30)).isTrue();
            long killed = System.nanoTime();
            JsonNode after = callUntilItSucceeds("127.0.0.1:" + port, 60);
            assertThat(after.size()).isEqualTo(before.size());
            before.fieldNames().forEachRemaining(region -> assertThat(after.get(region).get("count"))
                    .as("every partition read once: %s", region).isEqualTo(before.get(region).get("count")));
            System.out.printf("calls succeed again %d ms after kill -9 of node-2%n",
                    (System.nanoTime() - killed) / 1_000_000);
            assertThat(DevLaunch.alive(nodes.get(0)) && DevLaunch.alive(nodes.get(2))).isTrue();
            assertThat(dev.isAlive()).isTrue();

            DevLaunch.stop(dev); // SIGTERM, as Ctrl-C
            assertThat(dev.exitValue()).as(Files.readString(log)).isIn(0, 143);
            for (long pid : nodes) {
                assertThat(DevLaunch.awaitGone(pid, 5)).as("node process %d stopped with the dev process", pid).isTrue();
            }
            assertThat(DevLaunch.postmasterPid(dir)).as("PostgreSQL stopped, its data directory removed").isEmpty();
        } finally {
            dev.destroyForcibly();
            nodes.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
        }
    }

    @Test
    void nodeProcessesDoNotOutliveADevProcessKilledWithKill9() throws Exception {
        Path root = Files.createTempDirectory("thresher-dev-processes-");
        Path dir = root.resolve("dev");
        Path log = root.resolve("dev.log");
        Process dev = DevLaunch.start(dir, DevLaunch.freePortRun(), log, "--processes");
        List<Long> nodes = new ArrayList<>();
        try {
            nodes.addAll(nodePids(DevLaunch.awaitUp(dev, dir, log), dir));
            long postgres = DevLaunch.postmasterPid(dir).orElseThrow();

            dev.destroyForcibly();
            assertThat(dev.waitFor(30, TimeUnit.SECONDS)).isTrue();
            for (long pid : nodes) {
                assertThat(DevLaunch.awaitGone(pid, 30)).as("node process %d after its dev process died", pid).isTrue();
            }
            // The orphaned PostgreSQL is the next `thresher dev`'s to stop (DevRecoveryIT); here, the same code stops it.
            assertThat(DevLaunch.alive(postgres)).isTrue();
            assertThat(DevRecovery.recover(dir)).as("the shard databases' and the control database's PostgreSQL")
                    .hasSize(2).anySatisfy(line -> assertThat(line).contains("shard databases' PostgreSQL", "pid " + postgres));
            assertThat(DevLaunch.alive(postgres)).isFalse();
        } finally {
            dev.destroyForcibly();
            nodes.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
            DevRecovery.recover(dir);
        }
    }

    /** The nodes' pids in {@code endpoints.json}, each a live process other than the dev process, logging under DIR. */
    private static List<Long> nodePids(JsonNode endpoints, Path dir) {
        List<Long> pids = new ArrayList<>();
        assertThat(endpoints.get("nodes")).hasSize(3);
        for (JsonNode n : endpoints.get("nodes")) {
            long pid = n.get("pid").asLong();
            assertThat(pid).isNotEqualTo(endpoints.get("pid").asLong());
            assertThat(DevLaunch.alive(pid)).as(n.toString()).isTrue();
            assertThat(Path.of(n.get("log").asText())).startsWith(dir).exists();
            assertThat(Path.of(n.get("config").asText())).startsWith(dir).exists();
            pids.add(pid);
        }
        return pids;
    }

    /** Calls until a call succeeds, for {@code seconds} at most; the last failure says why not. */
    private static JsonNode callUntilItSucceeds(String address, int seconds) throws Exception {
        return Await.until("a call that succeeds at " + address + " after the kill",
                java.time.Duration.ofSeconds(seconds), java.time.Duration.ofMillis(250), () -> DevLaunch.call(address),
                answer -> true);
    }
}
