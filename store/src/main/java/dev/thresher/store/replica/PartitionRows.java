package dev.thresher.store.replica;

import dev.thresher.bindings.Selector;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.store.replica.BatchCache.Built;
import dev.thresher.store.shard.ShardBatch;
import dev.thresher.store.shard.ShardReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One partition's rows, held in memory: the replica a leader reads a call's batch from instead of its
 * shard database. Rows are stored by column, one primitive vector per column (see {@link ColumnVector}),
 * dense: a deleted row's place is taken by the last row. A hash index on the replica identity finds the row
 * a change means in expected constant time; with a whole-row identity ({@code REPLICA IDENTITY FULL})
 * identical rows can exist, and a change applies to exactly one of them (identical rows are kept as one
 * group in the index, so that too is constant time).
 *
 * <p>{@link #batch} produces what {@link ShardReader#read} produces for the same rows: the selector's
 * columns in its order and spelling, the same types and nullability, the same values bit for bit, the same
 * refusals ({@link ErrorCode#BATCH_TOO_MANY_ROWS}, {@link ErrorCode#BATCH_TOO_LARGE}); the rows may come in
 * another order, as SQL promises none either. A finished batch is kept (a few of them, least recently used
 * out first) until the rows change, so a read of unchanged rows hands out the same array again. The batches and pages
 * are written by {@link PartitionBatches}.
 *
 * <p>Thread-safety: not thread-safe, with one exception. The caller guards each partition's rows with a
 * read-write lock: changes ({@link #insert}, {@link #update}, {@link #delete}, {@link #clear}) come from
 * one thread holding the write lock; {@link #batch} (and the other reads) may run on many threads at once
 * under the read lock, and are safe together, the batch cache included.
 */
public final class PartitionRows {
    private static final int MIN_CAPACITY = 16;
    private static final int MIN_SLOTS = 16;
    /** Heap bytes of this object and its small parts, estimated. */
    private static final long FIXED_HEAP = 256;

    private final List<ReplicaColumn> columns;
    private final int[] identity;
    private final ColumnVector[] vectors;
    private final Map<String, Integer> byName;

    /** Rows in use; row {@code count} is scratch space (a probe, a row being built). */
    private int count;
    private int capacity;
    /** Per row: the identity hash; the next and previous row of its group of identical identities, or -1. */
    private int[] hashes;
    private int[] next;
    private int[] prev;
    /** The index: open addressing, linear probing; each slot holds a group's first row plus one, or 0. */
    private int[] slots;
    private int groups;
    /** Heap bytes of the live rows' variable-length values. */
    private long valueHeap;
    private long version;
    private final BatchCache cache = new BatchCache();

    /**
     * @param columns every column of the table, in its column order ({@code thresher_slot} included)
     * @param identity the indexes of the replica identity's key columns, or of every column for
     *     {@code REPLICA IDENTITY FULL}
     */
    public PartitionRows(List<ReplicaColumn> columns, int[] identity) {
        this.columns = List.copyOf(columns);
        if (this.columns.isEmpty()) {
            throw new IllegalArgumentException("a table has at least one column");
        }
        if (identity.length == 0) {
            throw new IllegalArgumentException("the replica identity has no column");
        }
        this.identity = identity.clone();
        boolean[] inIdentity = new boolean[this.columns.size()];
        for (int c : this.identity) {
            Objects.checkIndex(c, inIdentity.length);
            if (inIdentity[c]) {
                throw new IllegalArgumentException("column " + c + " is twice in the replica identity");
            }
            inIdentity[c] = true;
        }
        // A key narrower than the row must compare exactly; a whole-row identity may compare as stored.
        boolean narrowKey = this.identity.length < this.columns.size();
        this.byName = new HashMap<>();
        this.vectors = new ColumnVector[this.columns.size()];
        for (int i = 0; i < vectors.length; i++) {
            ReplicaColumn c = this.columns.get(i);
            if (byName.putIfAbsent(c.name(), i) != null) {
                throw new IllegalArgumentException("column '" + c.name() + "' appears twice");
            }
            vectors[i] = ColumnVector.of(c, narrowKey && inIdentity[i], MIN_CAPACITY);
        }
        this.capacity = MIN_CAPACITY;
        this.hashes = new int[MIN_CAPACITY];
        this.next = new int[MIN_CAPACITY];
        this.prev = new int[MIN_CAPACITY];
        this.slots = new int[MIN_SLOTS];
    }

    public List<ReplicaColumn> columns() {
        return columns;
    }

    public int rowCount() {
        return count;
    }

    /** Bumped by every change to the rows. */
    public long version() {
        return version;
    }

    /**
     * An estimate of the heap the rows take: the vectors at their capacity, each variable-length value's
     * array, the index, and the finished batches kept.
     */
    public long bytes() {
        long n = FIXED_HEAP + valueHeap + cache.bytes();
        PartitionBatches.Paged paged = lastPaged;
        if (paged != null && paged.version() == version) {
            n += paged.heapBytes();
        }
        for (ColumnVector v : vectors) {
            n += 48 + v.vectorBytes();
        }
        n += 3 * (ColumnVector.ARRAY_HEADER + 4L * capacity);
        return n + ColumnVector.ARRAY_HEADER + 4L * slots.length;
    }

    /**
     * Adds a row.
     *
     * @throws IllegalArgumentException when the tuple does not have the table's columns, holds
     *     {@link Tuple#UNCHANGED}, NULL in a NOT NULL column, or text that is not a value of a column's type
     *     (the rows are left as they were)
     */
    public void insert(Tuple row) {
        checkArity(row);
        ensureCapacity(count + 1);
        int s = count;
        try {
            for (int c = 0; c < vectors.length; c++) {
                byte[] v = row.value(c);
                if (v == Tuple.UNCHANGED) {
                    throw new IllegalArgumentException("an inserted row has no unchanged values (column "
                            + columns.get(c).name() + ")");
                }
                vectors[c].set(s, v);
            }
        } catch (RuntimeException e) {
            clearRow(s);
            throw e;
        }
        hashes[s] = identityHash(s);
        count++;
        valueHeap += heapOf(s);
        link(s);
        changed();
    }

    /**
     * Changes one row: the one whose identity is {@code oldKeyOrRow}'s, or, when that is null (the identity
     * did not change), {@code newRow}'s. A value {@link Tuple#UNCHANGED} in {@code newRow} keeps the row's.
     *
     * @param oldKeyOrRow the old identity: the key columns ({@code oldIsKey}, the other columns null) or the
     *     whole old row; null when the identity is the new row's
     * @param oldIsKey whether {@code oldKeyOrRow} carries only the key columns; either way the row is found by
     *     the identity columns
     * @return false, changing nothing, when no row has that identity
     * @throws IllegalArgumentException as {@link #insert} (the rows are left as they were)
     */
    public boolean update(Tuple oldKeyOrRow, boolean oldIsKey, Tuple newRow) {
        checkArity(newRow);
        Tuple old = oldKeyOrRow == null ? newRow : oldKeyOrRow;
        checkArity(old);
        int r = find(old, oldIsKey);
        if (r < 0) {
            return false;
        }
        int s = count; // find made room for it
        try {
            for (int c = 0; c < vectors.length; c++) {
                byte[] v = newRow.value(c);
                if (v == Tuple.UNCHANGED) {
                    vectors[c].copy(r, s);
                } else {
                    vectors[c].set(s, v);
                }
            }
        } catch (RuntimeException e) {
            clearRow(s);
            throw e;
        }
        unlink(r);
        valueHeap -= heapOf(r);
        for (ColumnVector v : vectors) {
            v.copy(s, r);
        }
        clearRow(s);
        valueHeap += heapOf(r);
        hashes[r] = identityHash(r);
        link(r);
        changed();
        return true;
    }

    /**
     * Removes one row whose identity is {@code old}'s.
     *
     * @param oldIsKey whether {@code old} carries only the key columns (the others null); either way the row
     *     is found by the identity columns
     * @return false, changing nothing, when no row has that identity
     */
    public boolean delete(Tuple old, boolean oldIsKey) {
        checkArity(old);
        int r = find(old, oldIsKey);
        if (r < 0) {
            return false;
        }
        remove(r);
        changed();
        return true;
    }

    /** Removes every row ({@code TRUNCATE}, or before a fresh snapshot). */
    public void clear() {
        for (ColumnVector v : vectors) {
            for (int r = 0; r <= count && r < capacity; r++) {
                v.clearValue(r);
            }
            v.resize(MIN_CAPACITY);
        }
        count = 0;
        capacity = MIN_CAPACITY;
        hashes = new int[MIN_CAPACITY];
        next = new int[MIN_CAPACITY];
        prev = new int[MIN_CAPACITY];
        slots = new int[MIN_SLOTS];
        groups = 0;
        valueHeap = 0;
        changed();
    }

    /**
     * The partition's batch for a selector: the rows the filter accepts (all without one), the selector's
     * columns in its order. The returned bytes may be shared with other callers and must not be changed.
     * Rows are taken in storage order, so when a partition is past both bounds, whether the refusal is too many
     * rows or too many bytes depends on that order, as it depends on the scan order for the SQL read.
     *
     * @param filter the selector's {@code WHERE} compiled against these columns ({@link RowFilter#compile}),
     *     or null when the selector has none
     * @throws ThresherException as {@link ShardReader#read}: {@link ErrorCode#BATCH_TOO_MANY_ROWS} past
     *     {@code maxRows}, {@link ErrorCode#BATCH_TOO_LARGE} past {@code maxBytes},
     *     {@link ErrorCode#INVALID_SELECTOR} for a column the table does not have or a batch cannot carry,
     *     {@link ErrorCode#STORE_UNAVAILABLE} for text that is not UTF-8
     * @throws IllegalArgumentException when the filter is missing, or is not the selector's, or was compiled
     *     against other columns
     */
    public ShardBatch batch(int partitionId, Selector selector, RowFilter filter, int maxRows, int maxBytes) {
        long started = System.nanoTime();
        Objects.requireNonNull(selector, "selector");
        if (filter == null) {
            if (selector.where().isPresent()) {
                throw new IllegalArgumentException("the selector has a WHERE, and no filter was given for it");
            }
        } else if (!selector.where().map(filter.where()::equals).orElse(false)) {
            throw new IllegalArgumentException("the filter is not the selector's WHERE");
        } else if (filter.columns() != columns && !filter.columns().equals(columns)) {
            throw new IllegalArgumentException("the filter was compiled against other columns");
        }
        Built built = cache.get(new BatchCache.Key(version, partitionId, selector.sql(), maxRows, maxBytes),
                () -> PartitionBatches.build(this, partitionId, selector, filter, maxRows, maxBytes));
        if (built.error() != null) {
            throw new ThresherException(built.error(), built.message());
        }
        return new ShardBatch(built.bytes(), built.rows(), System.nanoTime() - started);
    }

    private volatile PartitionBatches.Paged lastPaged;

    /**
     * The partition as batches of at most {@code maxRows} rows and {@code maxBytes} bytes each (guest ABI v2's
     * paged input), cut as {@code ShardPages} cuts the SQL read: a row that would not fit starts the next batch,
     * and only a row too large for a batch of its own is {@link ErrorCode#BATCH_TOO_LARGE}. At least one batch,
     * perhaps with no rows. The last pages built are kept until the partition changes; the bytes may be shared
     * and must not be changed.
     *
     * @throws ThresherException as {@link #batch}, but never {@link ErrorCode#BATCH_TOO_MANY_ROWS}
     */
    public List<ShardBatch> pages(int partitionId, Selector selector, RowFilter filter, int maxRows, int maxBytes) {
        long started = System.nanoTime();
        PartitionBatches.Paged p = lastPaged;
        if (p == null || p.version() != version || p.partitionId() != partitionId || !p.selectorSql().equals(selector.sql())
                || p.maxRows() != maxRows || p.maxBytes() != maxBytes) {
            p = PartitionBatches.buildPages(this, version, partitionId, selector, filter, maxRows, maxBytes);
            lastPaged = p;
        }
        List<ShardBatch> out = new ArrayList<>(p.pages().size());
        for (int i = 0; i < p.pages().size(); i++) {
            out.add(new ShardBatch(p.pages().get(i), p.rows()[i], i == 0 ? System.nanoTime() - started : 0));
        }
        return out;
    }

    /** The index of the column named {@code name} in {@link #columns()}, or null when there is none. */
    Integer columnIndex(String name) {
        return byName.get(name);
    }

    /** A column's vector, for a filter to read (by the index of the column in {@link #columns()}). */
    ColumnVector vector(int column) {
        return vectors[column];
    }

    private void changed() {
        version++;
        if (!cache.isEmpty()) {
            cache.clear();
        }
    }

    private void checkArity(Tuple t) {
        if (t.size() != vectors.length) {
            throw new IllegalArgumentException("a tuple of " + t.size() + " columns for a table of " + vectors.length);
        }
    }

    /**
     * The row whose identity is the tuple's, or -1. Leaves room for a scratch row at {@link #count}. An
     * identity value that is {@link Tuple#UNCHANGED} (a TOASTed key the change did not touch) cannot be
     * hashed: then the rows are scanned for the other identity values.
     */
    private int find(Tuple probe, boolean onlyKey) {
        ensureCapacity(count + 1);
        int s = count;
        boolean[] skip = null;
        try {
            for (int c : identity) {
                byte[] v = probe.value(c);
                if (v == Tuple.UNCHANGED) {
                    if (skip == null) {
                        skip = new boolean[vectors.length];
                    }
                    skip[c] = true;
                } else {
                    vectors[c].set(s, v);
                }
            }
            if (skip != null) {
                return scan(s, skip);
            }
            int h = identityHash(s);
            int slot = findSlot(h, s);
            if (slot < 0) {
                return -1;
            }
            int head = slots[slot] - 1;
            return next[head] >= 0 ? next[head] : head;
        } finally {
            clearRow(s);
        }
    }

    private int scan(int s, boolean[] skip) {
        for (int r = 0; r < count; r++) {
            boolean match = true;
            for (int c : identity) {
                if (!skip[c] && !vectors[c].same(r, s)) {
                    match = false;
                    break;
                }
            }
            if (match) {
                return r;
            }
        }
        return -1;
    }

    private int identityHash(int row) {
        int h = 1;
        for (int c : identity) {
            h = 31 * h + vectors[c].hash(row);
        }
        // murmur3's finalizer: linear probing wants the low bits mixed
        h ^= h >>> 16;
        h *= 0x85EBCA6B;
        h ^= h >>> 13;
        h *= 0xC2B2AE35;
        return h ^ (h >>> 16);
    }

    private boolean sameIdentity(int a, int b) {
        for (int c : identity) {
            if (!vectors[c].same(a, b)) {
                return false;
            }
        }
        return true;
    }

    private long heapOf(int row) {
        long n = 0;
        for (ColumnVector v : vectors) {
            n += v.heapOf(row);
        }
        return n;
    }

    private void clearRow(int row) {
        for (ColumnVector v : vectors) {
            v.clearValue(row);
        }
    }

    /** Removes row {@code r}: the last row takes its place. */
    private void remove(int r) {
        unlink(r);
        valueHeap -= heapOf(r);
        int last = count - 1;
        if (r != last) {
            for (ColumnVector v : vectors) {
                v.copy(last, r);
            }
            hashes[r] = hashes[last];
            prev[r] = prev[last];
            next[r] = next[last];
            if (prev[r] >= 0) {
                next[prev[r]] = r;
            } else {
                slots[slotOfHead(last)] = r + 1;
            }
            if (next[r] >= 0) {
                prev[next[r]] = r;
            }
        }
        clearRow(last);
        count--;
        if (count + 1 < capacity / 4 && capacity > MIN_CAPACITY) {
            resize(Math.max(MIN_CAPACITY, capacity / 2));
        }
        if (groups * 8 < slots.length && slots.length > MIN_SLOTS) {
            rehash(slots.length / 2);
        }
    }

    /** The slot of the group {@code key} would belong to, or {@code ~free} (negative) with the free slot to take. */
    private int findSlot(int h, int key) {
        int mask = slots.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            int v = slots[i];
            if (v == 0) {
                return ~i;
            }
            int head = v - 1;
            if (hashes[head] == h && sameIdentity(head, key)) {
                return i;
            }
        }
    }

    private int slotOfHead(int row) {
        int mask = slots.length - 1;
        int i = hashes[row] & mask;
        while (slots[i] != row + 1) {
            i = (i + 1) & mask;
        }
        return i;
    }

    /** Enters a row (its hash set) in the index: into its group, or as a new group. */
    private void link(int row) {
        int slot = findSlot(hashes[row], row);
        if (slot >= 0) {
            int head = slots[slot] - 1;
            int after = next[head];
            next[row] = after;
            prev[row] = head;
            if (after >= 0) {
                prev[after] = row;
            }
            next[head] = row;
            return;
        }
        slots[~slot] = row + 1;
        prev[row] = -1;
        next[row] = -1;
        groups++;
        if (groups * 2 > slots.length) {
            rehash(slots.length * 2);
        }
    }

    /** Takes a row out of the index (by the hash it was entered with). */
    private void unlink(int row) {
        int p = prev[row];
        int n = next[row];
        if (p >= 0) {
            next[p] = n;
            if (n >= 0) {
                prev[n] = p;
            }
            return;
        }
        int slot = slotOfHead(row);
        if (n >= 0) {
            slots[slot] = n + 1;
            prev[n] = -1;
            return;
        }
        deleteSlot(slot);
        groups--;
    }

    /** Empties a slot, moving later entries of its probe run back so that none is cut off from its home. */
    private void deleteSlot(int i) {
        int mask = slots.length - 1;
        int j = i;
        while (true) {
            j = (j + 1) & mask;
            if (slots[j] == 0) {
                break;
            }
            int home = hashes[slots[j] - 1] & mask;
            // The entry at j stays unless its home lies cyclically outside (i, j].
            boolean stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays) {
                slots[i] = slots[j];
                i = j;
            }
        }
        slots[i] = 0;
    }

    private void rehash(int size) {
        int[] fresh = new int[size];
        int mask = size - 1;
        for (int r = 0; r < count; r++) {
            if (prev[r] < 0) {
                int i = hashes[r] & mask;
                while (fresh[i] != 0) {
                    i = (i + 1) & mask;
                }
                fresh[i] = r + 1;
            }
        }
        slots = fresh;
    }

    private void ensureCapacity(int rows) {
        if (rows < capacity) {
            return;
        }
        int size = capacity;
        while (size <= rows) {
            size = Math.multiplyExact(size, 2);
        }
        resize(size);
    }

    private void resize(int size) {
        for (ColumnVector v : vectors) {
            v.resize(size);
        }
        hashes = Arrays.copyOf(hashes, size);
        next = Arrays.copyOf(next, size);
        prev = Arrays.copyOf(prev, size);
        capacity = size;
    }
}
