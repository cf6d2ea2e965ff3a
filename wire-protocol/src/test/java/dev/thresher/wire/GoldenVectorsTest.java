package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HexFormat;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Version 1 layouts pinned byte for byte. The vectors under {@code golden/wire/v1} were produced
 * once and are only ever added to; a failure here means a released layout changed, which must
 * instead become a new type id.
 */
class GoldenVectorsTest {

    static Stream<Arguments> vectors() {
        return WireFixtures.GOLDEN.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void encodesToTheGoldenBytes(String name, WireMessage message) {
        byte[] golden = WireFixtures.goldenBytes(name);
        String actual = HexFormat.of().formatHex(WireFixtures.encode(message));
        assertThat(golden).as("golden vector %s.hex is missing; its encoding today is%n%s", name, actual).isNotNull();
        assertThat(actual).isEqualTo(HexFormat.of().formatHex(golden));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void decodesTheGoldenBytes(String name, WireMessage message) {
        byte[] golden = WireFixtures.goldenBytes(name);
        assertThat(golden).as("golden vector %s.hex", name).isNotNull();
        WireFixtures.assertBitExact(WireFixtures.decode(golden, WireCodec.MAX_VERSION), message);
    }

    @Test
    void everyMessageTypeHasAGoldenVector() {
        assertThat(WireFixtures.GOLDEN.values().stream().map(MessageType::of).distinct())
                .containsExactlyInAnyOrder(MessageType.values());
    }
}
