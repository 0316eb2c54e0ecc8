"""A run's trace in the OpenTelemetry SDK's terms, and the OTLP exporter (HTTP or gRPC) that
sends it; `platform/tracing.py` runs the export, off Weir's own process.

Configured by the standard variables the SDK reads: OTEL_EXPORTER_OTLP_ENDPOINT (and
..._TRACES_ENDPOINT), ..._HEADERS, ..._TIMEOUT, ..._COMPRESSION, ..._PROTOCOL (http/protobuf,
the default, or grpc), OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER
and ..._ARG.
"""

import logging
import os

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import Decision, Sampler
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags
from weir.platform.foundation.spans import Span, SpanKind, SpanStatus, Trace

log = logging.getLogger("weir.traces")
QUEUE_RUNS = 10_000  # finished runs waiting for export, at most (`--otel-queue`)
DEFAULT_SERVICE = "weir"
PROTOCOLS = ("http/protobuf", "grpc")
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


def sampled(sampler: Sampler, found: Trace) -> bool:
    """The sampler's verdict on the trace's root (a sender's unsampled parent is heeded by
    the default parent-based sampler)."""
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
    verdict = sampler.should_sample(context, int(found.trace_id, 16), root.name)
    return verdict.decision in _SAMPLED


def env_sampler() -> Sampler:
    """OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as the SDK reads them."""
    sampler: Sampler = TracerProvider().sampler
    return sampler


def export(exporter: SpanExporter, spans: list[ReadableSpan]) -> bool:
    """Hand the spans to the exporter; False if they were not delivered (its own failure
    included: it must not end the caller)."""
    try:
        return exporter.export(spans) == SpanExportResult.SUCCESS
    except Exception:
        log.exception("exporting spans failed")
        return False


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
