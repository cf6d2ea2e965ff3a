package dev.thresher.coordinator;

import dev.thresher.bindings.Partial;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.cellhost.ReduceOutcome;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A reduce cell in memory: by default the result is a JSON object of the merged partials, in their
 * order; a test replaces {@link #behaviour} to fail, after the guest started or before it.
 */
final class FakeReducer implements Reducer {
    private static final RuntimeException NOT_STARTED = new RuntimeException("guest not started", null, false, false) {};

    /** The merged partials of each reduce, and the digest it ran. */
    final List<List<Partial>> inputs = new CopyOnWriteArrayList<>();
    final List<String> digests = new CopyOnWriteArrayList<>();
    volatile Function<List<Partial>, ReduceOutcome> behaviour = FakeReducer::asJson;

    @Override
    public ReduceOutcome reduce(String componentDigest, byte[] partials, String argumentsJson, Deadline deadline) {
        List<Partial> merged = PartialsCodec.decode(partials);
        inputs.add(merged);
        digests.add(componentDigest);
        return behaviour.apply(merged);
    }

    @Override
    public boolean refusedBeforeGuest(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t == NOT_STARTED) {
                return true;
            }
        }
        return false;
    }

    /** A refusal that provably came before any guest code. */
    static ThresherException refused(ErrorCode code) {
        return new ThresherException(code, "refused before the guest", NOT_STARTED);
    }

    static ReduceOutcome asJson(List<Partial> merged) {
        StringBuilder b = new StringBuilder("{");
        for (Partial p : merged) {
            b.append(b.length() > 1 ? "," : "").append('"').append(p.key()).append("\":").append(p.value());
        }
        return new ReduceOutcome(b.append('}').toString(), 1_000);
    }
}
