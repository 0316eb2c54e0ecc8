"""weir.sdk's step spans: made only where the app set a TracerProvider (OpenTelemetry comes
installed with Weir, so its presence alone says nothing)."""

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from weir.sdk import _tracing

PARENT = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}


def test_without_a_provider_no_step_span_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    assert _tracing.request_context(PARENT) is None


def test_with_a_provider_steps_continue_the_calls_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = TracerProvider()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    context = _tracing.request_context(PARENT)
    assert context is not None
    span = trace.get_current_span(context).get_span_context()
    assert format(span.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
