package dev.thresher.server.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code COPY ... FROM STDIN} in the text format as the loader reads it: records of fields, by line. */
class CsvLoaderTextTest {
    private static List<List<String>> read(String data, char delimiter, String nullString) throws IOException {
        LoadRecords.TextReader reader = new LoadRecords.TextReader(new BufferedReader(new StringReader(data)), delimiter,
                nullString, 1 << 20);
        List<List<String>> rows = new ArrayList<>();
        for (List<LoadRecords.Field> r = reader.next(); r != null; r = reader.next()) {
            List<String> row = new ArrayList<>();
            r.forEach(f -> row.add(f.isNull() ? null : f.text()));
            rows.add(row);
        }
        return rows;
    }

    @Test
    void linesAreRecordsOfDecodedFieldsUntilTheEndMarker() throws IOException {
        assertThat(read("1\tnorth\\tway\t\\N\n2\t\\303\\251t\\xc3\\xa9\t\n\\.\n3\tignored\n", '\t', "\\N"))
                .containsExactly(Arrays.asList("1", "north\tway", null), List.of("2", "été", ""));
        assertThat(read("a;b\\;c;-\r\n", ';', "-")).containsExactly(Arrays.asList("a", "b;c", null));
    }

    @Test
    void aBadLineIsRefusedWithItsNumber() {
        assertThatThrownBy(() -> read("ok\nbad\\\n", '\t', "\\N")).isInstanceOfSatisfying(ThresherException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENTS);
            assertThat(e.getMessage()).isEqualTo("line 2: the row ends in a lone backslash");
        });
        assertThatThrownBy(() -> read("\\377\n", '\t', "\\N")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.getMessage()).isEqualTo("line 1: an escape makes a byte sequence that is not UTF-8"));
    }
}
