package dev.thresher.pgwire;

import dev.thresher.bindings.abi.Utf8;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageDecoder;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns one whole typed message (a frame from the length-field frame decoder: {@code byte type,
 * int32 length, body}) into a {@link FrontendMessage}. It never sees partial messages, copies what it
 * keeps, and releases the frame (done by {@link MessageToMessageDecoder}). A type it does not know or a
 * body that does not match its type is a {@link ErrorCode#PROTOCOL_VIOLATION}. Strings are decoded
 * strictly as UTF-8: a message holding an invalid byte sequence becomes {@link FrontendMessage.InvalidText}
 * (never a silent U+FFFD), which the connection answers with {@link ErrorCode#INVALID_TEXT_ENCODING}.
 *
 * <p>Worked example: {@code 51 00 00 00 0d 43 41 4c 4c 20 2e 2e 2e 00} ('Q', length 13,
 * {@code "CALL ..."\0}) decodes to {@code Query("CALL ...")}.
 */
final class FrontendMessageDecoder extends MessageToMessageDecoder<ByteBuf> {

    FrontendMessageDecoder() {
        super(ByteBuf.class);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf frame, List<Object> out) {
        char type = (char) frame.readUnsignedByte();
        frame.skipBytes(4);
        FrontendMessage message;
        try {
            message = switch (type) {
                case 'Q' -> new FrontendMessage.Query(cstring(frame));
                case 'P' -> parse(frame);
                case 'B' -> bind(frame);
                case 'D' -> new FrontendMessage.Describe(target(frame), cstring(frame));
                case 'E' -> new FrontendMessage.Execute(cstring(frame), frame.readInt());
                case 'C' -> new FrontendMessage.Close(target(frame), cstring(frame));
                case 'S' -> new FrontendMessage.Sync();
                case 'H' -> new FrontendMessage.Flush();
                case 'X' -> new FrontendMessage.Terminate();
                case 'p' -> {
                    byte[] body = new byte[frame.readableBytes()];
                    frame.readBytes(body);
                    yield new FrontendMessage.AuthResponse(body);
                }
                case 'd' -> {
                    byte[] data = new byte[frame.readableBytes()];
                    frame.readBytes(data);
                    yield new FrontendMessage.CopyData(data);
                }
                case 'c' -> new FrontendMessage.CopyDone();
                case 'f' -> new FrontendMessage.CopyFail(cstring(frame));
                default -> throw violation("invalid or unsupported frontend message type '" + printable(type) + "'");
            };
        } catch (IndexOutOfBoundsException e) {
            throw violation("invalid message format: message '" + printable(type) + "' is truncated");
        } catch (InvalidUtf8 e) {
            frame.skipBytes(frame.readableBytes());
            out.add(new FrontendMessage.InvalidText(type, "invalid byte sequence for encoding \"UTF8\" in message '"
                    + printable(type) + "'"));
            return;
        }
        if (frame.isReadable()) {
            throw violation("invalid message format: " + frame.readableBytes() + " extra bytes in message '"
                    + printable(type) + "'");
        }
        out.add(message);
    }

    private static FrontendMessage.Parse parse(ByteBuf frame) {
        String name = cstring(frame);
        String sql = cstring(frame);
        int count = frame.readUnsignedShort();
        List<Integer> types = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            types.add(frame.readInt());
        }
        return new FrontendMessage.Parse(name, sql, types);
    }

    private static FrontendMessage.Bind bind(ByteBuf frame) {
        String portal = cstring(frame);
        String statement = cstring(frame);
        List<Short> formats = shorts(frame);
        int count = frame.readUnsignedShort();
        List<byte[]> values = new ArrayList<>(Math.min(count, frame.readableBytes() / 4));
        for (int i = 0; i < count; i++) {
            int length = frame.readInt();
            if (length < -1 || length > frame.readableBytes()) {
                throw violation("invalid message format: parameter " + (i + 1) + " has length " + length);
            }
            if (length == -1) {
                values.add(null);
            } else {
                byte[] value = new byte[length];
                frame.readBytes(value);
                values.add(value);
            }
        }
        return new FrontendMessage.Bind(portal, statement, formats, values, shorts(frame));
    }

    private static List<Short> shorts(ByteBuf frame) {
        int count = frame.readUnsignedShort();
        List<Short> values = new ArrayList<>(Math.min(count, frame.readableBytes() / 2));
        for (int i = 0; i < count; i++) {
            values.add(frame.readShort());
        }
        return values;
    }

    private static FrontendMessage.Target target(ByteBuf frame) {
        char kind = (char) frame.readUnsignedByte();
        return switch (kind) {
            case 'S' -> FrontendMessage.Target.STATEMENT;
            case 'P' -> FrontendMessage.Target.PORTAL;
            default -> throw violation("invalid Describe or Close target '" + printable(kind) + "'");
        };
    }

    private static String cstring(ByteBuf frame) {
        int length = frame.bytesBefore((byte) 0);
        if (length < 0) {
            throw violation("invalid string in message: no terminator");
        }
        byte[] bytes = new byte[length];
        frame.readBytes(bytes);
        frame.skipBytes(1);
        return Utf8.decode(ByteBuffer.wrap(bytes)).orElseThrow(InvalidUtf8::new);
    }

    /** A string that is not valid UTF-8; caught in {@link #decode}. */
    private static final class InvalidUtf8 extends RuntimeException {
        InvalidUtf8() {
            super(null, null, false, false);
        }
    }

    private static String printable(char c) {
        return c >= 0x20 && c < 0x7f ? String.valueOf(c) : String.format("\\x%02x", (int) c);
    }

    private static ThresherException violation(String message) {
        return new ThresherException(ErrorCode.PROTOCOL_VIOLATION, message);
    }
}
