package dev.thresher.pgwire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToByteEncoder;
import java.nio.charset.StandardCharsets;

/**
 * Writes {@link BackendMessage}s: {@code byte type, int32 length} (itself included), body; the layout
 * of each body is on its record. Worked example: {@code ReadyForQuery('I')} is {@code 5a 00 00 00 05 49}.
 * Stateless, so one instance serves every connection.
 */
@ChannelHandler.Sharable
final class BackendMessageEncoder extends MessageToByteEncoder<BackendMessage> {
    static final BackendMessageEncoder INSTANCE = new BackendMessageEncoder();

    private BackendMessageEncoder() {
        super(BackendMessage.class);
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, BackendMessage message, ByteBuf out) {
        // Long because: one case per backend message type; splitting would scatter the wire format.
        switch (message) {
            case BackendMessage.EncryptionRefused r -> out.writeByte('N');
            case BackendMessage.EncryptionAccepted a -> out.writeByte('S');
            case BackendMessage.AuthenticationOk a -> {
                int at = begin(out, 'R');
                out.writeInt(0);
                end(out, at);
            }
            case BackendMessage.AuthenticationCleartextPassword a -> {
                int at = begin(out, 'R');
                out.writeInt(3);
                end(out, at);
            }
            case BackendMessage.AuthenticationSasl a -> {
                int at = begin(out, 'R');
                out.writeInt(10);
                a.mechanisms().forEach(m -> cstring(out, m));
                out.writeByte(0);
                end(out, at);
            }
            case BackendMessage.AuthenticationSaslContinue a -> {
                int at = begin(out, 'R');
                out.writeInt(11);
                out.writeBytes(a.data());
                end(out, at);
            }
            case BackendMessage.AuthenticationSaslFinal a -> {
                int at = begin(out, 'R');
                out.writeInt(12);
                out.writeBytes(a.data());
                end(out, at);
            }
            case BackendMessage.NegotiateProtocolVersion v -> {
                int at = begin(out, 'v');
                out.writeInt(v.newestMinorVersion());
                out.writeInt(v.unrecognizedOptions().size());
                v.unrecognizedOptions().forEach(o -> cstring(out, o));
                end(out, at);
            }
            case BackendMessage.ParameterStatus s -> {
                int at = begin(out, 'S');
                cstring(out, s.name());
                cstring(out, s.value());
                end(out, at);
            }
            case BackendMessage.BackendKeyData k -> {
                int at = begin(out, 'K');
                out.writeInt(k.processId());
                out.writeInt(k.secretKey());
                end(out, at);
            }
            case BackendMessage.ReadyForQuery r -> {
                int at = begin(out, 'Z');
                out.writeByte(r.status());
                end(out, at);
            }
            case BackendMessage.RowDescription d -> {
                int at = begin(out, 'T');
                out.writeShort(d.columns().size());
                for (BackendMessage.Column c : d.columns()) {
                    cstring(out, c.name());
                    out.writeInt(0); // table OID: not a table column
                    out.writeShort(0); // attribute number
                    out.writeInt(c.typeOid());
                    out.writeShort(c.typeLength());
                    out.writeInt(-1); // type modifier
                    out.writeShort(c.format());
                }
                end(out, at);
            }
            case BackendMessage.DataRow r -> {
                int at = begin(out, 'D');
                out.writeShort(r.values().size());
                for (byte[] value : r.values()) {
                    if (value == null) {
                        out.writeInt(-1);
                    } else {
                        out.writeInt(value.length);
                        out.writeBytes(value);
                    }
                }
                end(out, at);
            }
            case BackendMessage.CommandComplete c -> {
                int at = begin(out, 'C');
                cstring(out, c.tag());
                end(out, at);
            }
            case BackendMessage.CopyInResponse c -> {
                int at = begin(out, 'G');
                out.writeByte(0);
                out.writeShort(c.columns());
                for (int i = 0; i < c.columns(); i++) {
                    out.writeShort(0);
                }
                end(out, at);
            }
            case BackendMessage.EmptyQueryResponse e -> end(out, begin(out, 'I'));
            case BackendMessage.ParseComplete p -> end(out, begin(out, '1'));
            case BackendMessage.BindComplete b -> end(out, begin(out, '2'));
            case BackendMessage.CloseComplete c -> end(out, begin(out, '3'));
            case BackendMessage.NoData n -> end(out, begin(out, 'n'));
            case BackendMessage.PortalSuspended p -> end(out, begin(out, 's'));
            case BackendMessage.ParameterDescription d -> {
                int at = begin(out, 't');
                out.writeShort(d.typeOids().size());
                d.typeOids().forEach(out::writeInt);
                end(out, at);
            }
            case BackendMessage.ErrorResponse e -> {
                int at = begin(out, 'E');
                PgError error = e.error();
                field(out, 'S', error.severity());
                field(out, 'V', error.severity());
                field(out, 'C', error.sqlState());
                field(out, 'M', error.message());
                field(out, 'D', e.detail());
                field(out, 'H', error.hint());
                out.writeByte(0);
                end(out, at);
            }
            case BackendMessage.NoticeResponse n -> {
                int at = begin(out, 'N');
                field(out, 'S', n.severity());
                field(out, 'V', n.severity());
                field(out, 'C', n.sqlState());
                field(out, 'M', n.message());
                if (n.detail() != null) {
                    field(out, 'D', n.detail());
                }
                out.writeByte(0);
                end(out, at);
            }
        }
    }

    /** Writes the type byte and a length placeholder; returns where the length goes. */
    private static int begin(ByteBuf out, char type) {
        out.writeByte(type);
        int at = out.writerIndex();
        out.writeInt(0);
        return at;
    }

    private static void end(ByteBuf out, int lengthAt) {
        out.setInt(lengthAt, out.writerIndex() - lengthAt);
    }

    private static void field(ByteBuf out, char code, String value) {
        out.writeByte(code);
        cstring(out, value);
    }

    /** A NUL-terminated UTF-8 string; a NUL inside the value (only possible in messages) would cut the frame. */
    private static void cstring(ByteBuf out, String value) {
        out.writeCharSequence(value.indexOf('\0') < 0 ? value : value.replace("\0", "\\0"), StandardCharsets.UTF_8);
        out.writeByte(0);
    }
}
