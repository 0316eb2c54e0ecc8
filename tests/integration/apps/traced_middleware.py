"""What an instrumented app does with the trace context Weir sends: each POST is journaled
with its `traceparent`/`tracestate`, and, when OTEL_EXPORTER_OTLP_ENDPOINT is set, served
inside a span of the app's own (OpenTelemetry SDK, W3C propagator) exported to that
collector: the app's span is to nest under Weir's call span."""

import os

from fastapi import FastAPI, Request
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.responses import Response

from tests.integration.apps.journal import note

_tracer: trace.Tracer | None = None
if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
    provider = TracerProvider(resource=Resource.create({"service.name": "the-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)  # the app's: weir.sdk's step spans go there too
    _tracer = provider.get_tracer("tests.app")


class _Traced(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.method != "POST":
            return await call_next(request)
        note(
            "request",
            run=request.headers.get("x-run-id"),
            step=request.query_params.get("stepId"),
            traceparent=request.headers.get("traceparent"),
            tracestate=request.headers.get("tracestate"),
        )
        if _tracer is None:
            return await call_next(request)
        context = TraceContextTextMapPropagator().extract(dict(request.headers))
        with _tracer.start_as_current_span(
            "app handles the call",
            context=context,
            kind=trace.SpanKind.SERVER,
            attributes={"app.run_id": request.headers.get("x-run-id", "")},
        ):
            return await call_next(request)


def instrument(app: FastAPI) -> None:
    app.add_middleware(_Traced)
