package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.buffer.ByteBuf;

/**
 * Encodes and decodes whole frames (layout in {@link WireMessage}). Stateless: the protocol
 * version agreed for a connection is passed in on every call, 0 meaning "not agreed yet" (only
 * the handshake family is allowed then).
 */
public final class WireCodec {
    /** The lowest protocol version this build speaks. */
    public static final int MIN_VERSION = 3;
    /** The highest protocol version this build speaks. */
    public static final int MAX_VERSION = 3;
    /** Version value of a connection whose handshake has not finished. */
    public static final int NO_VERSION = 0;
    /** Bytes of the length field that starts every frame. */
    public static final int LENGTH_FIELD_BYTES = 4;
    /** Bytes of the type id that follows the length field. */
    public static final int TYPE_ID_BYTES = 2;

    private WireCodec() {}

    /**
     * Appends one whole frame for {@code message} to {@code out}.
     *
     * @throws ThresherException {@link ErrorCode#PROTOCOL_VIOLATION} when the message does not exist in
     *     {@code version}, {@link ErrorCode#PAYLOAD_TOO_LARGE} when the frame would exceed
     *     {@code maxFrameBytes}; {@code out} is then left as it was
     */
    public static void encode(WireMessage message, int version, int maxFrameBytes, ByteBuf out) {
        MessageType type = MessageType.of(message);
        if (!type.allowedAt(version)) {
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION,
                    type + " cannot be sent on a connection at version " + version);
        }
        int start = out.writerIndex();
        out.writeInt(0);
        out.writeShort(type.id());
        switch (message) {
            case WireMessage.Hello m -> HandshakeCodec.writeHello(m, out);
            case WireMessage.HelloAck m -> HandshakeCodec.writeHelloAck(m, out);
            case WireMessage.HelloReject m -> HandshakeCodec.writeHelloReject(m, out);
            case WireMessage.HostRequest m -> HostRunCodec.writeRequest(m, out);
            case WireMessage.HostReply m -> HostRunCodec.writeReply(m, out);
            case WireMessage.CallStop m -> HostRunCodec.writeStop(m, out);
        }
        int frameBytes = out.writerIndex() - start;
        if (frameBytes > maxFrameBytes) {
            out.writerIndex(start);
            throw new ThresherException(ErrorCode.PAYLOAD_TOO_LARGE, type + " frame of " + frameBytes
                    + " bytes exceeds limits.wireMaxFrameBytes=" + maxFrameBytes);
        }
        out.setInt(start, frameBytes - LENGTH_FIELD_BYTES);
    }

    /**
     * Decodes one frame whose length field has already been stripped: a type id and the payload,
     * all of {@code frame}'s readable bytes. Does not release {@code frame}.
     *
     * @throws ThresherException {@link ErrorCode#PROTOCOL_VIOLATION} for an unknown type id, a type not
     *     allowed at {@code version}, a truncated payload or bytes left over after it
     */
    public static WireMessage decode(ByteBuf frame, int version) {
        WireBytes.need(frame, TYPE_ID_BYTES, "type id");
        int id = frame.readUnsignedShort();
        MessageType type = MessageType.ofId(id);
        if (type == null) {
            String retired = MessageType.RETIRED.get(id);
            throw WireBytes.violation(retired != null
                    ? String.format("message type id 0x%04x is retired: %s", id, retired)
                    : String.format("unknown message type id 0x%04x", id));
        }
        if (!type.allowedAt(version)) {
            throw WireBytes.violation(version == NO_VERSION
                    ? type + " received before the handshake finished"
                    : type + " does not exist at protocol version " + version);
        }
        WireMessage message;
        try {
            message = switch (type) {
                case HELLO -> HandshakeCodec.readHello(frame);
                case HELLO_ACK -> HandshakeCodec.readHelloAck(frame);
                case HELLO_REJECT -> HandshakeCodec.readHelloReject(frame);
                case HOST_RUN_REQUEST -> HostRunCodec.readRequest(frame);
                case HOST_RUN_REPLY -> HostRunCodec.readReply(frame);
                case CALL_STOP -> HostRunCodec.readStop(frame);
            };
        } catch (IllegalArgumentException e) {
            // a record's compact constructor refused a decoded value (a negative count, a bad version range,
            // slots out of order)
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, type + " carries an invalid value: "
                    + e.getMessage(), e);
        }
        if (frame.isReadable()) {
            throw WireBytes.violation(type + " frame has " + frame.readableBytes() + " bytes after its payload");
        }
        return message;
    }
}
