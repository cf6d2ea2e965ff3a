package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.List;
import java.util.Objects;

/**
 * Every message of the node-to-node protocol: a closed vocabulary, one record per message.
 * Each record's type id and byte layout are listed in {@link MessageType} and in its javadoc;
 * the protocol version is negotiated per connection and never stored in a message.
 *
 * <p>Who sends what: the client (the coordinating node) sends {@link Hello}, then
 * {@link HostRequest}s, each answered by one {@link HostReply} carrying its
 * {@code requestId}, and {@link CallStop}s, which are one-way (nothing answers them). The server
 * sends {@link HelloAck} or {@link HelloReject}, then replies. A message the other end does not
 * send (a request or a stop arriving at a client, a reply at a server) is a protocol violation
 * that closes the connection. Frames on one connection are read in the order they were written.
 *
 * <p>Frame (all integers big-endian):
 * <pre>
 * +----------------+-------------+----------------------+
 * | length: i32    | type: u16   | payload              |
 * | = 2 + payload  | MessageType | (layout per message) |
 * +----------------+-------------+----------------------+
 * </pre>
 * The whole frame, length field included, is at most {@code limits.wireMaxFrameBytes}.
 *
 * <p>Field encodings used in the layouts below:
 * <ul>
 *   <li>{@code i32}, {@code i64}: two's complement, big-endian.</li>
 *   <li>{@code bool}: one byte, {@code 0x00} or {@code 0x01}; any other byte is a protocol violation.</li>
 *   <li>{@code str}: {@code i32} byte length, then that many bytes of UTF-8. One string form is used
 *       everywhere, identifiers included: a 2-byte form would save about a dozen bytes per request
 *       and add a second length bound to enforce. Malformed UTF-8 and negative lengths are protocol
 *       violations; an unpaired surrogate in a Java string is written as {@code '?'}.</li>
 *   <li>{@code list<T>}: {@code i32} element count, then the elements. A count that the remaining
 *       bytes of the frame cannot hold, at the smallest size an element can have, is a protocol
 *       violation, checked before anything is allocated.</li>
 * </ul>
 * No message of version 3 carries an {@code f64}: the partials, the only doubles, left the wire with
 * the retired {@code ShardRunResult} and are read from the control database.
 */
public sealed interface WireMessage {

    /**
     * The first frame a client sends: the range of protocol versions it speaks. Type {@code 0x0101};
     * handshake layouts never change, so any peer can read them before a version is agreed.
     * <pre>
     * i32 minVersion | i32 maxVersion | str nodeId
     * </pre>
     * Example, {@code Hello(1, 1, "node-a")} (golden vector {@code hello.hex}):
     * <pre>
     * 00000014 0101 00000001 00000001 00000006 6e6f64652d61
     * length=20 type  min=1   max=1    len=6   "node-a"
     * </pre>
     *
     * @param minVersion lowest version the sender speaks, at least 1
     * @param maxVersion highest version the sender speaks, at least {@code minVersion}
     * @param nodeId the sender's node id, for logs
     */
    record Hello(int minVersion, int maxVersion, String nodeId) implements WireMessage {
        public Hello {
            if (minVersion < 1 || maxVersion < minVersion) {
                throw new IllegalArgumentException("bad version range [" + minVersion + ", " + maxVersion + "]");
            }
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /**
     * The server's answer to {@link Hello} when the ranges overlap: the version both sides use on
     * this connection from the next frame on. Type {@code 0x0102}.
     * <pre>
     * i32 version | str nodeId
     * </pre>
     * Example, {@code HelloAck(1, "node-b")} (golden vector {@code hello-ack.hex}):
     * <pre>
     * 00000010 0102 00000001 00000006 6e6f64652d62
     * length=16 type version=1 len=6  "node-b"
     * </pre>
     *
     * @param version the agreed version, at least 1
     * @param nodeId the server's node id, for logs
     */
    record HelloAck(int version, String nodeId) implements WireMessage {
        public HelloAck {
            if (version < 1) {
                throw new IllegalArgumentException("version must be at least 1, was " + version);
            }
            Objects.requireNonNull(nodeId, "nodeId");
        }
    }

    /**
     * The server's answer to {@link Hello} when no version is common; the server closes the
     * connection after it. Type {@code 0x0103}.
     * <pre>
     * i32 errorCode | str message
     * </pre>
     * Example, {@code HelloReject(1009, "no common version")} (golden vector {@code hello-reject.hex}):
     * <pre>
     * 0000001b 0103 000003f1 00000011 6e6f20636f6d6d6f6e2076657273696f6e
     * length=27 type code=1009 len=17 "no common version"
     * </pre>
     *
     * @param errorCode an {@link ErrorCode} number
     * @param message a human-readable reason
     */
    record HelloReject(int errorCode, String message) implements WireMessage {
        public HelloReject {
            Objects.requireNonNull(message, "message");
        }
    }

    /**
     * Asks one leader host to run every slot of a call whose partition it leads. Type {@code 0x0205}
     * (protocol version 3; it replaced the per-partition {@code 0x0204}, retired with its result
     * {@code 0x0202} and failure {@code 0x0203}). The host runs the slots one at a time in slot
     * order, journals and publishes all of them in one control-database transaction and answers with
     * one {@link HostReply}. The deadline crosses
     * the wire only as the budget left when the frame was built; the receiver turns it into a local
     * monotonic deadline (see {@link HostRunHandler}).
     * <pre>
     * i64 requestId | str callId | str tenant | str bindingName | str componentDigest | i32 bindingVersion
     * | i64 remainingBudgetMicros | str argumentsJson
     * | list&lt;i32 runIndex, i32 partitionId, i64 epoch, str wireId, i32 attempt&gt; runs
     * </pre>
     * Example, {@code HostRequest(42, "c1", "t", "sum", "d1", 2, 1500000, "{}", [ShardRun(7, 3, 5, "w1", 1)])}
     * (golden vector {@code v3/host-run-request.hex}):
     * <pre>
     * 00000052 0205 000000000000002a            length=82, type, requestId=42
     * 00000002 6331  00000001 74                 callId "c1", tenant "t"
     * 00000003 73756d  00000002 6431             bindingName "sum", componentDigest "d1"
     * 00000002 000000000016e360                  bindingVersion=2, remainingBudgetMicros=1500000
     * 00000002 7b7d  00000001                    argumentsJson "{}", 1 slot
     * 00000007 00000003 0000000000000005         runIndex=7, partitionId=3, epoch=5
     * 00000002 7731 00000001                     wireId "w1", attempt=1
     * </pre>
     *
     * @param requestId correlates the reply on this connection; unique among the sender's requests in flight
     * @param callId the call the slots belong to
     * @param tenant the calling tenant
     * @param bindingName the binding being called
     * @param componentDigest the digest of the component to run
     * @param bindingVersion the binding version the call was planned with, at least 1: every slot of a
     *     call runs this one immutable version (its selector and component), whatever is deployed since
     * @param remainingBudgetMicros the call's budget left when the frame was built, at least 0
     * @param argumentsJson the call's arguments as JSON text
     * @param runs the shard runs, at least one, in strictly increasing {@code runIndex} order
     */
    record HostRequest(
            long requestId,
            String callId,
            String tenant,
            String bindingName,
            String componentDigest,
            int bindingVersion,
            long remainingBudgetMicros,
            String argumentsJson,
            List<ShardRun> runs) implements WireMessage {
        public HostRequest {
            Objects.requireNonNull(callId, "callId");
            Objects.requireNonNull(tenant, "tenant");
            Objects.requireNonNull(bindingName, "bindingName");
            Objects.requireNonNull(componentDigest, "componentDigest");
            Objects.requireNonNull(argumentsJson, "argumentsJson");
            if (bindingVersion < 1) {
                throw new IllegalArgumentException("bindingVersion must be at least 1, was " + bindingVersion);
            }
            nonNegative("remainingBudgetMicros", remainingBudgetMicros);
            runs = List.copyOf(runs);
            if (runs.isEmpty()) {
                throw new IllegalArgumentException("a host request carries at least one shard run");
            }
            for (int i = 1; i < runs.size(); i++) {
                if (runs.get(i).runIndex() <= runs.get(i - 1).runIndex()) {
                    throw new IllegalArgumentException("shard runs must be in strictly increasing runIndex order");
                }
            }
        }
    }

    /**
     * One slot of a {@link HostRequest}; not a message of its own.
     *
     * @param runIndex the coordination slot (the partition's place in the call), at least 0
     * @param partitionId the partition to read, at least 0
     * @param epoch the partition epoch the coordinator planned with
     * @param wireId the slot's wire identity: outcomes are journaled by (tenant, wire identity)
     * @param attempt the attempt number of this slot, at least 1
     */
    record ShardRun(int runIndex, int partitionId, long epoch, String wireId, int attempt) {
        public ShardRun {
            nonNegative("runIndex", runIndex);
            nonNegative("partitionId", partitionId);
            Objects.requireNonNull(wireId, "wireId");
            if (attempt < 1) {
                throw new IllegalArgumentException("attempt must be at least 1, was " + attempt);
            }
        }
    }

    /**
     * The answer to a {@link HostRequest}: one outcome per slot of the request, in the request's
     * order. Type {@code 0x0206}. The partials themselves are not in it: the coordinator reads them,
     * with their leases, from the published slots in the control database, where they are stored once.
     * A failure that concerns the whole request (the node is stopping, the handler failed) is an
     * outcome of the same code for every slot.
     * <pre>
     * i64 requestId | i64 publishMicros
     * | list&lt;i32 runIndex, str wireId, i32 errorCode, bool guestStarted, str message,
     *        i32 rowCount, i32 emitCount, i64 readMicros, i64 guestMicros&gt; runs
     * </pre>
     * {@code errorCode} 0 is a slot published with its partials; any other value is an
     * {@link ErrorCode} number, and {@code guestStarted} tells whether guest code may have run for
     * that slot, which decides whether it can be retried.
     * Example, {@code HostReply(42, 300, [ShardRunOutcome(7, "w1", 0, true, "", 4096, 1, 800, 27)])}
     * (golden vector {@code v3/host-run-reply.hex}):
     * <pre>
     * 00000041 0206 000000000000002a            length=65, type, requestId=42
     * 000000000000012c 00000001                  publishMicros=300, 1 slot
     * 00000007 00000002 7731                     runIndex=7, wireId "w1"
     * 00000000 01 00000000                       errorCode=0, guestStarted, message ""
     * 00001000 00000001                          rowCount=4096, emitCount=1
     * 0000000000000320 000000000000001b          readMicros=800, guestMicros=27
     * </pre>
     *
     * @param requestId the request's id
     * @param publishMicros time the host spent journaling and publishing the slots, at least 0
     * @param runs one outcome per shard run of the request
     */
    record HostReply(long requestId, long publishMicros, List<ShardRunOutcome> runs) implements WireMessage {
        public HostReply {
            nonNegative("publishMicros", publishMicros);
            runs = List.copyOf(runs);
        }

        /** The same failure for every slot of {@code request}. */
        public static HostReply failed(HostRequest request, ThresherException error, boolean guestStarted) {
            return new HostReply(request.requestId(), 0, request.runs().stream()
                    .map(s -> ShardRunOutcome.failed(s, error, guestStarted)).toList());
        }
    }

    /**
     * The outcome of one slot in a {@link HostReply}; not a message of its own.
     *
     * @param runIndex the slot's index
     * @param wireId the slot's wire identity
     * @param errorCode 0 when the slot was published, else an {@link ErrorCode} number
     * @param guestStarted whether guest code may have run for this slot
     * @param message a human-readable reason, empty when published
     * @param rowCount rows read, at least 0
     * @param emitCount {@code emit} calls made, at least 0
     * @param readMicros time spent reading the partition, at least 0
     * @param guestMicros time spent in guest code, at least 0
     */
    record ShardRunOutcome(int runIndex, String wireId, int errorCode, boolean guestStarted, String message, int rowCount,
                       int emitCount, long readMicros, long guestMicros) {
        public ShardRunOutcome {
            Objects.requireNonNull(wireId, "wireId");
            Objects.requireNonNull(message, "message");
            nonNegative("rowCount", rowCount);
            nonNegative("emitCount", emitCount);
            nonNegative("readMicros", readMicros);
            nonNegative("guestMicros", guestMicros);
        }

        /** A failed slot carrying {@code error}'s code and message. */
        public static ShardRunOutcome failed(ShardRun slot, ThresherException error, boolean guestStarted) {
            return new ShardRunOutcome(slot.runIndex(), slot.wireId(), error.code().code(), guestStarted,
                    error.getMessage() == null ? error.code().name() : error.getMessage(), 0, 0, 0, 0);
        }

        public boolean published() {
            return errorCode == 0;
        }

        /** The error code; a number this build does not know reads as {@code INTERNAL_ERROR}. */
        public ErrorCode code() {
            return ErrorCode.ofCode(errorCode);
        }
    }

    /**
     * Tells a leader host that the coordinator of a call stopped admitting slots (a slot of the call
     * failed for good elsewhere): the slots of that call the host has not started yet are not run.
     * Type {@code 0x0207} (protocol version 3), sent client to server only, and one-way: nothing
     * answers it, so it carries no request id. The host still answers each of the call's requests
     * with one outcome per slot ({@link HostReply}'s rule is unchanged); a slot it did not start
     * is a failure with {@code guestStarted = false}, and a slot already started runs to its end.
     * A stop is idempotent and only ever skips work: a host with no unstarted slot of the call (it
     * finished them, or never had any) has nothing to do. On one connection it takes effect after
     * every request written before it: the server calls {@link HostRunHandler#stop} only once
     * {@link HostRunHandler#handle} has been called for each request that arrived earlier on that
     * connection.
     * <pre>
     * str callId
     * </pre>
     * Example, {@code CallStop("c1")} (golden vector {@code v3/call-stop.hex}), 12 bytes:
     * <pre>
     * 00000008 0207 00000002 6331               length=8, type, callId "c1"
     * </pre>
     * A frame is 4 + 2 + 4 + the call id's UTF-8 bytes, 10 bytes for an empty id.
     *
     * @param callId the call whose unstarted slots are not to run, as in {@link HostRequest#callId}
     */
    record CallStop(String callId) implements WireMessage {
        public CallStop {
            Objects.requireNonNull(callId, "callId");
        }
    }

    private static void nonNegative(String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must not be negative, was " + value);
        }
    }
}
