package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.bindings.JournalSelect;
import dev.thresher.bindings.JournalType;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class JournalResultsTest {

    @Test
    void eachTypeHasPostgresqlsOidAndBinaryFormat() {
        assertThat(JournalResults.oid(JournalType.TEXT)).isEqualTo(25);
        assertThat(JournalResults.oid(JournalType.INT4)).isEqualTo(23);
        assertThat(JournalResults.oid(JournalType.INT8)).isEqualTo(20);
        assertThat(JournalResults.oid(JournalType.TIMESTAMPTZ)).isEqualTo(1184);
        assertThat(JournalResults.oid(JournalType.UUID)).isEqualTo(2950);
        assertThat(JournalResults.oid(JournalType.JSON)).isEqualTo(114);

        assertThat(JournalResults.encode(JournalType.INT4, 258, (short) 1)).containsExactly(0, 0, 1, 2);
        assertThat(JournalResults.encode(JournalType.INT8, -1L, (short) 1)).containsExactly(-1, -1, -1, -1, -1, -1, -1, -1);
        // microseconds since 2000-01-01 00:00:00 UTC
        assertThat(ByteBuffer.wrap(JournalResults.encode(JournalType.TIMESTAMPTZ,
                Instant.parse("2000-01-01T00:00:01.000002Z"), (short) 1)).getLong()).isEqualTo(1_000_002L);
        UUID id = UUID.fromString("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f");
        ByteBuffer u = ByteBuffer.wrap(JournalResults.encode(JournalType.UUID, id, (short) 1));
        assertThat(new UUID(u.getLong(), u.getLong())).isEqualTo(id);
        assertThat(JournalResults.encode(JournalType.JSON, "{}", (short) 1)).isEqualTo("{}".getBytes(StandardCharsets.UTF_8));
        assertThat(JournalResults.encode(JournalType.TEXT, null, (short) 1)).isNull();
    }

    @Test
    void textFormatIsPostgresqlsOwn() {
        assertThat(new String(JournalResults.encode(JournalType.TIMESTAMPTZ, Instant.parse("2025-01-31T09:15:02.500Z"),
                (short) 0), StandardCharsets.UTF_8)).isEqualTo("2025-01-31 09:15:02.5+00");
        assertThat(new String(JournalResults.encode(JournalType.INT8, 42L, (short) 0), StandardCharsets.UTF_8)).isEqualTo("42");
        assertThat(new String(JournalResults.encode(JournalType.UUID, UUID.fromString("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f"),
                (short) 0), StandardCharsets.UTF_8)).isEqualTo("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f");
    }

    @Test
    void resultFormatsFollowBindsRules() {
        assertThat(JournalResults.formats(List.of(), 3)).containsExactly((short) 0, (short) 0, (short) 0);
        assertThat(JournalResults.formats(List.of((short) 1), 2)).containsExactly((short) 1, (short) 1);
        assertThat(JournalResults.formats(List.of((short) 0, (short) 1), 2)).containsExactly((short) 0, (short) 1);
        assertThatThrownBy(() -> JournalResults.formats(List.of((short) 0, (short) 1), 3))
                .isInstanceOfSatisfying(ThresherException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION));
    }

    @Test
    void boundParametersAreReadBackAsLiterals() {
        assertThat(JournalResults.literal(25, (short) 0, "failed".getBytes(StandardCharsets.UTF_8), 1))
                .isEqualTo(new JournalSelect.Text("failed"));
        assertThat(JournalResults.literal(23, (short) 1, new byte[] {0, 0, 0, 5}, 1)).isEqualTo(new JournalSelect.Text("5"));
        assertThat(JournalResults.literal(1184, (short) 1, ByteBuffer.allocate(8).putLong(3_000_000L).array(), 1))
                .isEqualTo(new JournalSelect.Timestamp(Instant.parse("2000-01-01T00:00:03Z")));
        assertThat(JournalResults.literal(25, (short) 0, null, 1)).isNull();
    }
}
