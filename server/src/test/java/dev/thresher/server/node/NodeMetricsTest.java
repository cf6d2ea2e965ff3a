package dev.thresher.server.node;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.http.MetricsRoute;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** One node's registry: what the coordinator's observer records, the node tag, and the two exposition formats. */
class NodeMetricsTest {
    private final NodeMetrics metrics = new NodeMetrics("n1");

    @AfterEach
    void close() {
        metrics.close();
    }

    @Test
    void callsAreTimedByResolvedBindingAndOutcomeInTheBucketsOfMillisecondsToMinutes() {
        metrics.calls().callEnded(Optional.of("revenue"), null, TimeUnit.MILLISECONDS.toNanos(3));
        metrics.calls().callEnded(Optional.of("revenue"), null, TimeUnit.SECONDS.toNanos(40));
        metrics.calls().callEnded(Optional.of("revenue"), ErrorCode.DEADLINE_EXCEEDED, TimeUnit.SECONDS.toNanos(30));
        metrics.calls().callEnded(Optional.empty(), ErrorCode.UNKNOWN_BINDING, 1_000);

        String text = metrics.scrape(MetricsRoute.PROMETHEUS_TEXT);

        assertThat(text).contains("# TYPE thresher_call_seconds histogram")
                .contains("thresher_call_seconds_count{binding=\"revenue\",node=\"n1\",outcome=\"success\"} 2")
                .contains("thresher_call_seconds_bucket{binding=\"revenue\",node=\"n1\",outcome=\"success\",le=\"0.005\"} 1")
                .contains("thresher_call_seconds_bucket{binding=\"revenue\",node=\"n1\",outcome=\"success\",le=\"60.0\"} 2")
                .contains("thresher_call_seconds_bucket{binding=\"revenue\",node=\"n1\",outcome=\"success\",le=\"600.0\"} 2")
                .contains("thresher_call_seconds_count{binding=\"revenue\",node=\"n1\",outcome=\"DEADLINE_EXCEEDED\"} 1")
                .contains("thresher_call_seconds_count{binding=\"" + NodeMetrics.UNRESOLVED
                        + "\",node=\"n1\",outcome=\"UNKNOWN_BINDING\"} 1");
    }

    @Test
    void invalidShardRunsStartAtZeroForEveryReasonAndCountUnderTheirNameAndTheFormerOne() {
        metrics.calls().slotRejected(ErrorCode.SLOT_EXPIRED);

        String text = metrics.scrape(MetricsRoute.PROMETHEUS_TEXT);

        for (String name : new String[] {"thresher_shard_runs_invalid_total", "thresher_slot_rejections_total"}) {
            assertThat(text).contains(name + "{node=\"n1\",reason=\"SLOT_EXPIRED\"} 1.0")
                    .contains(name + "{node=\"n1\",reason=\"SLOT_MISSING\"} 0.0")
                    .contains(name + "{node=\"n1\",reason=\"PARTIAL_KEY_DUPLICATED\"} 0.0");
        }
        assertThat(text).contains("# HELP thresher_slot_rejections_total Deprecated: the former name of"
                + " thresher_shard_runs_invalid_total");
    }

    @Test
    void theJvmAndTheProcessAreMeasuredAndEverySeriesNamesItsNode() {
        String text = metrics.scrape(MetricsRoute.PROMETHEUS_TEXT);

        assertThat(text).contains("jvm_memory_used_bytes{", "jvm_threads_live_threads{", "jvm_classes_loaded_classes{",
                "process_cpu_usage{", "system_cpu_count{", "process_uptime_seconds{");
        text.lines().filter(l -> !l.startsWith("#") && !l.isBlank())
                .forEach(l -> assertThat(l).as("a sample").contains("node=\"n1\""));
    }

    @Test
    void openMetricsIsWrittenWhenAsked() {
        metrics.calls().callEnded(Optional.of("revenue"), null, 1_000_000);

        String text = metrics.scrape(MetricsRoute.OPENMETRICS_TEXT);

        assertThat(text).contains("# TYPE thresher_call_seconds histogram").endsWith("# EOF\n");
    }
}
