package dev.thresher.bindings;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What one binding version's guest may use, declared in its manifest ({@code "budgets"}) and capped by the
 * node's limits. Zero means not declared: the node's limit applies.
 *
 * @param runMs wall time of one invocation ({@code run} of one slot, or {@code reduce}), within the call's deadline
 * @param memoryBytes linear memory of one instance: the module must declare a maximum no larger
 * @param inputBytes bytes one {@code run} reads from fd 0 (the arguments, then its batches)
 * @param outputBytes bytes of one {@code run}'s partials: each key's UTF-8 bytes and 8 per value
 * @param emits {@code emit} calls of one {@code run}
 * @param moduleBytes bytes of the module
 */
public record Budgets(long runMs, long memoryBytes, long inputBytes, long outputBytes, long emits, long moduleBytes) {
    /** Nothing declared: the node's limits apply. */
    public static final Budgets NONE = new Budgets(0, 0, 0, 0, 0, 0);

    public Budgets {
        if (runMs < 0 || memoryBytes < 0 || inputBytes < 0 || outputBytes < 0 || emits < 0 || moduleBytes < 0) {
            throw new IllegalArgumentException("budgets are positive, or 0 for the node's limit");
        }
    }

    /** The budgets in manifest order, by their manifest names (declared ones only). */
    public Map<String, Long> declared() {
        Map<String, Long> m = new LinkedHashMap<>();
        put(m, "runMs", runMs);
        put(m, "memoryBytes", memoryBytes);
        put(m, "inputBytes", inputBytes);
        put(m, "outputBytes", outputBytes);
        put(m, "emits", emits);
        put(m, "moduleBytes", moduleBytes);
        return m;
    }

    private static void put(Map<String, Long> m, String k, long v) {
        if (v > 0) {
            m.put(k, v);
        }
    }

    /**
     * The node limit each budget is capped by, by manifest name; a budget with no node limit of its own
     * ({@code inputBytes}, {@code outputBytes}) is capped by the largest value the node could ever let through.
     */
    public static Map<String, Long> caps(Limits limits) {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("runMs", limits.maxCallDeadlineMs());
        m.put("memoryBytes", limits.guestMemoryMaxBytes());
        m.put("inputBytes", Long.MAX_VALUE);
        m.put("outputBytes", (long) limits.emitsPerInvocation() * (limits.partialKeyMaxBytes() + 8L));
        m.put("emits", (long) limits.emitsPerInvocation());
        m.put("moduleBytes", (long) limits.packageMaxBytes());
        return m;
    }

    /** The emit calls a run may make on a node with {@code limits}. */
    public int emits(Limits limits) {
        return (int) (emits == 0 ? limits.emitsPerInvocation() : Math.min(emits, limits.emitsPerInvocation()));
    }

    /** The partial bytes a run may produce, or {@link Long#MAX_VALUE} when not declared. */
    public long outputBytesOrMax() {
        return outputBytes == 0 ? Long.MAX_VALUE : outputBytes;
    }

    /** The deadline of one invocation starting now: the call's, or {@code runMs} from now when that comes first. */
    public Deadline runDeadline(Deadline callDeadline) {
        return runMs > 0 ? callDeadline.earlier(Deadline.afterMillis(System.nanoTime(), runMs)) : callDeadline;
    }

    /**
     * An invocation stopped by the run budget, not by the call's deadline, says so under the same code
     * ({@code DEADLINE_EXCEEDED}); any other failure is itself.
     *
     * @param what the invocation, as the message names it: "run" or "reduce"
     */
    public RuntimeException overRunBudget(RuntimeException e, Deadline callDeadline, String what) {
        if (runMs > 0 && e instanceof ThresherException te && te.code() == ErrorCode.DEADLINE_EXCEEDED
                && !callDeadline.passed()) {
            return new ThresherException(ErrorCode.DEADLINE_EXCEEDED, what + " passed its binding's budget of "
                    + runMs + " ms (budgets.runMs): " + te.getMessage(), te);
        }
        return e;
    }

    /** The failure of a run whose input (the arguments and the batches) came to {@code bytes}, past {@code inputBytes}. */
    public ThresherException inputOverBudget(long bytes) {
        return new ThresherException(ErrorCode.BATCH_TOO_LARGE, "run's input passed " + inputBytes
                + " bytes (its binding's budgets.inputBytes: the arguments and the batches), at " + bytes);
    }

    /** The input bytes a run may read, or {@link Long#MAX_VALUE} when not declared. */
    public long inputBytesOrMax() {
        return inputBytes == 0 ? Long.MAX_VALUE : inputBytes;
    }
}
