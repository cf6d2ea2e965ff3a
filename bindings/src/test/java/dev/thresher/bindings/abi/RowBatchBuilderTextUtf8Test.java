package dev.thresher.bindings.abi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link RowBatchBuilder#setTextUtf8}: the same batch as {@code setText}, and only well-formed UTF-8 accepted. */
class RowBatchBuilderTextUtf8Test {
    private static final List<Column> COLUMNS = List.of(Column.nullable("t", ColumnType.TEXT), Column.of("n", ColumnType.INT64));

    @Test
    void encodesExactlyWhatSetTextEncodes() {
        List<String> values = List.of("", "eu", "grüße", "日本語", "emoji 🎉 and 𝄞", "\u0000nul", "x".repeat(1000),
                "\u07FF\u0800\uFFFF\uD800\uDC00\uDBFF\uDFFF");
        RowBatchBuilder strings = new RowBatchBuilder(3, COLUMNS, 100, 1 << 20);
        RowBatchBuilder raw = new RowBatchBuilder(3, COLUMNS, 100, 1 << 20);
        long n = 0;
        for (String v : values) {
            strings.startRow();
            strings.setText(0, v).setLong(1, n);
            raw.startRow();
            byte[] utf8 = v.getBytes(StandardCharsets.UTF_8);
            // Inside a larger array, to check offset and length are honoured.
            byte[] framed = new byte[utf8.length + 7];
            framed[0] = (byte) 0xFF;
            framed[framed.length - 1] = (byte) 0x80;
            System.arraycopy(utf8, 0, framed, 3, utf8.length);
            raw.setTextUtf8(0, framed, 3, utf8.length).setLong(1, n);
            n++;
        }
        strings.startRow();
        strings.setNull(0).setLong(1, n);
        raw.startRow();
        raw.setNull(0).setLong(1, n);
        assertThat(HexFormat.of().formatHex(raw.finish())).isEqualTo(HexFormat.of().formatHex(strings.finish()));
    }

    @Test
    void refusesMalformedUtf8() {
        String[] bad = {
            "80", // lone continuation
            "bf",
            "c0af", // overlong '/'
            "c1bf",
            "c3", // truncated
            "c328", // bad continuation
            "e080af", // overlong three-byte
            "eda080", // surrogate U+D800
            "edbfbf", // surrogate U+DFFF
            "e282", // truncated
            "f08f8080", // overlong four-byte
            "f4908080", // past U+10FFFF
            "f5808080",
            "ff",
            "f09f8e", // truncated emoji
            "41c3", // good then truncated
        };
        for (String hex : bad) {
            byte[] b = HexFormat.of().parseHex(hex);
            RowBatchBuilder builder = new RowBatchBuilder(1, COLUMNS, 10, 1 << 20);
            builder.startRow();
            assertThatThrownBy(() -> builder.setTextUtf8(0, b, 0, b.length)).as(hex)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not valid UTF-8");
        }
        // After an ASCII run of any length (whole eight-byte words or not), the malformed byte is found where it is.
        for (int run : new int[] {1, 7, 8, 9, 15, 16, 17, 40}) {
            for (String hex : bad) {
                byte[] b = HexFormat.of().parseHex("41".repeat(run) + hex + "42".repeat(run));
                RowBatchBuilder builder = new RowBatchBuilder(1, COLUMNS, 10, 1 << 20);
                builder.startRow();
                assertThatThrownBy(() -> builder.setTextUtf8(0, b, 0, b.length)).as(run + " + " + hex)
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not valid UTF-8");
            }
            byte[] lone = HexFormat.of().parseHex("41".repeat(run) + "80");
            RowBatchBuilder builder = new RowBatchBuilder(1, COLUMNS, 10, 1 << 20);
            builder.startRow();
            assertThatThrownBy(() -> builder.setTextUtf8(0, lone, 0, lone.length))
                    .hasMessageContaining("at byte " + run + ")");
        }
        // The truncation is judged within the slice, not the array.
        byte[] emoji = "🎉".getBytes(StandardCharsets.UTF_8);
        RowBatchBuilder builder = new RowBatchBuilder(1, COLUMNS, 10, 1 << 20);
        builder.startRow();
        assertThatThrownBy(() -> builder.setTextUtf8(0, emoji, 0, 3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.setTextUtf8(0, emoji, 1, 3)).isInstanceOf(IllegalArgumentException.class);
        builder.setTextUtf8(0, emoji, 0, 4);
    }

    @Test
    void agreesWithTheStrictDecoderOnRandomBytes() {
        Random random = new Random(42);
        int accepted = 0;
        for (int round = 0; round < 50_000; round++) {
            byte[] b = new byte[1 + random.nextInt(6)];
            for (int i = 0; i < b.length; i++) {
                // Mostly bytes around the interesting boundaries.
                b[i] = (byte) switch (random.nextInt(4)) {
                    case 0 -> random.nextInt(0x80);
                    case 1 -> 0x80 + random.nextInt(0x40);
                    default -> 0xC0 + random.nextInt(0x40);
                };
            }
            boolean valid = Utf8.decode(ByteBuffer.wrap(b)).isPresent();
            RowBatchBuilder builder = new RowBatchBuilder(1, COLUMNS, 10, 1 << 20);
            builder.startRow();
            boolean took;
            try {
                builder.setTextUtf8(0, b, 0, b.length);
                took = true;
            } catch (IllegalArgumentException e) {
                took = false;
            }
            assertThat(took).as(HexFormat.of().formatHex(b)).isEqualTo(valid);
            accepted += took ? 1 : 0;
        }
        assertThat(accepted).as("the sample has valid and invalid inputs").isBetween(500, 49_500);
    }

    @Test
    void limitsAndMisuseAreAsForSetText() {
        RowBatchBuilder b = new RowBatchBuilder(1, List.of(Column.of("t", ColumnType.TEXT)), 100, 48);
        b.startRow();
        b.setTextUtf8(0, "x".repeat(8).getBytes(StandardCharsets.UTF_8), 0, 8);
        b.startRow();
        byte[] y = {'y'};
        assertThatThrownBy(() -> b.setTextUtf8(0, y, 0, 1)).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE));

        RowBatchBuilder typed = new RowBatchBuilder(1, COLUMNS, 10, 1 << 20);
        typed.startRow();
        assertThatThrownBy(() -> typed.setTextUtf8(1, y, 0, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("INT64");
        assertThatThrownBy(() -> typed.setTextUtf8(0, y, 1, 1)).isInstanceOf(IndexOutOfBoundsException.class);
        typed.setTextUtf8(0, y, 0, 1);
        assertThatThrownBy(() -> typed.setTextUtf8(0, y, 0, 1)).isInstanceOf(IllegalStateException.class);
    }
}
