package dev.thresher.bindings;

import java.util.Objects;

/**
 * One column of a journal view.
 *
 * @param name its name, lower case
 * @param type its type
 * @param description what it holds, for operators
 */
public record JournalColumn(String name, JournalType type, String description) {
    public JournalColumn {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(description, "description");
    }
}
