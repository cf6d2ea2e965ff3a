package dev.thresher.store.replica;

import java.util.Arrays;

/**
 * A PostgreSQL snapshot as {@code pg_current_snapshot()::text} prints it ({@code xmin:xmax:xip,...}), asked which
 * transactions it sees. A transaction's id as logical replication gives it (32 bits, {@code Begin}) is compared
 * with the snapshot's 64-bit ids by their low 32 bits, in PostgreSQL's circular order, which is exact for ids
 * within two billion of each other.
 */
final class XidSnapshot {
    private final long xmin;
    private final long xmax;
    private final long[] xip;

    private XidSnapshot(long xmin, long xmax, long[] xip) {
        this.xmin = xmin;
        this.xmax = xmax;
        this.xip = xip;
    }

    /** @throws IllegalArgumentException for anything but {@code xmin:xmax:[xip,...]} */
    static XidSnapshot parse(String text) {
        String[] parts = text.split(":", -1);
        if (parts.length != 3) {
            throw new IllegalArgumentException("not a snapshot: " + text);
        }
        try {
            long[] xip = parts[2].isEmpty() ? new long[0]
                    : Arrays.stream(parts[2].split(",")).mapToLong(Long::parseLong).toArray();
            return new XidSnapshot(Long.parseLong(parts[0]), Long.parseLong(parts[1]), xip);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a snapshot: " + text, e);
        }
    }

    /** Whether a transaction that committed (logical replication streams no other) is visible in the snapshot. */
    boolean visible(int xid) {
        if (precedes(xid, (int) xmin)) {
            return true;
        }
        if (!precedes(xid, (int) xmax)) {
            return false;
        }
        for (long running : xip) {
            if ((int) running == xid) {
                return false;
            }
        }
        return true;
    }

    /** The transactions running when the snapshot was taken, as a {@code xid8[]} literal. */
    String xipArray() {
        StringBuilder sb = new StringBuilder("{");
        for (int i = 0; i < xip.length; i++) {
            sb.append(i == 0 ? "" : ",").append(xip[i]);
        }
        return sb.append('}').toString();
    }

    private static boolean precedes(int a, int b) {
        return a - b < 0;
    }
}
