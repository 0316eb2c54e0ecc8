"""Prometheus metrics: counters moved by committed transitions, gauges read from the store.

Each Platform owns its registry (not the process-global one), so several platforms in one
test process never share counts.
"""

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from weir.platform.foundation.vocabulary import SYSTEM_EVENT_PREFIX
from weir.platform.observability import notes as n
from weir.platform.store.views.stats import StoreStats

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.events = Counter("weir_events_accepted", "Events stored", ["source"], registry=reg)
        self.started = Counter(
            "weir_runs_started", "Runs whose first call began", ["function"], registry=reg
        )
        self.finished = Counter(
            "weir_runs_finished", "Runs ended, by status", ["function", "status"], registry=reg
        )
        self.retries = Counter(
            "weir_step_retries", "Failed calls scheduled again", ["function"], registry=reg
        )
        self.calls = Histogram(
            "weir_step_call_duration_seconds",
            "Duration of calls to apps (one call runs one step or discovers the next)",
            ["function"],
            buckets=CALL_BUCKETS,
            registry=reg,
        )
        # OpenTelemetry export (observability/otel.py), when it is on
        self.spans_exported = Counter(
            "weir_trace_spans_exported", "Spans the OTLP collector accepted", registry=reg
        )
        self.spans_dropped = Counter(
            "weir_trace_spans_dropped",
            "Spans not delivered: the collector refused them, or was slow or down",
            registry=reg,
        )
        self.traces_dropped = Counter(
            "weir_traces_dropped",
            "Finished runs whose trace was not exported, by reason (queue_full: the export "
            "queue was full; sampled_out: OTEL_TRACES_SAMPLER said no; unreadable)",
            ["reason"],
            registry=reg,
        )
        # Called with a finished run's id after its commit (the trace export's queue)
        self.run_finished: Callable[[str], None] | None = None

        self.webhooks = Counter(
            "weir_webhook_deliveries",
            "Webhook deliveries by source and outcome (accepted, a refusal's reason, "
            "rate_limited, unavailable; unknown_source with no source name)",
            ["source", "outcome"],
            registry=reg,
        )

        # Each labelled child once: `labels()` checks and locks on every call, and a child is
        # looked up for every run that starts and ends and for every call.
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    def record(self, note: n.Note, function: str) -> None:
        if note.what == n.EVENT_ACCEPTED:
            internal = str(note.fields.get("name", "")).startswith(SYSTEM_EVENT_PREFIX)
            self._child(self.events, "internal" if internal else "sent").inc()
        elif note.what == n.RUN_STARTED:
            self._child(self.started, function).inc()
        elif note.what == n.RUN_FINISHED:
            self._child(self.finished, function, str(note.fields["status"]).lower()).inc()
            if self.run_finished is not None and note.run_id:
                self.run_finished(note.run_id)
        elif note.what == n.RETRY_SCHEDULED:
            self._child(self.retries, function).inc()
        elif note.what == n.CALL_FINISHED:
            self._child(self.calls, function).observe(int(note.fields["duration_ms"]) / 1000)

    def webhook(self, source: str, outcome: str) -> None:
        self._child(self.webhooks, source, outcome).inc()

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def render(self, stats: StoreStats, inflight: int) -> bytes:
        scrape = CollectorRegistry()
        scrape.register(_StoreCollector(stats, inflight))
        return generate_latest(self.registry) + generate_latest(scrape)


class _StoreCollector(Collector):
    def __init__(self, stats: StoreStats, inflight: int) -> None:
        self.stats, self.inflight = stats, inflight

    def collect(self) -> Iterator[Metric]:
        s = self.stats
        items = GaugeMetricFamily("weir_queue_items", "Queued items by state", labels=["state"])
        for state, count in (
            ("due", s.queue_due),
            ("scheduled", s.queue_scheduled),
            ("leased", s.queue_leased),
        ):
            items.add_metric([state], count)
        yield items
        yield GaugeMetricFamily(
            "weir_queue_oldest_due_seconds",
            "How long the longest-waiting due item has waited",
            value=s.oldest_due_ms / 1000,
        )
        yield _by_label(
            "weir_event_outcomes",
            "Stored admission outcomes that started no run",
            "outcome",
            s.outcomes,
        )
        yield _by_label("weir_runs_waiting", "Unfinished runs held by a gate", "gate", s.waiting)
        yield _by_label(
            "weir_runs_unfinished",
            "Runs not ended, by status as the APIs show it: running from the moment a call "
            "is handed to the app",
            "status",
            {status.lower(): n for status, n in s.unfinished.items()},
        )
        drift = GaugeMetricFamily(
            "weir_capacity_drift",
            "Live capacities the code declares otherwise: the stored capacity minus the declared "
            "value, until an operator sets or resets it",
            labels=["kind", "name"],
        )
        for cap in s.drifted:
            drift.add_metric([cap.kind, cap.name], cap.capacity - cap.declared)
        yield drift
        yield GaugeMetricFamily(
            "weir_inflight_items", "Items this process is working on", value=self.inflight
        )


def _by_label(name: str, doc: str, label: str, counts: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for value, count in sorted(counts.items()):
        family.add_metric([value], count)
    return family
