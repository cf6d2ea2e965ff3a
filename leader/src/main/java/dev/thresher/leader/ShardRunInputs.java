package dev.thresher.leader;

import dev.thresher.bindings.Budgets;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.store.shard.ShardBatch;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A slot's input as {@link HostRequestExecutor} reads it: a read started up front waited for within the deadline, one
 * batch (ABI v1) or a paged read opened when the slot's turn comes (ABI v2), and the binding's input budget over it.
 */
final class ShardRunInputs {
    private ShardRunInputs() {}

    /**
     * What the read up front gives a slot of an ABI v2 guest whose partition does not fit one batch: it is
     * read as a paged read when its turn comes, on the thread that runs its guest. A paged read holds its
     * connection until its guest is done, so none is opened ahead of its turn: slots waiting for their
     * turn holding connections could take every connection of the pool from the reads they wait for. It is
     * as fresh as the run's start, like the batch read up front.
     */
    record Paged(long freshAsOfNanos) {}

    /**
     * A paged read whose first batch is in: what a slot of an ABI v2 guest waits for. As a
     * {@link RowBatchStream} it hands over the first batch, then the rest as the guest asks, counting
     * rows and the time spent reading.
     */
    static final class OpenedPages implements RowBatchStream, AutoCloseable {
        private final PartitionReader.Pages pages;
        private ShardBatch first;
        private long rows;
        private long readNanos;

        private OpenedPages(PartitionReader.Pages pages, ShardBatch first) {
            this.pages = pages;
            this.first = first;
            this.rows = first.rowCount();
            this.readNanos = first.readNanos();
        }

        static OpenedPages open(PartitionReader.Pages pages) {
            try {
                return new OpenedPages(pages, pages.next());
            } catch (RuntimeException e) {
                pages.close();
                throw e;
            }
        }

        @Override
        public byte[] next() {
            if (first != null) {
                byte[] b = first.bytes();
                first = null;
                return b;
            }
            ShardBatch b = pages.next();
            if (b == null) {
                return null;
            }
            rows += b.rowCount();
            readNanos += b.readNanos();
            return b.bytes();
        }

        long rows() {
            return rows;
        }

        long readNanos() {
            return readNanos;
        }

        @Override
        public void close() {
            pages.close();
        }
    }

    /** The read's result (a batch, or an open paged read), waited for no longer than the deadline. */
    static Object awaitRead(Object read, Deadline deadline) {
        if (read instanceof RuntimeException e) {
            throw e;
        }
        CompletableFuture<?> f = (CompletableFuture<?>) read;
        try {
            return f.get(Math.max(0, deadline.remainingNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            f.cancel(false);
            throw new ThresherException(ErrorCode.DEADLINE_EXCEEDED, "deadline passed waiting for a partition read");
        } catch (ExecutionException e) {
            throw ThresherException.of(e.getCause() == null ? e : e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ThresherException(ErrorCode.INTERNAL_ERROR, "interrupted waiting for a partition read", e);
        }
    }

    /** {@code batches}, ending in {@code BATCH_TOO_LARGE} at the batch that takes the input past {@code budgets.inputBytes}. */
    static RowBatchStream budgeted(RowBatchStream batches, Budgets budgets, long argumentBytes) {
        return new RowBatchStream() {
            long read = argumentBytes;

            @Override
            public byte[] next() {
                byte[] b = batches.next();
                if (b == null) {
                    return null;
                }
                read += b.length;
                if (read > budgets.inputBytes()) {
                    throw budgets.inputOverBudget(read);
                }
                return b;
            }
        };
    }

    /** A slot's input once read: one batch (ABI v1) or an open paged read (ABI v2). */
    record Input(ShardBatch batch, OpenedPages pages, long firstReadNanos) implements AutoCloseable {
        static Input of(Object read) {
            if (read instanceof OpenedPages p) {
                return new Input(null, p, p.readNanos());
            }
            return new Input((ShardBatch) read, null, 0);
        }

        RowBatchStream batches() {
            return pages != null ? pages : RowBatchStream.of(batch.bytes());
        }

        /** Rows handed to the guest (all of a v1 batch; the pages pulled so far for v2). */
        int rows() {
            return (int) Math.min(Integer.MAX_VALUE, pages != null ? pages.rows() : batch.rowCount());
        }

        long readMicros() {
            return TimeUnit.NANOSECONDS.toMicros(pages != null ? pages.readNanos() : batch.readNanos());
        }

        /** Time spent reading pages while the guest waited in {@code fd_read}: not the guest's own time. */
        long readNanosDuringGuest() {
            return pages != null ? pages.readNanos() - firstReadNanos : 0;
        }

        @Override
        public void close() {
            if (pages != null) {
                pages.close();
            }
        }
    }
}
