package dev.thresher.bindings;

import java.util.List;

/**
 * What a {@link JournalService} answered: the columns and the rows, each value of its column's Java type
 * ({@link JournalType}) or null.
 *
 * @param more whether rows past the query's last one exist (the page was full)
 */
public record JournalRows(List<JournalColumn> columns, List<List<Object>> rows, boolean more) {
    public JournalRows {
        columns = List.copyOf(columns);
        rows = rows.stream().map(JournalSelect::nullable).toList();
        for (List<Object> row : rows) {
            if (row.size() != columns.size()) {
                throw new IllegalArgumentException("a row of " + row.size() + " values for " + columns.size() + " columns");
            }
        }
    }
}
