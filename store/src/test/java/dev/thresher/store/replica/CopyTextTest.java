package dev.thresher.store.replica;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** PostgreSQL's COPY text format, one row at a time, as COPY TO writes it and as COPY FROM reads escapes. */
class CopyTextTest {
    private static Tuple parse(String line, int columns) {
        return CopyText.parse(line.getBytes(UTF_8), columns);
    }

    private static List<String> strings(Tuple t) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < t.size(); i++) {
            out.add(t.isNull(i) ? null : new String(t.value(i), UTF_8));
        }
        return out;
    }

    @Test
    void columnsAreSplitOnTabs() {
        assertThat(strings(parse("1\tabc\t2.5", 3))).containsExactly("1", "abc", "2.5");
        assertThat(strings(parse("only", 1))).containsExactly("only");
    }

    @Test
    void nullIsExactlyBackslashN() {
        Tuple t = parse("\\N\t\\N\tx", 3);
        assertThat(t.isNull(0)).isTrue();
        assertThat(t.isNull(1)).isTrue();
        assertThat(strings(t)).containsExactly(null, null, "x");
        // Escaped backslash then N is the two characters, not NULL; \N inside a value is an N.
        assertThat(strings(parse("\\\\N\ta\\Nb", 2))).containsExactly("\\N", "aNb");
        assertThat(parse("\\N", 1).isUnchanged(0)).isFalse();
    }

    @Test
    void emptyStringsAreNotNull() {
        Tuple t = parse("\t\t", 3);
        assertThat(strings(t)).containsExactly("", "", "");
        assertThat(t.isNull(0)).isFalse();
        assertThat(strings(parse("", 1))).containsExactly("");
        assertThat(parse("", 0).size()).isZero();
    }

    @Test
    void namedEscapesAreControlCharacters() {
        assertThat(strings(parse("a\\tb\\nc\\rd\\\\e\\bf\\fg\\vh", 1)))
                .containsExactly("a\tb\nc\rd\\e\bf\fg\u000bh");
        assertThat(strings(parse("tab\\there\tline\\nbreak\tback\\\\slash", 3)))
                .containsExactly("tab\there", "line\nbreak", "back\\slash");
    }

    @Test
    void octalAndHexEscapesAreBytes() {
        assertThat(parse("\\101\\0\\7\\12x\\1234", 1).value(0)).containsExactly('A', 0, 7, 10, 'x', 'S', '4');
        assertThat(parse("\\777", 1).value(0)).containsExactly(0xff);
        assertThat(parse("\\x41\\x4a\\xA\\x4G\\xz\\x", 1).value(0))
                .containsExactly('A', 'J', 10, 4, 'G', 'x', 'z', 'x');
        // A UTF-8 character spelled as escaped bytes.
        assertThat(strings(parse("\\303\\251t\\xc3\\xa9", 1))).containsExactly("été");
    }

    @Test
    void aBackslashBeforeAnyOtherByteIsThatByte() {
        assertThat(strings(parse("\\a\\.\\\t\\é", 1))).containsExactly("a.\té");
    }

    @Test
    void multibyteUtf8PassesThroughUnchanged() {
        String text = "ünïcødé €𝄞 日本語";
        assertThat(parse(text + "\t" + text, 2).value(1)).isEqualTo(text.getBytes(UTF_8));
    }

    @Test
    void byteaHexTextHasItsBackslashEscaped() {
        // bytea '\x00ff' is written by COPY as \\x00ff; the value is the text SELECT col::text returns.
        assertThat(strings(parse("\\\\x00ff\t\\\\x", 2))).containsExactly("\\x00ff", "\\x");
    }

    @Test
    void wrongColumnCountsAreRefused() {
        assertThatThrownBy(() -> parse("1\t2", 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("2 columns, expected 3");
        assertThatThrownBy(() -> parse("1\t2\t3", 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("more than 2 columns");
        assertThatThrownBy(() -> parse("\t", 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("more than 1 columns");
        assertThatThrownBy(() -> parse("x", 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no columns");
        assertThatThrownBy(() -> parse("x", -1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void malformedRowsAreRefused() {
        assertThatThrownBy(() -> parse("ab\\", 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lone backslash");
        assertThatThrownBy(() -> parse("a\nb", 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("raw newline");
        assertThatThrownBy(() -> parse("a\rb", 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("raw carriage return");
        assertThatThrownBy(() -> CopyText.parseRow("a\tb".getBytes(UTF_8), 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("newline");
    }

    @Test
    void aRowAsReadFromCopyEndsWithItsNewline() {
        assertThat(strings(CopyText.parseRow("1\t\\N\n".getBytes(UTF_8), 2))).containsExactly("1", null);
        assertThat(strings(CopyText.parseRow("\n".getBytes(UTF_8), 1))).containsExactly("");
        byte[] framed = "xx7\tseven\nyy".getBytes(UTF_8);
        assertThat(strings(CopyText.parse(framed, 2, 7, 2))).containsExactly("7", "seven");
    }

    @Test
    void theRowSinkSplitsRowsHoweverTheyAreChunked() throws IOException {
        byte[] stream = "1\ta\\tb\n2\t\\N\n3\tünï\n\t\n".getBytes(UTF_8);
        for (int chunk = 1; chunk <= stream.length; chunk++) {
            List<List<String>> rows = new ArrayList<>();
            try (OutputStream sink = CopyText.rowSink(2, t -> rows.add(strings(t)))) {
                for (int i = 0; i < stream.length; i += chunk) {
                    sink.write(stream, i, Math.min(chunk, stream.length - i));
                }
            }
            assertThat(rows).as("chunks of %d", chunk).containsExactly(
                    List.of("1", "a\tb"), java.util.Arrays.asList("2", null), List.of("3", "ünï"), List.of("", ""));
        }
    }

    @Test
    void theRowSinkRefusesAnUnterminatedLastRowAndBadRows() throws IOException {
        OutputStream sink = CopyText.rowSink(1, t -> {});
        sink.write("a\nb".getBytes(UTF_8));
        assertThatThrownBy(sink::close).isInstanceOf(IOException.class).hasMessageContaining("no newline");
        OutputStream wrong = CopyText.rowSink(1, t -> {});
        assertThatThrownBy(() -> wrong.write("a\tb\n".getBytes(UTF_8))).isInstanceOf(IllegalArgumentException.class);
    }

    private static List<String> fields(String line, char delimiter, String nullMarker) {
        List<String> out = new ArrayList<>();
        for (byte[] f : CopyText.fields(line.getBytes(UTF_8), (byte) delimiter, nullMarker.getBytes(UTF_8))) {
            out.add(f == null ? null : new String(f, UTF_8));
        }
        return out;
    }

    @Test
    void fieldsOfALineReadWithCopyFromsOptions() {
        assertThat(fields("1|a\\|b|NA|\\x41\\101", '|', "NA")).containsExactly("1", "a|b", null, "AA");
        // the NULL string is compared before escapes are decoded, as COPY FROM does
        assertThat(fields("\\N;N\\A;NA", ';', "NA")).containsExactly("N", "NA", null);
        assertThat(fields("", '\t', "\\N")).containsExactly("");
        assertThat(fields("a\t\t", '\t', "\\N")).containsExactly("a", "", "");
        assertThat(fields(String.join("\t", java.util.Collections.nCopies(9, "x")), '\t', "\\N")).hasSize(9);
    }

    @Test
    void fieldsRefuseWhatCopyFromRefuses() {
        assertThatThrownBy(() -> fields("a,b\\", ',', "")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lone backslash");
        assertThatThrownBy(() -> CopyText.fields(new byte[] {'a'}, (byte) 0xc3, new byte[0]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one byte of ASCII");
        assertThatThrownBy(() -> CopyText.fields(new byte[] {'a'}, (byte) '\\', new byte[0]))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
