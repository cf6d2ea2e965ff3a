package dev.thresher.bench;

import dev.thresher.coordinator.CallPhases;
import org.HdrHistogram.Histogram;

/**
 * One measurement: one peer, one workload, one mode, one number of clients.
 *
 * @param workload the workload's name
 * @param peer the peer's name
 * @param mode closed loop (each client calls again as soon as answered) or open loop (fixed arrival rate)
 * @param clients client threads (open loop: workers that take the scheduled arrivals)
 * @param targetRate the open loop's arrival rate in calls/s, 0 in closed loop
 * @param calls calls answered while measuring
 * @param errors calls that failed while measuring
 * @param unserved open loop only: arrivals never started because the peer fell too far behind (their
 *        latency is recorded as the time they had waited when the run stopped, a lower bound)
 * @param seconds the measured time
 * @param latency nanoseconds; closed loop from each call's start, open loop from each call's intended start
 * @param firstError the first failure's message, or null
 * @param phases Thresher only: the nodes' call-phase totals over the measurement, or null
 * @param reads Thresher only: the partition reads the nodes' leader replicas answered over the measurement, or null
 * @param maxLagNanos open loop only: the longest an arrival waited past its intended start for a free worker
 */
record Result(String workload, String peer, Mode mode, int clients, double targetRate, long calls, long errors,
              long unserved, double seconds, Histogram latency, String firstError, CallPhases.Snapshot phases,
              ThresherPeer.ReplicaReads reads, long maxLagNanos) {
    enum Mode {
        CLOSED("closed"), OPEN("open");

        final String label;

        Mode(String label) {
            this.label = label;
        }
    }

    double callsPerSecond() {
        return seconds > 0 ? calls / seconds : 0;
    }

    /** Milliseconds at percentile {@code p}; NaN with no sample. */
    double ms(double p) {
        return latency.getTotalCount() == 0 ? Double.NaN : latency.getValueAtPercentile(p) / 1e6;
    }

    double meanMs() {
        return latency.getTotalCount() == 0 ? Double.NaN : latency.getMean() / 1e6;
    }

    double maxMs() {
        return latency.getTotalCount() == 0 ? Double.NaN : latency.getMaxValue() / 1e6;
    }

    boolean saturated() {
        return unserved > 0;
    }
}
