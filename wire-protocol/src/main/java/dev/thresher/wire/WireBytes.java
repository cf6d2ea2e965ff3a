package dev.thresher.wire;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The field encodings shared by every codec ({@code i32}, {@code i64}, {@code bool}, {@code str},
 * list counts; see {@link WireMessage}). Readers check the bytes left in the frame
 * before each field and throw {@link ErrorCode#PROTOCOL_VIOLATION} instead of reading past it.
 */
final class WireBytes {
    private WireBytes() {}

    static void writeString(ByteBuf out, String s) {
        int lengthIndex = out.writerIndex();
        out.writeInt(0);
        int written = ByteBufUtil.writeUtf8(out, s);
        out.setInt(lengthIndex, written);
    }

    static void writeBool(ByteBuf out, boolean v) {
        out.writeByte(v ? 1 : 0);
    }

    static int readInt(ByteBuf in, String field) {
        need(in, 4, field);
        return in.readInt();
    }

    static long readLong(ByteBuf in, String field) {
        need(in, 8, field);
        return in.readLong();
    }

    static boolean readBool(ByteBuf in, String field) {
        need(in, 1, field);
        byte b = in.readByte();
        return switch (b) {
            case 0 -> false;
            case 1 -> true;
            default -> throw violation(field + " is a bool but reads 0x" + Integer.toHexString(b & 0xff));
        };
    }

    static String readString(ByteBuf in, String field) {
        int length = readInt(in, field + " length");
        if (length < 0) {
            throw violation(field + " has negative length " + length);
        }
        need(in, length, field);
        ByteBuffer bytes = in.nioBuffer(in.readerIndex(), length);
        String s;
        try {
            s = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(bytes)
                    .toString();
        } catch (CharacterCodingException e) {
            throw new ThresherException(ErrorCode.PROTOCOL_VIOLATION, field + " is not valid UTF-8", e);
        }
        in.skipBytes(length);
        return s;
    }

    /**
     * A list count, refused when the remaining frame bytes cannot hold that many elements of at
     * least {@code minElementBytes} each, so a hostile count cannot make the reader allocate.
     */
    static int readCount(ByteBuf in, String field, int minElementBytes) {
        int count = readInt(in, field + " count");
        if (count < 0) {
            throw violation(field + " has negative count " + count);
        }
        if ((long) count * minElementBytes > in.readableBytes()) {
            throw violation(field + " claims " + count + " elements but only " + in.readableBytes()
                    + " bytes remain in the frame");
        }
        return count;
    }

    static void need(ByteBuf in, int bytes, String field) {
        if (in.readableBytes() < bytes) {
            throw violation("frame truncated: " + field + " needs " + bytes + " bytes, " + in.readableBytes()
                    + " remain");
        }
    }

    static ThresherException violation(String message) {
        return new ThresherException(ErrorCode.PROTOCOL_VIOLATION, message);
    }
}
