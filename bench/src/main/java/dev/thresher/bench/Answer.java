package dev.thresher.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One call's answer in a form every peer's can be compared in: group key to sum and count.
 *
 * @param groups in key order
 */
record Answer(SortedMap<String, Group> groups) {
    /** Relative tolerance on sums: peers add the same doubles in different orders. */
    static final double SUM_TOLERANCE = 1e-9;

    private static final ObjectMapper JSON = new ObjectMapper();

    record Group(double sum, long count) {
    }

    /** From {@code key -> {sum, count}} as peers merge them. */
    static Answer of(Map<String, double[]> merged) {
        SortedMap<String, Group> m = new TreeMap<>();
        merged.forEach((k, v) -> m.put(k, new Group(v[0], Math.round(v[1]))));
        return new Answer(m);
    }

    /** From a result {@code {"<key>": {"sum": <number>, "count": <integer>}, ...}}. */
    static Answer ofJson(String json) {
        try {
            JsonNode root = JSON.readTree(json);
            if (root == null || !root.isObject()) {
                throw new IllegalArgumentException("not a JSON object: " + json);
            }
            SortedMap<String, Group> m = new TreeMap<>();
            for (Map.Entry<String, JsonNode> e : root.properties()) {
                m.put(e.getKey(), new Group(e.getValue().path("sum").asDouble(Double.NaN), e.getValue().path("count").asLong(-1)));
            }
            return new Answer(m);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("unreadable result: " + json, e);
        }
    }

    long rows() {
        return groups.values().stream().mapToLong(Group::count).sum();
    }

    /** Empty when {@code other} has the same keys, the same counts and sums within {@link #SUM_TOLERANCE} relative. */
    Optional<String> differenceFrom(Answer other) {
        if (!groups.keySet().equals(other.groups.keySet())) {
            return Optional.of("groups " + groups.keySet() + " vs " + other.groups.keySet());
        }
        for (var e : groups.entrySet()) {
            Group a = e.getValue();
            Group b = other.groups.get(e.getKey());
            if (a.count() != b.count()) {
                return Optional.of("count of " + e.getKey() + ": " + a.count() + " vs " + b.count());
            }
            double scale = Math.max(Math.abs(a.sum()), Math.abs(b.sum()));
            if (!(Math.abs(a.sum() - b.sum()) <= SUM_TOLERANCE * scale)) {
                return Optional.of("sum of " + e.getKey() + ": " + a.sum() + " vs " + b.sum());
            }
        }
        return Optional.empty();
    }
}
