package dev.thresher.wire;

import dev.thresher.errors.ThresherException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.MessageToByteEncoder;
import io.netty.handler.codec.MessageToMessageDecoder;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.AttributeKey;
import java.io.IOException;
import java.util.List;
import org.slf4j.Logger;

/**
 * The codec handlers both ends install, in order: framing ({@link FrameDecoder}), whole-frame
 * decoding ({@link MessageDecoder}) and encoding ({@link MessageEncoder}). The version agreed in
 * the handshake lives in the channel attribute {@link #VERSION}; every handler runs on the
 * channel's event loop.
 */
final class WirePipeline {
    /** The protocol version agreed on a channel; absent until the handshake finishes. */
    static final AttributeKey<Integer> VERSION = AttributeKey.valueOf("dev.thresher.wire.version");

    private WirePipeline() {}

    static void addCodec(ChannelPipeline pipeline, int maxFrameBytes) {
        pipeline.addLast("wire-frames", new FrameDecoder(maxFrameBytes));
        pipeline.addLast("wire-decoder", new MessageDecoder());
        pipeline.addLast("wire-encoder", new MessageEncoder(maxFrameBytes));
    }

    static int version(Channel channel) {
        Integer v = channel.attr(VERSION).get();
        return v == null ? WireCodec.NO_VERSION : v;
    }

    static void agree(Channel channel, int version) {
        channel.attr(VERSION).set(version);
    }

    /** Logs why a connection is being closed, one line, then closes it. */
    static void closeOnError(ChannelHandlerContext ctx, Throwable cause, int maxFrameBytes, Logger log) {
        Channel ch = ctx.channel();
        if (cause instanceof TooLongFrameException) {
            log.warn("closing wire connection {}: frame exceeds limits.wireMaxFrameBytes={} ({})",
                    ch, maxFrameBytes, cause.getMessage());
        } else if (findThresher(cause) instanceof ThresherException te) {
            log.warn("closing wire connection {}: {}", ch, te.toString());
        } else if (cause instanceof DecoderException) {
            log.warn("closing wire connection {}: undecodable bytes ({})", ch, cause.getMessage());
        } else if (cause instanceof IOException) {
            log.debug("closing wire connection {}: {}", ch, cause.toString());
        } else {
            log.warn("closing wire connection {} after an unexpected error", ch, cause);
        }
        ctx.close();
    }

    /** The first {@link ThresherException} in {@code t}'s cause chain, or {@code null}. */
    static ThresherException findThresher(Throwable t) {
        for (Throwable cur = t; cur != null; cur = cur.getCause()) {
            if (cur instanceof ThresherException te) {
                return te;
            }
        }
        return null;
    }

    /**
     * Splits the byte stream into frames: a 4-byte big-endian length (of the bytes after it), then
     * that many bytes, handed on without the length field. A whole frame larger than
     * {@code maxFrameBytes} fails fast with {@link TooLongFrameException} before it is buffered.
     */
    static final class FrameDecoder extends LengthFieldBasedFrameDecoder {
        FrameDecoder(int maxFrameBytes) {
            super(maxFrameBytes, 0, WireCodec.LENGTH_FIELD_BYTES, 0, WireCodec.LENGTH_FIELD_BYTES, true);
        }
    }

    /** Decodes one whole frame (type id and payload) at the channel's agreed version; releases it. */
    static final class MessageDecoder extends MessageToMessageDecoder<ByteBuf> {
        MessageDecoder() {
            super(ByteBuf.class);
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf frame, List<Object> out) {
            out.add(WireCodec.decode(frame, version(ctx.channel())));
        }
    }

    /** Encodes messages into whole frames at the channel's agreed version. */
    static final class MessageEncoder extends MessageToByteEncoder<WireMessage> {
        private final int maxFrameBytes;

        MessageEncoder(int maxFrameBytes) {
            super(WireMessage.class);
            this.maxFrameBytes = maxFrameBytes;
        }

        @Override
        protected void encode(ChannelHandlerContext ctx, WireMessage message, ByteBuf out) {
            WireCodec.encode(message, version(ctx.channel()), maxFrameBytes, out);
        }
    }
}
