package dev.thresher.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.HexFormat;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Layouts pinned byte for byte. The vectors under {@code golden/wire/v<N>} (N the version that
 * introduced a layout) were produced once and are only ever added to; a failure here means a
 * released layout changed, which must instead become a new type id. Vectors of retired layouts
 * stay, and this build refuses them by name.
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

    @ParameterizedTest(name = "{0}")
    @MethodSource("retired")
    void refusesRetiredLayoutsByName(String name, int version) {
        byte[] golden = WireFixtures.goldenBytes(version, name);
        assertThat(golden).as("retired vector v%d/%s.hex", version, name).isNotNull();
        assertThatThrownBy(() -> WireFixtures.decode(golden, WireCodec.MAX_VERSION))
                .isInstanceOfSatisfying(ThresherException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION);
                    assertThat(e.getMessage()).contains("retired");
                });
    }

    static Stream<Arguments> retired() {
        return WireFixtures.RETIRED.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    @Test
    void everyMessageTypeHasAGoldenVector() {
        assertThat(WireFixtures.GOLDEN.values().stream().map(MessageType::of).distinct())
                .containsExactlyInAnyOrder(MessageType.values());
    }
}
