"""Sending finished runs' traces to an OpenTelemetry collector (OTLP over HTTP or gRPC).

Off unless the operator turns it on (`--otel`). The hot path only offers a finished run's id
to a bounded queue (`Metrics.record`, after the commit): a thread of its own reads each
run's trace from the store (`reads.traces`, passed in as `load`), turns it into the SDK's
spans and hands them to the OTLP exporter. A slow or unreachable collector holds that thread
only; once the queue is full, further runs' traces are dropped and counted in /metrics
(`weir_traces_dropped`), and spans an export could not deliver too
(`weir_trace_spans_dropped`). Nothing in the store depends on it.

Configured by the standard variables the SDK reads: OTEL_EXPORTER_OTLP_ENDPOINT (and
..._TRACES_ENDPOINT), ..._HEADERS, ..._TIMEOUT, ..._COMPRESSION, ..._PROTOCOL (http/protobuf,
the default, or grpc), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER
and ..._ARG.
"""

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Callable, Sequence

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags
from weir.platform.foundation.spans import Span, SpanKind, SpanStatus, Trace
from weir.platform.observability.metrics import Metrics

log = logging.getLogger("weir.traces")
QUEUE_RUNS = 10_000  # finished runs waiting for export, at most (`--otel-queue`)
BATCH_RUNS = 64  # runs whose spans go in one export request, at most
DEFAULT_SERVICE = "weir"
PROTOCOLS = ("http/protobuf", "grpc")
_STOP = ""  # the queue's end marker (no run id is empty)
_SCOPE = InstrumentationScope("weir")
# a run consumes its event; a call is Weir's request to the app; the rest is Weir's own
_KINDS = {SpanKind.RUN: otel_trace.SpanKind.CONSUMER, SpanKind.CALL: otel_trace.SpanKind.CLIENT}
_SAMPLED = (Decision.RECORD_AND_SAMPLE,)
_STATUS = {
    SpanStatus.UNSET: Status(StatusCode.UNSET),
    SpanStatus.OK: Status(StatusCode.OK),
}


class OtelError(Exception):
    """The OTLP settings cannot work (an unknown protocol): said at start, not at the first
    export."""


def protocol() -> str:
    """The OTLP protocol the OTEL_* variables choose (the traces' own variable first)."""
    chosen = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    chosen = chosen.strip().lower()
    if chosen not in PROTOCOLS:
        raise OtelError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={chosen!r} is not supported: use one of "
            f"{', '.join(PROTOCOLS)}"
        )
    return chosen


def otlp_exporter() -> SpanExporter:
    """The OTLP exporter of the chosen protocol; it reads its endpoint, headers, timeout and
    compression from the OTEL_EXPORTER_OTLP_* variables itself."""
    if protocol() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def resource() -> Resource:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; the service is "weir" unless named."""
    found = Resource.create()
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        found = found.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE}))
    return found


class TraceExport:
    """The export thread and its bounded queue of finished runs."""

    def __init__(
        self,
        load: Callable[[str], Trace | None],
        metrics: Metrics,
        exporter: SpanExporter | None = None,
        *,
        queue_runs: int = QUEUE_RUNS,
    ) -> None:
        self.load, self.metrics = load, metrics
        self.exporter = exporter or otlp_exporter()
        self.resource = resource()
        self.sampler: Sampler = TracerProvider().sampler  # OTEL_TRACES_SAMPLER, ..._ARG
        self._queue: queue.Queue[str] = queue.Queue(maxsize=max(1, queue_runs))
        self._thread = threading.Thread(target=self._work, name="weir-otel", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def offer(self, run_id: str) -> None:
        """A run has ended: its trace is to be sent (or, with the queue full, dropped)."""
        try:
            self._queue.put_nowait(run_id)
        except queue.Full:
            self.metrics.traces_dropped.labels("queue_full").inc()

    def close(self, timeout_s: float = 5.0) -> None:
        """Send what is queued, within `timeout_s`; what is left then is dropped."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(queue.Full):  # then the thread is stopped with the process
            self._queue.put(_STOP, timeout=timeout_s / 2)
        self._thread.join(timeout_s / 2)
        self.exporter.shutdown()

    def _work(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH_RUNS:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in batch
            self._send([run_id for run_id in batch if run_id != _STOP])
            if stop:
                return

    def _send(self, run_ids: Sequence[str]) -> None:
        spans: list[ReadableSpan] = []
        for run_id in run_ids:
            try:
                found = self.load(run_id)
            except Exception:  # the store is busy or gone: this trace is lost, not Weir
                log.exception("a run's trace could not be read for export")
                self.metrics.traces_dropped.labels("unreadable").inc()
                continue
            if found is None or not found.ended:
                continue
            if not self._sampled(found):
                self.metrics.traces_dropped.labels("sampled_out").inc()
                continue
            spans.extend(otel_spans(found, self.resource))
        if not spans:
            return
        try:
            result = self.exporter.export(spans)
        except Exception:  # an exporter's own failure must not end the thread
            log.exception("exporting spans failed")
            result = SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            self.metrics.spans_exported.inc(len(spans))
        else:
            self.metrics.spans_dropped.inc(len(spans))

    def _sampled(self, found: Trace) -> bool:
        """The sampler's verdict on the trace's root (a sender's unsampled parent is heeded
        by the default parent-based sampler)."""
        context = None
        if found.parent is not None:
            remote = SpanContext(
                int(found.parent.trace_id, 16),
                int(found.parent.span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED if found.parent.sampled else 0),
            )
            context = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(remote))
        root = found.spans[0]
        verdict = self.sampler.should_sample(context, int(found.trace_id, 16), root.name)
        return verdict.decision in _SAMPLED


def otel_spans(found: Trace, where: Resource) -> list[ReadableSpan]:
    """The trace's spans as the SDK's finished spans, ids and times as derived."""
    trace_id = int(found.trace_id, 16)
    flags = TraceFlags(TraceFlags.SAMPLED)
    remote = None
    if found.parent is not None:
        remote = SpanContext(trace_id, int(found.parent.span_id, 16), True, flags)
    result = []
    for span in found.spans:
        context = SpanContext(trace_id, int(span.span_id, 16), False, flags)
        parent = (
            SpanContext(trace_id, int(span.parent_id, 16), False, flags)
            if span.parent_id
            else remote
        )
        result.append(
            ReadableSpan(
                name=span.name,
                context=context,
                parent=parent,
                resource=where,
                attributes=dict(span.attributes),
                links=[
                    Link(
                        SpanContext(int(link.trace_id, 16), int(link.span_id, 16), False, flags),
                        dict(link.attributes),
                    )
                    for link in span.links
                ],
                kind=_KINDS.get(span.kind, otel_trace.SpanKind.INTERNAL),
                status=_status(span),
                start_time=span.start_ms * 1_000_000,
                end_time=_end_ns(span, found),
                instrumentation_scope=_SCOPE,
            )
        )
    return result


def _status(span: Span) -> Status:
    if span.status == SpanStatus.ERROR:
        return Status(StatusCode.ERROR, span.message or None)
    return _STATUS[span.status]


def _end_ns(span: Span, found: Trace) -> int:
    """An open span of an ended run ends with the run (the run span's end)."""
    end = span.end_ms if span.end_ms is not None else found.spans[0].end_ms
    return max(span.start_ms, end if end is not None else span.start_ms) * 1_000_000
