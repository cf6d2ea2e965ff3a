package dev.thresher.failpoints;

/** The named points of a node. Names are stable: tests and operators refer to them. */
public enum Failpoint {
    /** Receiving node, every check passed, immediately before the guest's {@code run} is invoked. */
    BEFORE_GUEST_START("shard.before-guest-start"),
    /** Receiving node, the guest's {@code run} returned, before its outcome is journaled. */
    AFTER_GUEST_START("shard.after-guest-start"),
    /** Receiving node, outcome in hand, before the slot is published under its lease. */
    BEFORE_SLOT_PUBLISH("shard.before-slot-publish"),
    /** Coordinator, every shard settled and the reduce lease taken, before the slots are read and judged and {@code reduce} runs. */
    BEFORE_REDUCE("call.before-reduce"),
    /** Coordinator, {@code reduce} returned, before the result is published. */
    AFTER_REDUCE_BEFORE_PUBLISH("call.after-reduce-before-publish"),
    /** Sending node, before a request frame is written. */
    WIRE_SEND("wire.send"),
    /** Receiving node, a request frame decoded, before it is handled. */
    WIRE_RECEIVE("wire.receive"),
    /** Leader node, a lease renewal begun (it holds the node's renewal turn), before it is sent: a frozen lease keeper. */
    LEASE_RENEW("lease.before-renew");

    private final String id;

    Failpoint(String id) {
        this.id = id;
    }

    public String id() {
        return id;
    }
}
