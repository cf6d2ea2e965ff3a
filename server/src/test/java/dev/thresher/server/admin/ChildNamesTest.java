package dev.thresher.server.admin;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The names of a table's children on the shard databases fit PostgreSQL's 63 bytes and never collide. */
class ChildNamesTest {
    @Test
    void aShortNameKeepsItsPlainChildren() {
        assertThat(TableAdmin.childName("orders", 7)).isEqualTo("orders_p7");
        assertThat(TableAdmin.defaultChildName("orders")).isEqualTo("orders_default");
    }

    @Test
    void childrenOfNamesUpTo63BytesFitAndAreDistinct() {
        // kills: the plain "<name>_p<id>" for a long name (PostgreSQL cut it to 63 bytes: partitions 10 and 11 of a
        // 60-byte name became one name, and CREATE TABLE answered XX000)
        for (int length = 50; length <= 63; length++) {
            String table = "t".repeat(length);
            Set<String> names = new HashSet<>();
            for (int id = 0; id < 1000; id++) {
                String child = TableAdmin.childName(table, id);
                assertThat(child.length()).as(child).isLessThanOrEqualTo(63);
                assertThat(child).matches(TableAdmin.IDENTIFIER.pattern()).endsWith("_p" + id);
                names.add(child);
            }
            assertThat(names).hasSize(1000);
            assertThat(TableAdmin.defaultChildName(table).length()).isLessThanOrEqualTo(63);
        }
        // two long names sharing their first 50 bytes get different children
        assertThat(TableAdmin.childName("a".repeat(60) + "xyz", 1)).isNotEqualTo(TableAdmin.childName("a".repeat(60) + "xyw", 1));
    }
}
