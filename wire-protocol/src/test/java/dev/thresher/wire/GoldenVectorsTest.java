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
        assertThat(WireFixtures.decode(golden, WireCodec.MAX_VERSION)).isEqualTo(message);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("retired")
    void refusesRetiredLayoutsByName(WireFixtures.Retired vector) {
        byte[] golden = WireFixtures.goldenBytes(vector.version(), vector.name());
        assertThat(golden).as("retired vector %s.hex", vector).isNotNull();
        assertThat(((golden[4] & 0xff) << 8) | (golden[5] & 0xff)).as("type id of %s", vector).isEqualTo(vector.typeId());
        String named = String.format("message type id 0x%04x is retired", vector.typeId());
        for (int version : new int[] {WireCodec.NO_VERSION, WireCodec.MIN_VERSION, WireCodec.MAX_VERSION}) {
            assertThatThrownBy(() -> WireFixtures.decode(golden, version))
                    .isInstanceOfSatisfying(ThresherException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION);
                        assertThat(e.getMessage()).contains(named).contains(MessageType.RETIRED.get(vector.typeId()));
                    });
        }
    }

    static Stream<WireFixtures.Retired> retired() {
        return WireFixtures.RETIRED.stream();
    }

    @Test
    void everyRetiredIdHasAVectorAndIsNeverReused() {
        assertThat(WireFixtures.RETIRED.stream().map(WireFixtures.Retired::typeId).distinct())
                .containsExactlyInAnyOrderElementsOf(MessageType.RETIRED.keySet());
        for (int id : MessageType.RETIRED.keySet()) {
            assertThat(MessageType.ofId(id)).as("retired id 0x%04x", id).isNull();
        }
    }

    @Test
    void everyMessageTypeHasAGoldenVector() {
        assertThat(WireFixtures.GOLDEN.values().stream().map(MessageType::of).distinct())
                .containsExactlyInAnyOrder(MessageType.values());
    }
}
