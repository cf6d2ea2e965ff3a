package dev.thresher.store.control;

import static dev.thresher.store.control.ControlFixture.DIGEST;
import static dev.thresher.store.control.ControlFixture.SELECTOR_1;
import static dev.thresher.store.control.ControlFixture.SELECTOR_2;
import static dev.thresher.store.control.ControlFixture.TENANT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.store.TestPostgres;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Migration V4 on a real PostgreSQL: the topology version and what is notified on thresher_catalog. */
class CatalogNotificationsTest {
    private ControlFixture f;

    @BeforeEach
    void setUp() {
        f = ControlFixture.create();
    }

    @AfterEach
    void tearDown() throws Exception {
        f.close();
    }

    @Test
    void migrationAppliesWithOneTopologyVersionRow() {
        assertThat(f.queryLong("SELECT count(*) FROM thresher_schema_history WHERE version = '4' AND success")).isEqualTo(1);
        assertThat(f.queryLong("SELECT count(*) FROM topology_version")).isEqualTo(1);
        assertThatThrownBy(() -> f.update("INSERT INTO topology_version (version) VALUES (1)"))
                .hasMessageContaining("topology_version_one_row");
        assertThat(f.control.readTopologyVersion()).isEqualTo(f.topologyVersion()).isPositive();
        // Migrating again is a no-op.
        ControlStore.migrate(f.pool);
    }

    @Test
    void partitionChangesBumpTheTopologyVersion() {
        long v = f.topologyVersion();
        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1));
        assertThat(f.topologyVersion()).isEqualTo(v + 1);
        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1)); // exists: nothing happens
        assertThat(f.topologyVersion()).isEqualTo(v + 1);
        f.update("UPDATE partitions SET epoch = epoch + 1 WHERE partition_id = 3");
        assertThat(f.topologyVersion()).isEqualTo(v + 2);
        f.update("DELETE FROM partitions WHERE partition_id = 3");
        assertThat(f.topologyVersion()).isEqualTo(v + 3);
        // One bump per row.
        f.update("UPDATE partitions SET epoch = epoch + 1");
        assertThat(f.topologyVersion()).isEqualTo(v + 5);
    }

    @Test
    void hostsBumpTheVersionWhenAddedRemovedOrMovedButNotOnHeartbeats() {
        long v = f.topologyVersion();
        f.topology.registerHost(new Host("h1", 1, "127.0.0.1", 7001), "127.0.0.1:5433", null); // same placement
        f.update("UPDATE hosts SET heartbeat_at = now()");
        f.topology.acquireLeadership("h1", 1, 30_000); // a heartbeat, and leases
        assertThat(f.topologyVersion()).isEqualTo(v);

        f.topology.registerHost(new Host("h1", 1, "127.0.0.1", 7101), null, null); // new wire port
        assertThat(f.topologyVersion()).isEqualTo(v + 1);
        // another shard: the host row and its candidacy (home shard 1 out, home shard 2 in)
        f.topology.registerHost(new Host("h1", 2, "127.0.0.1", 7101), null, null);
        assertThat(f.topologyVersion()).isEqualTo(v + 4);
        f.topology.registerHost(new Host("h1", 2, "10.0.0.1", 7101), null, null); // another address
        assertThat(f.topologyVersion()).isEqualTo(v + 5);
        f.topology.registerHost(new Host("h1", 2, "10.0.0.1", 7101), null, null, List.of(1)); // a standby shard
        assertThat(f.topologyVersion()).isEqualTo(v + 6);
        f.topology.registerHost(new Host("h1", 2, "10.0.0.1", 7101), null, null, List.of(1)); // the same again
        assertThat(f.topologyVersion()).isEqualTo(v + 6);
        f.topology.registerHost(new Host("h3", 2, "127.0.0.1", 7003), null, null); // the host and its candidacy
        assertThat(f.topologyVersion()).isEqualTo(v + 8);
        f.update("DELETE FROM hosts WHERE host_id = 'h3'");
        assertThat(f.topologyVersion()).isEqualTo(v + 10);
    }

    @Test
    void bindingVersionsAreNotifiedByName() {
        ControlFixture.RawListener l = f.listen();
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1);
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_1); // unchanged: no new version
        f.control.putBinding(TENANT, "revenue", DIGEST, SELECTOR_2);
        f.control.putBinding(TENANT, "count/by region", DIGEST, SELECTOR_1);
        assertThat(l.drain()).containsExactly("binding:acme/revenue", "binding:acme/revenue",
                "binding:acme/count/by region");
        // A name too long for a payload still notifies (and does not make the insert fail).
        f.control.putBinding(TENANT, "n".repeat(8_000), DIGEST, SELECTOR_1);
        assertThat(l.drain()).containsExactly("bindings");
    }

    @Test
    void partitionsAndHostsNotifyTopologyAndHeartbeatsDoNot() {
        ControlFixture.RawListener l = f.listen();
        f.update("UPDATE hosts SET heartbeat_at = now()");
        f.topology.registerHost(new Host("h2", 1, "127.0.0.1", 7002), "127.0.0.1:5434", "127.0.0.1:8080");
        assertThat(l.drain()).isEmpty();

        f.control.putPartition(new Partition(3, TENANT, "orders", 0, 10, 2, 1));
        assertThat(l.drain()).containsExactly("topology");
        f.topology.registerHost(new Host("h2", 1, "127.0.0.1", 7102), null, null);
        assertThat(l.drain()).containsExactly("topology");
        // Identical payloads of one transaction arrive once.
        f.update("UPDATE partitions SET epoch = epoch + 1");
        assertThat(l.drain()).containsExactly("topology");
    }

    @Test
    void leaseTakeoverNotifiesAndSameHostRenewalDoesNot() {
        ControlFixture.RawListener l = f.listen();
        long v = f.topologyVersion();
        assertThat(f.topology.acquireLeadership("h1", 1, 200)).containsExactlyInAnyOrder(1, 2);
        assertThat(l.drain()).containsExactly("topology"); // two leases taken, one transaction

        // h2 cannot take a live lease: nothing changes, nothing is notified.
        assertThat(f.topology.acquireLeadership("h2", 1, 30_000)).isEmpty();
        assertThat(l.drain()).isEmpty();

        // Once h1's lease ended, h2 takes over: notified.
        TestPostgres.await(Duration.ofSeconds(10), "h2 to take over the expired leases",
                () -> f.topology.acquireLeadership("h2", 1, 30_000).size() == 2);
        assertThat(l.drain()).containsExactly("topology");

        // h2 renews every third of its lease: every lease row is updated, nothing is notified.
        for (int i = 0; i < 3; i++) {
            assertThat(f.topology.acquireLeadership("h2", 1, 30_000)).hasSize(2);
        }
        assertThat(l.drain()).isEmpty();

        // A new epoch under the same host is a change of leadership.
        f.update("UPDATE partition_leases SET epoch = epoch + 1 WHERE partition_id = 1");
        assertThat(l.drain()).containsExactly("topology");

        // Releasing the leases (clean shutdown) is one too.
        f.topology.releaseLeadership("h2");
        assertThat(l.drain()).containsExactly("topology");
        // Renewals and releases leave the version; a takeover by another host moves each partition to a new epoch.
        assertThat(f.topologyVersion()).as("only the takeover's epochs move the topology version").isEqualTo(v + 2);
    }

    @Test
    void leadershipNeverBumpsTheTopologyVersion() {
        long v = f.topologyVersion();
        f.topology.acquireLeadership("h1", 1, 30_000);
        f.topology.acquireLeadership("h1", 1, 30_000);
        f.topology.releaseLeadership("h1");
        assertThat(f.topologyVersion()).isEqualTo(v);
        assertThat(f.control.readTopologyVersion()).isEqualTo(v);
    }
}
