package dev.thresher.server.node;

import dev.thresher.server.admin.TableAdmin;
import dev.thresher.store.ConnectionBudget;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * What one node opens at most against its database servers, every pool of its process counted, and the budgets
 * that holds against what each server allows (docs/deployment.md, {@code max_connections}).
 *
 * <p>Against the control database: the call path's pool, the upkeep's (leases, janitor, cache), the cache's
 * {@code LISTEN} connection and the table service's catalog pool ({@link TableAdmin#CONTROL_POOL_SIZE}: table
 * commands, loads, deploys and topology changes served over pgwire or HTTP). Against each shard database it is a
 * candidate for: its read-only pool (with a leader replica's own connections) and the table service's pool for loads
 * and inserts ({@link TableAdmin#SHARD_POOL_SIZE}). The table service writes every shard database of the cluster,
 * so each shard database's budget counts that pool for every node, candidate or not. The boot's migration pool is
 * closed before the node serves anything and stays within these figures.
 *
 * @param callPath connections of the call path's control pool
 * @param upkeep connections of the upkeep's control pool
 * @param shardReads connections per candidate shard database: the read-only pool and a leader replica's own
 */
record NodeConnections(int callPath, int upkeep, int shardReads) {
    /** The catalog cache's {@code LISTEN} connection. */
    static final int LISTEN = 1;

    /** What this node opens against the control database at most. */
    int control() {
        return callPath + upkeep + LISTEN + TableAdmin.CONTROL_POOL_SIZE;
    }

    /** What this node opens against a shard database it is a candidate for at most. */
    int candidateShard() {
        return shardReads + TableAdmin.SHARD_POOL_SIZE;
    }

    /**
     * One budget per server: the control database's and each candidate shard database's, databases on one server
     * (the same address) summed into one budget.
     *
     * @param controlServer the control database's server address; null: a server of its own
     * @param shardServers each candidate shard database's server address (null: a server of its own)
     * @param otherNodes the other nodes registered
     * @param otherCandidates per shard database, the other nodes that are candidates for it
     * @param available connections a server allows, by its key: its address, or {@code control} /
     *     {@code shard-<id>} for a database whose address is unknown
     */
    List<ConnectionBudget> budgets(String controlServer, Map<Integer, String> shardServers, int otherNodes,
                                   Map<Integer, Integer> otherCandidates, ToIntFunction<String> available) {
        int nodes = otherNodes + 1;
        Map<String, List<Integer>> shardsByServer = new LinkedHashMap<>();
        shardServers.forEach((shard, server) ->
                shardsByServer.computeIfAbsent(server == null ? "shard-" + shard : server, k -> new ArrayList<>()).add(shard));
        String controlKey = controlServer == null ? "control" : controlServer;
        List<ConnectionBudget> budgets = new ArrayList<>();
        if (!shardsByServer.containsKey(controlKey)) {
            budgets.add(new ConnectionBudget("control database", control(), nodes, available.applyAsInt(controlKey),
                    (long) control() * nodes));
        }
        shardsByServer.forEach((server, shards) -> {
            boolean withControl = server.equals(controlKey);
            int perNode = withControl ? control() : 0;
            long most = withControl ? (long) control() * nodes : 0;
            for (int shard : shards) {
                perNode += candidateShard();
                most += (long) (otherCandidates.getOrDefault(shard, 0) + 1) * shardReads
                        + (long) nodes * TableAdmin.SHARD_POOL_SIZE;
            }
            budgets.add(new ConnectionBudget(name(withControl, shards, server), perNode, nodes,
                    available.applyAsInt(server), most));
        });
        return budgets;
    }

    private static String name(boolean withControl, List<Integer> shards, String server) {
        String ids = String.join(", ", shards.stream().map(String::valueOf).toList());
        if (withControl) {
            return "control and shard database" + (shards.size() > 1 ? "s " : " ") + ids + " (one server, " + server + ")";
        }
        return shards.size() > 1 ? "shard databases " + ids + " (one server, " + server + ")" : "shard database " + ids;
    }
}
