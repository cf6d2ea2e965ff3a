package dev.thresher.bindings.abi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The byte bound is exact whatever shortcut the builder takes: replaying the same appends under every
 * {@code maxBytes}, the first append refused with {@link ErrorCode#BATCH_TOO_LARGE} is the first one after
 * which the batch, built without a bound, is larger than {@code maxBytes}.
 */
class RowBatchBuilderBoundTest {
    private static final ColumnType[] TYPES = ColumnType.values();

    @Test
    void theFirstRefusedAppendIsTheFirstThatGoesPastTheBound() {
        Random random = new Random(7);
        for (int round = 0; round < 200; round++) {
            List<Column> columns = new ArrayList<>();
            int n = 1 + random.nextInt(4);
            for (int i = 0; i < n; i++) {
                ColumnType type = TYPES[random.nextInt(TYPES.length)];
                columns.add(random.nextBoolean() ? Column.of("c" + i, type) : Column.nullable("c" + i, type));
            }
            List<Step> steps = steps(columns, random);
            // sizes[k]: the exact encoded size once the first k steps are done
            long[] sizes = new long[steps.size() + 1];
            RowBatchBuilder unbounded = new RowBatchBuilder(1, columns, 1 << 20, Integer.MAX_VALUE);
            sizes[0] = unbounded.encodedSize();
            for (int k = 0; k < steps.size(); k++) {
                steps.get(k).apply(unbounded);
                sizes[k + 1] = unbounded.encodedSize();
            }
            for (long max = sizes[0]; max <= sizes[steps.size()]; max += 1 + random.nextInt(24)) {
                int expected = -1;
                for (int k = 1; k < sizes.length && expected < 0; k++) {
                    if (sizes[k] > max) {
                        expected = k - 1;
                    }
                }
                RowBatchBuilder bounded = new RowBatchBuilder(1, columns, 1 << 20, (int) max);
                int refused = -1;
                for (int k = 0; k < steps.size() && refused < 0; k++) {
                    try {
                        steps.get(k).apply(bounded);
                    } catch (ThresherException e) {
                        assertThat(e.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
                        refused = k;
                    }
                }
                assertThat(refused).as("round %d, columns %s, maxBytes %d", round, columns, max).isEqualTo(expected);
            }
        }
    }

    private interface Step {
        void apply(RowBatchBuilder b);
    }

    private static List<Step> steps(List<Column> columns, Random random) {
        List<Step> steps = new ArrayList<>();
        int rows = 1 + random.nextInt(40);
        for (int r = 0; r < rows; r++) {
            steps.add(RowBatchBuilder::startRow);
            for (int i = 0; i < columns.size(); i++) {
                Column c = columns.get(i);
                int col = i;
                if (c.nullable() && random.nextInt(4) == 0) {
                    continue; // left unset: null
                }
                switch (c.type()) {
                    case INT64 -> steps.add(b -> b.setLong(col, 1));
                    case FLOAT64 -> steps.add(b -> b.setDouble(col, 1.5));
                    case BOOL -> steps.add(b -> b.setBool(col, true));
                    case TEXT -> {
                        String s = "x".repeat(random.nextInt(30));
                        steps.add(b -> b.setText(col, s));
                    }
                    case BYTES -> {
                        byte[] v = new byte[random.nextInt(30)];
                        steps.add(b -> b.setBytes(col, v));
                    }
                }
            }
        }
        return steps;
    }
}
