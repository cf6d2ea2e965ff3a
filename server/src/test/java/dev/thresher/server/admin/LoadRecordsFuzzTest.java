package dev.thresher.server.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;

/**
 * Any bytes a client streams as a load's data ({@code COPY ... FROM STDIN} in CSV or text, {@code thresher load}'s
 * CSV) are read as records or refused with a typed error ({@code INVALID_ARGUMENTS} for a malformed record,
 * {@code PAYLOAD_TOO_LARGE} past the record bound) within a bound: never another exception or a wait, no record past
 * the bound. A CSV record written back as the loader writes it to a shard's {@code COPY} reads back the same.
 *
 * <p>The first byte picks the format (even: CSV, odd: text) and the delimiter; the rest is the data.
 * Regression inputs: {@code src/test/resources/dev/thresher/server/admin/LoadRecordsFuzzTestInputs/records/};
 * fuzzing: docs/security.md, "Fuzzing".
 */
class LoadRecordsFuzzTest {
    private static final int MAX_RECORD_CHARS = 256;
    private static final char[] DELIMITERS = {',', '\t', ';', '|'};
    /** Far above what any input takes (milliseconds): passing it means a loop, not a slow machine. */
    private static final long INPUT_BOUND_MS = 5_000;

    @Timeout(30)
    @FuzzTest
    void records(byte[] input) throws IOException {
        if (input.length == 0) {
            return;
        }
        boolean csv = (input[0] & 1) == 0;
        char delimiter = DELIMITERS[(input[0] >> 1) & 3];
        String data = new String(input, 1, input.length - 1, StandardCharsets.UTF_8);
        long start = System.nanoTime();
        List<List<LoadRecords.Field>> read = read(csv, delimiter, data);
        if (csv && read != null) {
            StringBuilder written = new StringBuilder();
            for (List<LoadRecords.Field> record : read) {
                for (int i = 0; i < record.size(); i++) {
                    if (i > 0) {
                        written.append(',');
                    }
                    record.get(i).appendCsv(written);
                }
                written.append('\n');
            }
            List<List<LoadRecords.Field>> again = new ArrayList<>();
            LoadRecords.CsvReader back = new LoadRecords.CsvReader(new BufferedReader(new StringReader(written.toString())),
                    ',', "", Integer.MAX_VALUE);
            for (List<LoadRecords.Field> r = back.next(); r != null; r = back.next()) {
                again.add(r);
            }
            assertThat(again.stream().map(LoadRecordsFuzzTest::values).toList()).as("the records written back, read again")
                    .isEqualTo(read.stream().map(LoadRecordsFuzzTest::values).toList());
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("milliseconds one input took")
                .isLessThan(INPUT_BOUND_MS);
    }

    /** The records, or null when the data was refused (with a typed error). */
    private static List<List<LoadRecords.Field>> read(boolean csv, char delimiter, String data) throws IOException {
        BufferedReader in = new BufferedReader(new StringReader(data));
        List<List<LoadRecords.Field>> records = new ArrayList<>();
        try {
            LoadRecords.Records reader = csv ? new LoadRecords.CsvReader(in, delimiter, "", MAX_RECORD_CHARS)
                    : new LoadRecords.TextReader(in, delimiter, "\\N", MAX_RECORD_CHARS);
            for (List<LoadRecords.Field> r = reader.next(); r != null; r = reader.next()) {
                int chars = r.stream().mapToInt(f -> f.text().length()).sum();
                assertThat(chars).as("characters of one record").isLessThanOrEqualTo(MAX_RECORD_CHARS);
                assertThat(reader.recordLine()).isPositive();
                records.add(r);
            }
            return records;
        } catch (ThresherException refused) {
            assertThat(refused.code()).isIn(ErrorCode.INVALID_ARGUMENTS, ErrorCode.PAYLOAD_TOO_LARGE);
            assertThat(refused.getMessage()).startsWith("line ");
            return null;
        }
    }

    /** A record's values, NULL as null: what a shard's COPY stores. */
    private static List<String> values(List<LoadRecords.Field> record) {
        return record.stream().map(f -> f.isNull() ? null : f.text()).toList();
    }
}
