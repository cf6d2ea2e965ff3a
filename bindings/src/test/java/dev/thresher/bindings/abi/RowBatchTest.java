package dev.thresher.bindings.abi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RowBatchTest {
    @Test
    void goldenRevenueBatch() {
        byte[] bytes = AbiVectors.rowBatchRevenue();
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(HexFormat.of().formatHex(GoldenVectors.load("row_batch_revenue")));
        RowBatch b = RowBatch.decode(bytes);
        assertThat(b.partitionId()).isEqualTo(7);
        assertThat(b.rowCount()).isEqualTo(3);
        assertThat(b.columns()).containsExactly(Column.of("region", ColumnType.TEXT), Column.of("amount", ColumnType.FLOAT64));
        assertThat(b.getText(0, 2)).isEqualTo("eu");
        assertThat(b.getDouble(1, 2)).isEqualTo(-0.25);
    }

    @Test
    void goldenEmptyBatch() {
        byte[] bytes = AbiVectors.rowBatchEmpty();
        assertThat(bytes).isEqualTo(GoldenVectors.load("row_batch_empty"));
        RowBatch b = RowBatch.decode(bytes);
        assertThat(b.rowCount()).isZero();
        assertThat(b.columns()).containsExactly(Column.of("id", ColumnType.INT64));
    }

    @Test
    void goldenAllTypesNullable() {
        byte[] bytes = AbiVectors.rowBatchAllTypesNullable();
        assertThat(HexFormat.of().formatHex(bytes))
                .isEqualTo(HexFormat.of().formatHex(GoldenVectors.load("row_batch_all_types_nullable")));
        RowBatch b = RowBatch.decode(bytes);
        assertThat(b.partitionId()).isEqualTo(123_456);
        assertThat(b.rowCount()).isEqualTo(9);
        for (int r = 0; r < 9; r++) {
            for (int c = 0; c < 5; c++) {
                assertThat(b.isNull(c, r)).isEqualTo(r % 3 == 0);
            }
            assertThat(b.isNull(5, r)).isFalse();
            assertThat(b.getLong(5, r)).isEqualTo(r);
        }
        assertThat(b.getLong(0, 1)).isEqualTo(Long.MIN_VALUE);
        assertThat(Double.doubleToRawLongBits(b.getDouble(1, 2))).isEqualTo(0x7ff8_0000_0000_0123L);
        assertThat(b.getText(2, 4)).isEmpty();
        assertThat(b.getText(2, 5)).isEqualTo("é5");
        assertThat(b.getBool(3, 4)).isTrue();
        assertThat(b.getBool(3, 5)).isFalse();
        assertThat(b.getBytes(4, 7)).containsExactly(7, 0xff);
        assertThat(b.value(2, 3)).isNull();
        assertThat(b.columns().get(5).name()).isEqualTo("größe");
    }

    @Test
    void sectionsAreEightAlignedAndSizeIsPredicted() {
        Random random = new Random(42);
        List<Column> cols = List.of(Column.nullable("t", ColumnType.TEXT), Column.of("b", ColumnType.BOOL),
                Column.nullable("x", ColumnType.BYTES), Column.of("f", ColumnType.FLOAT64));
        for (int rows = 0; rows < 40; rows++) {
            RowBatchBuilder builder = new RowBatchBuilder(rows, cols, 100, 1 << 20);
            List<Object[]> expected = new ArrayList<>();
            for (int r = 0; r < rows; r++) {
                builder.startRow();
                String t = random.nextInt(4) == 0 ? null : "v".repeat(random.nextInt(11));
                boolean bool = random.nextBoolean();
                byte[] x = random.nextInt(4) == 0 ? null : new byte[random.nextInt(5)];
                double f = random.nextGaussian();
                if (t != null) {
                    builder.setText(0, t);
                }
                builder.setBool(1, bool);
                if (x != null) {
                    random.nextBytes(x);
                    builder.setBytes(2, x);
                } else {
                    builder.setNull(2);
                }
                builder.setDouble(3, f);
                expected.add(new Object[] {t, bool, x, f});
            }
            long predicted = builder.encodedSize();
            byte[] bytes = builder.finish();
            assertThat(bytes.length).isEqualTo(predicted).isEqualTo((int) RowBatchLayout.pad8(bytes.length));
            RowBatch b = RowBatch.decode(bytes);
            for (int r = 0; r < rows; r++) {
                Object[] e = expected.get(r);
                assertThat(b.value(0, r)).isEqualTo(e[0]);
                assertThat(b.value(1, r)).isEqualTo(e[1]);
                assertThat((byte[]) b.value(2, r)).isEqualTo((byte[]) e[2]);
                assertThat(b.value(3, r)).isEqualTo(e[3]);
            }
        }
    }

    @Test
    void tooManyRowsIsTyped() {
        RowBatchBuilder b = new RowBatchBuilder(1, List.of(Column.of("id", ColumnType.INT64)), 2, 1 << 20);
        b.startRow();
        b.setLong(0, 1);
        b.startRow();
        b.setLong(0, 2);
        assertThatThrownBy(b::startRow).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_MANY_ROWS));
    }

    @Test
    void tooManyBytesIsTyped() {
        // header 16 + 4 + 1 -> 24; then offsets pad8(4 * (rows + 1)) and payload pad8(n)
        RowBatchBuilder b = new RowBatchBuilder(1, List.of(Column.of("t", ColumnType.TEXT)), 100, 48);
        b.startRow();
        b.setText(0, "x".repeat(8));
        assertThat(b.encodedSize()).isEqualTo(40);
        b.startRow();
        assertThat(b.encodedSize()).isEqualTo(48);
        assertThatThrownBy(() -> b.setText(0, "y")).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE));

        RowBatchBuilder fixed = new RowBatchBuilder(1, List.of(Column.of("i", ColumnType.INT64)), 100, 40);
        fixed.startRow();
        fixed.setLong(0, 1);
        fixed.startRow();
        fixed.setLong(0, 2);
        assertThatThrownBy(fixed::startRow).isInstanceOfSatisfying(ThresherException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE));
    }

    @Test
    void nullInNonNullableColumnIsRefused() {
        RowBatchBuilder b = new RowBatchBuilder(1, List.of(Column.of("id", ColumnType.INT64)), 10, 1 << 20);
        b.startRow();
        assertThatThrownBy(() -> b.setNull(0)).isInstanceOf(IllegalArgumentException.class);
        RowBatchBuilder unset = new RowBatchBuilder(1, List.of(Column.of("id", ColumnType.INT64)), 10, 1 << 20);
        unset.startRow();
        assertThatThrownBy(unset::finish).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void misuseIsRefused() {
        RowBatchBuilder b = new RowBatchBuilder(1, List.of(Column.of("id", ColumnType.INT64)), 10, 1 << 20);
        assertThatThrownBy(() -> b.setLong(0, 1)).isInstanceOf(IllegalStateException.class);
        b.startRow();
        assertThatThrownBy(() -> b.setDouble(0, 1)).isInstanceOf(IllegalArgumentException.class);
        b.setLong(0, 1);
        assertThatThrownBy(() -> b.setLong(0, 2)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> b.setText(0, "\ud800")).isInstanceOf(IllegalArgumentException.class);
        b.finish();
        assertThatThrownBy(b::startRow).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void decodeRefusesDamagedBatches() {
        byte[] good = AbiVectors.rowBatchAllTypesNullable();
        assertThatThrownBy(() -> RowBatch.decode(Arrays.copyOf(good, good.length - 8))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RowBatch.decode(Arrays.copyOf(good, good.length + 8))).isInstanceOf(IllegalArgumentException.class);
        byte[] badMagic = good.clone();
        badMagic[3] = '2';
        assertThatThrownBy(() -> RowBatch.decode(badMagic)).isInstanceOf(IllegalArgumentException.class);
        byte[] badTag = good.clone();
        badTag[16] = 9;
        assertThatThrownBy(() -> RowBatch.decode(badTag)).isInstanceOf(IllegalArgumentException.class);
        for (int cut = 0; cut < good.length; cut++) {
            int n = cut;
            assertThatThrownBy(() -> RowBatch.decode(Arrays.copyOf(good, n))).isInstanceOf(IllegalArgumentException.class);
        }
    }
}
