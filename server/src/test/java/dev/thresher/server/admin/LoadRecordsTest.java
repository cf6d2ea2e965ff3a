package dev.thresher.server.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A load's records are bounded as they are read: a record longer than the bound is refused before it is held, whatever
 * makes it long (a long field, an unclosed quote, no line break at all), and a record just at the bound is read.
 */
class LoadRecordsTest {
    private static List<List<String>> all(LoadRecords.Records records) throws IOException {
        List<List<String>> rows = new ArrayList<>();
        for (List<LoadRecords.Field> r = records.next(); r != null; r = records.next()) {
            rows.add(r.stream().map(f -> f.isNull() ? "<null>" : f.text()).toList());
        }
        return rows;
    }

    private static LoadRecords.Records csv(String data, int max) {
        return new LoadRecords.CsvReader(new BufferedReader(new StringReader(data)), ',', "", max);
    }

    private static LoadRecords.Records text(String data, int max) {
        return new LoadRecords.TextReader(new BufferedReader(new StringReader(data)), '\t', "\\N", max);
    }

    private static void refused(LoadRecords.Records records, String line) {
        assertThatThrownBy(() -> all(records)).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
            assertThat(e.getMessage()).startsWith(line + " is longer than 10 characters");
        });
    }

    @Test
    void aRecordAtTheBoundIsReadAndOnePastItRefusedWithItsLine() throws IOException {
        // CSV: the bound counts a record's characters, its line break included
        assertThat(all(csv("123456789\nabcdefghi\n", 10))).containsExactly(List.of("123456789"), List.of("abcdefghi"));
        refused(csv("1\n12345678901\n", 10), "line 2");
        // kills: LoadRecords.CsvReader.unread (a character read past a lone \r and given back counts in the next record)
        refused(csv("1\r1234567890\n", 10), "line 2");
        refused(csv("1,\"2\n3\n4\n5\n6\n7\n", 10), "line 1"); // a quoted field over many lines is one record
        // COPY text: the bound counts a line's characters, its line break not
        assertThat(all(text("1234567890\r\nabc\rdef\n", 10))).containsExactly(List.of("1234567890"), List.of("abc"),
                List.of("def"));
        refused(text("a\nb\n12345678901", 10), "line 3");
    }

    @Test
    void aRecordThatNeverEndsIsRefusedAfterTheBoundNotHeld() {
        Reader endless = new Reader() {
            long served;

            @Override
            public int read(char[] buf, int off, int len) {
                if (served > 100_000) {
                    throw new AssertionError("read past the bound: the record was held");
                }
                java.util.Arrays.fill(buf, off, off + len, 'x');
                served += len;
                return len;
            }

            @Override
            public void close() {
            }
        };
        assertThatThrownBy(() -> all(new LoadRecords.CsvReader(new BufferedReader(endless, 16), ',', "", 1000)))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE));
    }
}
