package dev.thresher.wire;

import dev.thresher.bindings.Partial;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.List;
import java.util.Objects;

/**
 * Every message of the node-to-node protocol: a closed vocabulary, one record per message.
 * Each record's type id and byte layout are listed in {@link MessageType} and in its javadoc;
 * the protocol version is negotiated per connection and never stored in a message.
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
 *   <li>{@code f64}: IEEE-754 binary64 raw bits, big-endian ({@link Double#doubleToRawLongBits}),
 *       so NaN payloads, infinities and {@code -0.0} cross bit-exactly. The codec never rejects a
 *       value; the coordinator does, with its own codes.</li>
 *   <li>{@code bool}: one byte, {@code 0x00} or {@code 0x01}; any other byte is a protocol violation.</li>
 *   <li>{@code str}: {@code i32} byte length, then that many bytes of UTF-8. One string form is used
 *       everywhere, identifiers included: a 2-byte form would save about a dozen bytes per request
 *       and add a second length bound to enforce. Malformed UTF-8 and negative lengths are protocol
 *       violations; an unpaired surrogate in a Java string is written as {@code '?'}.</li>
 *   <li>{@code list<T>}: {@code i32} element count, then the elements. A count that the remaining
 *       bytes of the frame cannot hold is a protocol violation, checked before anything is allocated.</li>
 * </ul>
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
     * Asks the node holding a partition's leadership to run one shard of a call. Type {@code 0x0204}
     * (protocol version 2; the version 1 layout {@code 0x0201} lacked the binding version and is
     * retired). The deadline crosses the wire only as the budget left when the frame was built; the
     * receiver turns it into a local monotonic deadline (see {@link ShardRunHandler}).
     * <pre>
     * i64 requestId | str callId | str wireId | str tenant | str bindingName | str componentDigest
     * | i32 bindingVersion | i32 slotIndex | i32 partitionId | i64 epoch | i64 remainingBudgetMicros
     * | i32 attempt | str argumentsJson
     * </pre>
     * Example, {@code ShardRunRequest(42, "c1", "w1", "t", "sum", "d1", 2, 7, 3, 5, 1500000, 1, "{}")}
     * (golden vector {@code v2/shard-run-request.hex}):
     * <pre>
     * 0000004e 0204 000000000000002a            length=78, type, requestId=42
     * 00000002 6331  00000002 7731  00000001 74  callId "c1", wireId "w1", tenant "t"
     * 00000003 73756d  00000002 6431             bindingName "sum", componentDigest "d1"
     * 00000002                                   bindingVersion=2
     * 00000007 00000003 0000000000000005         slotIndex=7, partitionId=3, epoch=5
     * 000000000016e360 00000001                  remainingBudgetMicros=1500000, attempt=1
     * 00000002 7b7d                              argumentsJson "{}"
     * </pre>
     *
     * @param requestId correlates the reply on this connection; unique among the sender's requests in flight
     * @param callId the call this shard run belongs to
     * @param wireId the shard run's id within the call, echoed in the reply
     * @param tenant the calling tenant
     * @param bindingName the binding being called
     * @param componentDigest the digest of the component to run
     * @param bindingVersion the binding version the call was planned with, at least 1: every shard of a
     *     call runs this one immutable version (its selector and component), whatever is deployed since
     * @param slotIndex the coordination slot of this shard run, at least 0
     * @param partitionId the partition to read, at least 0
     * @param epoch the topology epoch the coordinator planned with
     * @param remainingBudgetMicros the call's budget left when the frame was built, at least 0
     * @param attempt the attempt number of this shard run, at least 0
     * @param argumentsJson the call's arguments as JSON text
     */
    record ShardRunRequest(
            long requestId,
            String callId,
            String wireId,
            String tenant,
            String bindingName,
            String componentDigest,
            int bindingVersion,
            int slotIndex,
            int partitionId,
            long epoch,
            long remainingBudgetMicros,
            int attempt,
            String argumentsJson) implements WireMessage {
        public ShardRunRequest {
            Objects.requireNonNull(callId, "callId");
            Objects.requireNonNull(wireId, "wireId");
            Objects.requireNonNull(tenant, "tenant");
            Objects.requireNonNull(bindingName, "bindingName");
            Objects.requireNonNull(componentDigest, "componentDigest");
            Objects.requireNonNull(argumentsJson, "argumentsJson");
            if (bindingVersion < 1) {
                throw new IllegalArgumentException("bindingVersion must be at least 1, was " + bindingVersion);
            }
            nonNegative("slotIndex", slotIndex);
            nonNegative("partitionId", partitionId);
            nonNegative("remainingBudgetMicros", remainingBudgetMicros);
            nonNegative("attempt", attempt);
        }
    }

    /**
     * A successful shard run: the partials {@code run()} emitted, in emit order. Type {@code 0x0202}.
     * <pre>
     * i64 requestId | str wireId | i32 partitionId | i64 epoch | i32 rowCount | i32 emitCount
     * | i64 readMicros | i64 guestMicros | list&lt;str key, f64 value&gt; partials
     * </pre>
     * Example, {@code ShardRunResult(42, "w1", 3, 5, 4096, 1, 800, 27, [Partial("sum", 1.5)])}
     * (golden vector {@code shard-run-result.hex}):
     * <pre>
     * 00000047 0202 000000000000002a   length=71, type, requestId=42
     * 00000002 7731 00000003            wireId "w1", partitionId=3
     * 0000000000000005 00001000         epoch=5, rowCount=4096
     * 00000001 0000000000000320         emitCount=1, readMicros=800
     * 000000000000001b 00000001         guestMicros=27, 1 partial
     * 00000003 73756d 3ff8000000000000  key "sum", value 1.5
     * </pre>
     *
     * @param requestId the request's id
     * @param wireId the request's wire id
     * @param partitionId the partition that was read
     * @param epoch the epoch the node ran under
     * @param rowCount rows read, at least 0
     * @param emitCount {@code emit} calls made, at least 0
     * @param readMicros time spent reading rows, at least 0
     * @param guestMicros time spent in guest code, at least 0
     * @param partials the emitted partials, any doubles included
     */
    record ShardRunResult(
            long requestId,
            String wireId,
            int partitionId,
            long epoch,
            int rowCount,
            int emitCount,
            long readMicros,
            long guestMicros,
            List<Partial> partials) implements WireMessage {
        public ShardRunResult {
            Objects.requireNonNull(wireId, "wireId");
            nonNegative("rowCount", rowCount);
            nonNegative("emitCount", emitCount);
            nonNegative("readMicros", readMicros);
            nonNegative("guestMicros", guestMicros);
            partials = List.copyOf(partials);
        }
    }

    /**
     * A failed shard run, with a code from the error table. Type {@code 0x0203}.
     * {@code guestStarted} tells the coordinator whether guest code may have run, which decides
     * whether the failure can be retried elsewhere.
     * <pre>
     * i64 requestId | str wireId | i32 errorCode | bool guestStarted | str message
     * </pre>
     * Example, {@code ShardRunFailure(42, "w1", 4001, true, "trap")} (golden vector {@code shard-run-failure.hex}):
     * <pre>
     * 0000001d 0203 000000000000002a  length=29, type, requestId=42
     * 00000002 7731 00000fa1 01       wireId "w1", errorCode=4001, guestStarted
     * 00000004 74726170               message "trap"
     * </pre>
     *
     * @param requestId the request's id
     * @param wireId the request's wire id
     * @param errorCode an {@link ErrorCode} number
     * @param guestStarted whether guest code may have run
     * @param message a human-readable reason
     */
    record ShardRunFailure(long requestId, String wireId, int errorCode, boolean guestStarted, String message)
            implements WireMessage {
        public ShardRunFailure {
            Objects.requireNonNull(wireId, "wireId");
            Objects.requireNonNull(message, "message");
        }

        /** A failure reply to {@code request} carrying {@code error}'s code and message. */
        public static ShardRunFailure of(ShardRunRequest request, ThresherException error,
                boolean guestStarted) {
            return new ShardRunFailure(request.requestId(), request.wireId(), error.code().code(), guestStarted,
                    error.getMessage());
        }

        /** The error code; a number this build does not know reads as {@code INTERNAL_ERROR}. */
        public ErrorCode code() {
            return ErrorCode.ofCode(errorCode);
        }
    }

    private static void nonNegative(String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must not be negative, was " + value);
        }
    }
}
