package dev.thresher.server.dev;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link DevRecovery} does with the leftovers of a dev cluster that did not stop cleanly, short of a real
 * PostgreSQL (DevRecoveryIT in the tests module kills a real one).
 */
class DevRecoveryTest {
    @TempDir
    Path workDir;

    @Test
    void aCleanlyStoppedDirectoryNeedsNothing() {
        assertThat(DevRecovery.recover(workDir)).isEmpty();
    }

    @Test
    void aStalePidFileWhoseProcessIsGoneIsClearedWithOneLine() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor(10, TimeUnit.SECONDS);
        Path data = halfInitialised();
        Files.writeString(data.resolve("postmaster.pid"), gone.pid() + "\n" + data + "\n");

        assertThat(DevRecovery.recover(workDir)).singleElement().asString()
                .contains("did not stop cleanly", "pid " + gone.pid(), "is gone", "recreating");
        assertThat(data).doesNotExist();
    }

    @Test
    void aHalfInitialisedDataDirectoryIsRemoved() throws Exception {
        Path data = halfInitialised();

        assertThat(DevRecovery.recover(workDir)).singleElement().asString().contains("half-initialised");
        assertThat(data).doesNotExist();
    }

    @Test
    void aLiveProcessThatIsNotThisDirectorysPostgresIsLeftAlone() throws Exception {
        Process other = new ProcessBuilder("sleep", "60").start();
        try {
            Path data = halfInitialised();
            Files.writeString(data.resolve("postmaster.pid"), other.pid() + "\n");

            assertThat(DevRecovery.recover(workDir)).singleElement().asString().contains("is gone");
            assertThat(other.isAlive()).as("a reused pid's process is not ours to stop").isTrue();
            assertThat(data).doesNotExist();
        } finally {
            other.destroyForcibly();
        }
    }

    @Test
    void aDirectoryARunningDevClusterHoldsIsRefusedUntouched() throws Exception {
        Path data = halfInitialised();
        Path lockFile = data.resolve("epg-lock");
        Files.writeString(lockFile, "");
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.WRITE); FileLock held = ch.lock()) {
            assertThatThrownBy(() -> DevRecovery.recover(workDir)).isInstanceOfSatisfying(ThresherException.class,
                    e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_CONFIGURATION))
                    .hasMessageContaining("a dev cluster is running in " + workDir);
        }
        assertThat(data.resolve("PG_VERSION")).exists();
    }

    @Test
    void nodeProcessesAreRecognisedByTheirConfigurationOnly() throws Exception {
        Process other = new ProcessBuilder("sleep", "60").start();
        try {
            Files.writeString(workDir.resolve("endpoints.json"), """
                    {"nodes": [{"id": "node-1", "pid": %d, "config": "%s"}]}""".formatted(other.pid(),
                    workDir.resolve("nodes/node-1.properties")));

            assertThat(DevRecovery.recover(workDir)).isEmpty();
            assertThat(other.isAlive()).as("not a node of this directory").isTrue();
        } finally {
            other.destroyForcibly();
        }
    }

    @Test
    void theControlDatabasesOwnDataDirectoryIsRecoveredToo() throws Exception {
        Path shards = halfInitialised();
        Path control = halfInitialised(DevRecovery.controlDataDirectory(workDir));

        assertThat(DevRecovery.recover(workDir)).hasSize(2).allSatisfy(line -> assertThat(line).contains("half-initialised"));
        assertThat(shards).doesNotExist();
        assertThat(control).doesNotExist();
    }

    private Path halfInitialised() throws Exception {
        return halfInitialised(DevRecovery.dataDirectory(workDir));
    }

    private static Path halfInitialised(Path directory) throws Exception {
        Path data = Files.createDirectories(directory);
        Files.writeString(data.resolve("PG_VERSION"), "17\n");
        Files.createDirectories(data.resolve("base/1"));
        return data;
    }
}
