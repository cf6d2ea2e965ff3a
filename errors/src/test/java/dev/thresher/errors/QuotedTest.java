package dev.thresher.errors;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class QuotedTest {
    @Test
    void shortPrintableTextIsShownAsIs() {
        assertThat(Quoted.of("revenue_by_region")).isEqualTo("revenue_by_region");
        assertThat(Quoted.of("région €")).isEqualTo("région €");
        assertThat(Quoted.of("")).isEmpty();
        assertThat(Quoted.of(null)).isEqualTo("null");
    }

    @Test
    void longTextIsCutAfterSixtyFourCharactersNamingItsWholeLength() {
        String mebibyte = "x".repeat(1 << 20);
        assertThat(Quoted.of(mebibyte)).isEqualTo("x".repeat(64) + "…(1048576 bytes)");
        assertThat(Quoted.of("x".repeat(64))).isEqualTo("x".repeat(64));
        // bytes, not characters: 65 euro signs are 195 bytes
        assertThat(Quoted.of("€".repeat(65))).isEqualTo("€".repeat(64) + "…(195 bytes)");
        // a surrogate pair is one character and is never split
        String clefs = "\uD834\uDD1E".repeat(65);
        assertThat(Quoted.of(clefs)).isEqualTo("\uD834\uDD1E".repeat(64) + "…(260 bytes)");
    }

    @Test
    void controlAndInvisibleCharactersAreEscaped() {
        assertThat(Quoted.of("a\u0001b\nc\rd\te\u001b[2J")).isEqualTo("a\\x01b\\nc\\rd\\te\\x1b[2J");
        assertThat(Quoted.of("\u007f\u0085")).isEqualTo("\\x7f\\x85");
        assertThat(Quoted.of("evil\u202Etxt.exe\u2028")).isEqualTo("evil\\u202etxt.exe\\u2028");
        assertThat(Quoted.of("lone \uD800 surrogate")).isEqualTo("lone \\ud800 surrogate");
        assertThat(Quoted.of("back\\slash")).isEqualTo("back\\\\slash");
        assertThat(Quoted.of("\u0000".repeat(100))).startsWith("\\x00\\x00").endsWith("…(100 bytes)")
                .hasSize(64 * 4 + "…(100 bytes)".length());
    }

    @Test
    void aWholeMessageKeepsItsLinesButNoTerminalOrReorderingCharacter() {
        String built = "binding 'a\u001b[2Jb\u202E' does not exist\nguest output:\n\tline";
        assertThat(Quoted.message(built))
                .isEqualTo("binding 'a\\x1b[2Jb\\u202e' does not exist\nguest output:\n\tline");
        assertThat(Quoted.message("quoted already: a\\nb")).as("a backslash stays, so quoted text reads the same")
                .isEqualTo("quoted already: a\\nb");
        String plain = "there is no table sales";
        assertThat(Quoted.message(plain)).isSameAs(plain);
        assertThat(Quoted.message("\r\u0000\u0085")).isEqualTo("\\r\\x00\\x85");
    }

    @Test
    void aWholeMessageIsCutAtItsBound() {
        String huge = "m".repeat(Quoted.MAX_MESSAGE_CODE_POINTS + 10);
        assertThat(Quoted.message(huge)).isEqualTo("m".repeat(Quoted.MAX_MESSAGE_CODE_POINTS) + "…("
                + huge.length() + " bytes)");
        String exact = "m".repeat(Quoted.MAX_MESSAGE_CODE_POINTS);
        assertThat(Quoted.message(exact)).isSameAs(exact);
    }

    @Test
    void utf8LengthCountsBytes() {
        assertThat(Quoted.utf8Length("aé€\uD834\uDD1E")).isEqualTo(1 + 2 + 3 + 4);
        assertThat(Quoted.longerThan("b".repeat(63), 63)).isFalse();
        assertThat(Quoted.longerThan("b".repeat(64), 63)).isTrue();
        assertThat(Quoted.longerThan("€".repeat(21), 63)).isFalse();
        assertThat(Quoted.longerThan("€".repeat(22), 63)).isTrue();
    }
}
