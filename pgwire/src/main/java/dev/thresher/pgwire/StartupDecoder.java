package dev.thresher.pgwire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Decodes the startup phase, whose packets have no type byte: {@code int32 length} (itself included),
 * {@code int32 code}, then a body that depends on the code.
 *
 * <pre>
 * SSLRequest      00 00 00 08  04 d2 16 2f                      code 80877103
 * GSSENCRequest   00 00 00 08  04 d2 16 30                      code 80877104
 * CancelRequest   00 00 00 10  04 d2 16 2e  pid:int32 key:int32 code 80877102
 * StartupMessage  len:int32    00 03 00 00  (name\0 value\0)* \0  code 196608 = protocol 3.0
 * </pre>
 *
 * <p>Worked example: {@code 00 00 00 14 00 03 00 00 75 73 65 72 00 61 6c 69 63 65 00 00} is the 20-byte
 * 3.0 StartupMessage {@code user=alice}: length 0x14, version 0x00030000, {@code "user\0" "alice\0" "\0"}.
 *
 * <p>After a StartupMessage the decoder replaces itself with a {@link LengthFieldBasedFrameDecoder}
 * followed by a {@link FrontendMessageDecoder}; bytes already received after the StartupMessage are
 * handed to the new frame decoder, so pipelined clients lose nothing. After a failure it drops all
 * further input (the connection handler closes the connection).
 *
 * <p>When the server offers TLS, an SSLRequest must be the last bytes the client sent before the answer: bytes
 * already received after it were not encrypted (a man in the middle may have put them there, CVE-2021-23214), so
 * they are refused, before the SSLRequest is answered, as PostgreSQL refuses "unencrypted data after SSL request".
 */
final class StartupDecoder extends ByteToMessageDecoder {
    static final int SSL_REQUEST_CODE = 80_877_103;
    static final int GSSENC_REQUEST_CODE = 80_877_104;
    static final int CANCEL_REQUEST_CODE = 80_877_102;
    /** PostgreSQL's MAX_STARTUP_PACKET_LENGTH: an unauthenticated client cannot make us buffer more. */
    static final int MAX_STARTUP_PACKET_BYTES = 10_000;

    static final String FRAME_DECODER = "pgwire-frame";
    static final String MESSAGE_DECODER = "pgwire-message";

    private final Limits limits;
    /** Whether an SSLRequest may be answered {@code 'S'}: then nothing may follow it before the answer. */
    private final boolean tlsOffered;
    private boolean failed;

    StartupDecoder(Limits limits) {
        this(limits, false);
    }

    StartupDecoder(Limits limits, boolean tlsOffered) {
        this.limits = limits;
        this.tlsOffered = tlsOffered;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return;
        }
        if (in.readableBytes() < 4) {
            return;
        }
        int length = in.getInt(in.readerIndex());
        if (length < 8) {
            throw fail(ErrorCode.PROTOCOL_VIOLATION, "invalid length of startup packet: " + length);
        }
        if (length > Math.min(MAX_STARTUP_PACKET_BYTES, limits.pgwireMaxMessageBytes())) {
            throw fail(ErrorCode.PAYLOAD_TOO_LARGE, "startup packet of " + length + " bytes is too large");
        }
        if (in.readableBytes() < length) {
            return;
        }
        ByteBuf packet = in.readSlice(length).skipBytes(4);
        int code = packet.readInt();
        switch (code) {
            case SSL_REQUEST_CODE -> {
                if (tlsOffered && in.isReadable()) {
                    throw fail(ErrorCode.PROTOCOL_VIOLATION, "received unencrypted data after SSL request: "
                            + "wait for the server's answer before sending more (this could be either a client-software"
                            + " bug or evidence of an attempted man-in-the-middle attack)");
                }
                out.add(new FrontendMessage.SslRequest());
            }
            case GSSENC_REQUEST_CODE -> out.add(new FrontendMessage.GssEncRequest());
            case CANCEL_REQUEST_CODE -> {
                if (packet.readableBytes() != 8) {
                    throw fail(ErrorCode.PROTOCOL_VIOLATION, "invalid length of cancel request: " + length);
                }
                out.add(new FrontendMessage.CancelRequest(packet.readInt(), packet.readInt()));
            }
            default -> {
                out.add(new FrontendMessage.Startup(code >>> 16, code & 0xFFFF, parameters(packet)));
                switchToMessages(ctx);
            }
        }
    }

    private Map<String, String> parameters(ByteBuf packet) {
        Map<String, String> parameters = new LinkedHashMap<>();
        while (true) {
            String name = cstring(packet);
            if (name.isEmpty()) {
                break;
            }
            parameters.put(name, cstring(packet));
        }
        if (packet.isReadable()) {
            throw fail(ErrorCode.PROTOCOL_VIOLATION, "invalid startup packet layout: bytes after the terminator");
        }
        return parameters;
    }

    private String cstring(ByteBuf packet) {
        int length = packet.bytesBefore((byte) 0);
        if (length < 0) {
            throw fail(ErrorCode.PROTOCOL_VIOLATION, "invalid startup packet layout: expected terminator as last byte");
        }
        String s = packet.toString(packet.readerIndex(), length, StandardCharsets.UTF_8);
        packet.skipBytes(length + 1);
        return s;
    }

    private void switchToMessages(ChannelHandlerContext ctx) {
        // Order matters: the message decoder must exist before the frame decoder receives leftover bytes.
        ctx.pipeline().addAfter(ctx.name(), MESSAGE_DECODER, new FrontendMessageDecoder());
        ctx.pipeline().replace(this, FRAME_DECODER, frameDecoder(limits));
    }

    /**
     * Frames typed messages: {@code byte type, int32 length} (itself included, the type byte not), so a
     * frame is {@code length + 1} bytes, capped at {@link Limits#pgwireMaxMessageBytes()} and refused as soon
     * as a larger length field arrives.
     */
    static LengthFieldBasedFrameDecoder frameDecoder(Limits limits) {
        return new LengthFieldBasedFrameDecoder(limits.pgwireMaxMessageBytes(), 1, 4, -4, 0, true);
    }

    private ThresherException fail(ErrorCode code, String message) {
        failed = true;
        return new ThresherException(code, message);
    }
}
