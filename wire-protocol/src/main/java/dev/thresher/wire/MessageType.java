package dev.thresher.wire;

import java.util.Arrays;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The type id of every message, grouped by family in the high byte: {@code 0x01xx} handshake,
 * {@code 0x02xx} host run (it carried the per-partition shard run until protocol version 3): the
 * request {@code 0x0205}, its reply {@code 0x0206} and the one-way call stop {@code 0x0207}. Ids
 * are never reused or renumbered; a semantic change to a message gets a new id and the version
 * that introduces it in {@link #sinceVersion}, and the id it replaces is listed in {@link #RETIRED}
 * so a frame carrying it is refused by name.
 */
public enum MessageType {
    HELLO(0x0101, Family.HANDSHAKE, 1),
    HELLO_ACK(0x0102, Family.HANDSHAKE, 1),
    HELLO_REJECT(0x0103, Family.HANDSHAKE, 1),
    HOST_RUN_REQUEST(0x0205, Family.HOST_RUN, 3),
    HOST_RUN_REPLY(0x0206, Family.HOST_RUN, 3),
    /** One-way, client to server: the coordinator of a call stopped admitting its slots; no reply. */
    CALL_STOP(0x0207, Family.HOST_RUN, 3);

    /** Ids of layouts no version this build speaks carries, and why they went. Never reused. */
    static final Map<Integer, String> RETIRED = Map.of(
            0x0201, "ShardRunRequest version 1 (no binding version; replaced by 0x0204 at protocol version 2)",
            0x0202, "ShardRunResult (one reply per partition carrying its partials; replaced by the per-slot"
                    + " outcomes of HostReply 0x0206 at protocol version 3, the partials now read from the"
                    + " control database)",
            0x0203, "ShardRunFailure (one failure per partition; replaced by the per-slot outcomes of"
                    + " HostReply 0x0206 at protocol version 3)",
            0x0204, "ShardRunRequest version 2 (one request per partition; replaced by HostRequest 0x0205,"
                    + " one request per leader host carrying all its slots, at protocol version 3)");

    /** A group of messages with one codec. */
    public enum Family {
        /** Version-independent: readable before a version is agreed, never changed. */
        HANDSHAKE,
        /**
         * A leader host's run of a call's slots (request, reply) and the coordinator's stop of a call;
         * readable only once the handshake agreed a version.
         */
        HOST_RUN
    }

    private static final Map<Integer, MessageType> BY_ID =
            Arrays.stream(values()).collect(Collectors.toUnmodifiableMap(MessageType::id, Function.identity()));

    private final int id;
    private final Family family;
    private final int sinceVersion;

    MessageType(int id, Family family, int sinceVersion) {
        this.id = id;
        this.family = family;
        this.sinceVersion = sinceVersion;
    }

    /** The 2-byte type id written after the frame length. */
    public int id() {
        return id;
    }

    public Family family() {
        return family;
    }

    /** The first protocol version in which this message exists. */
    public int sinceVersion() {
        return sinceVersion;
    }

    /** The type with this id, or {@code null} for an id this build does not know. */
    static MessageType ofId(int id) {
        return BY_ID.get(id);
    }

    /** The type of a message. */
    public static MessageType of(WireMessage message) {
        return switch (message) {
            case WireMessage.Hello m -> HELLO;
            case WireMessage.HelloAck m -> HELLO_ACK;
            case WireMessage.HelloReject m -> HELLO_REJECT;
            case WireMessage.HostRequest m -> HOST_RUN_REQUEST;
            case WireMessage.HostReply m -> HOST_RUN_REPLY;
            case WireMessage.CallStop m -> CALL_STOP;
        };
    }

    /** Whether a connection that agreed on {@code version} (0: not yet agreed) may carry this message. */
    public boolean allowedAt(int version) {
        return switch (family) {
            case HANDSHAKE -> true;
            case HOST_RUN -> version >= sinceVersion;
        };
    }
}
