package dev.thresher.wire;

import static dev.thresher.wire.WireBytes.readInt;
import static dev.thresher.wire.WireBytes.readString;
import static dev.thresher.wire.WireBytes.writeString;

import dev.thresher.wire.WireMessage.Hello;
import dev.thresher.wire.WireMessage.HelloAck;
import dev.thresher.wire.WireMessage.HelloReject;
import io.netty.buffer.ByteBuf;

/** Payloads of the handshake family ({@code 0x01xx}); their layouts are the same in every version. */
final class HandshakeCodec {
    private HandshakeCodec() {}

    static void writeHello(Hello m, ByteBuf out) {
        out.writeInt(m.minVersion());
        out.writeInt(m.maxVersion());
        writeString(out, m.nodeId());
    }

    static Hello readHello(ByteBuf in) {
        return new Hello(readInt(in, "minVersion"), readInt(in, "maxVersion"), readString(in, "nodeId"));
    }

    static void writeHelloAck(HelloAck m, ByteBuf out) {
        out.writeInt(m.version());
        writeString(out, m.nodeId());
    }

    static HelloAck readHelloAck(ByteBuf in) {
        return new HelloAck(readInt(in, "version"), readString(in, "nodeId"));
    }

    static void writeHelloReject(HelloReject m, ByteBuf out) {
        out.writeInt(m.errorCode());
        writeString(out, m.message());
    }

    static HelloReject readHelloReject(ByteBuf in) {
        return new HelloReject(readInt(in, "errorCode"), readString(in, "message"));
    }
}
