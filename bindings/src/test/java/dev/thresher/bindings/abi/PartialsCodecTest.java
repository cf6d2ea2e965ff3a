package dev.thresher.bindings.abi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.Partial;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

class PartialsCodecTest {
    @Test
    void goldenRevenuePartials() {
        byte[] bytes = PartialsCodec.encode(AbiVectors.partialsRevenue());
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(HexFormat.of().formatHex(GoldenVectors.load("partials_revenue")));
        assertThat(PartialsCodec.decode(bytes)).isEqualTo(AbiVectors.partialsRevenue());
    }

    @Test
    void goldenOddValuesKeepBitsAndOrder() {
        byte[] bytes = PartialsCodec.encode(AbiVectors.partialsOddValues());
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(HexFormat.of().formatHex(GoldenVectors.load("partials_odd_values")));
        List<Partial> back = PartialsCodec.decode(bytes);
        assertThat(back).extracting(Partial::key).containsExactly("", "ключ", "inf", "min");
        for (int i = 0; i < back.size(); i++) {
            assertThat(Double.doubleToRawLongBits(back.get(i).value()))
                    .isEqualTo(Double.doubleToRawLongBits(AbiVectors.partialsOddValues().get(i).value()));
        }
    }

    @Test
    void goldenEmpty() {
        assertThat(PartialsCodec.encode(List.of())).isEqualTo(GoldenVectors.load("partials_empty"));
        assertThat(PartialsCodec.decode(GoldenVectors.load("partials_empty"))).isEmpty();
    }

    @Test
    void javadocExample() {
        assertThat(HexFormat.of().formatHex(PartialsCodec.encode(List.of(new Partial("a", 1.0)))))
                .isEqualTo("54504c31" + "01000000" + "01000000" + "61" + "000000000000f03f");
    }

    @Test
    void decodeRefusesDamage() {
        byte[] good = PartialsCodec.encode(AbiVectors.partialsRevenue());
        for (int cut = 0; cut < good.length; cut++) {
            int n = cut;
            assertThatThrownBy(() -> PartialsCodec.decode(Arrays.copyOf(good, n))).isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> PartialsCodec.decode(Arrays.copyOf(good, good.length + 1))).isInstanceOf(IllegalArgumentException.class);
        byte[] hugeCount = HexFormat.of().parseHex("54504c31ffffffff");
        assertThatThrownBy(() -> PartialsCodec.decode(hugeCount)).isInstanceOf(IllegalArgumentException.class);
        byte[] badUtf8 = PartialsCodec.encode(List.of(new Partial("a", 1.0)));
        badUtf8[12] = (byte) 0xff;
        assertThatThrownBy(() -> PartialsCodec.decode(badUtf8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PartialsCodec.encode(List.of(new Partial("\udc00", 1.0)))).isInstanceOf(IllegalArgumentException.class);
    }
}
