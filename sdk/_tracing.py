"""A span per step the app runs, when OpenTelemetry is installed in the app.

Weir sends each call's `traceparent` (W3C Trace Context): the step spans nest under the
span the app's own instrumentation made for the request, if there is one, else under Weir's
call span itself. They go wherever the app's TracerProvider sends spans; without one (or
without the opentelemetry package) nothing is made: the package comes with Weir, so an app
that set no provider must not pay for spans that go nowhere.
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    INSTALLED = True
except ImportError:  # the app runs without OpenTelemetry
    INSTALLED = False

TRACER = "weir.sdk"


def request_context(headers: Mapping[str, str]) -> Any:
    """The context step spans start in: the current span's (the app's instrumentation), or
    the one the request's `traceparent` names; None without OpenTelemetry or either."""
    if not INSTALLED or isinstance(_trace.get_tracer_provider(), _trace.ProxyTracerProvider):
        return None  # no provider set: a span would be recorded nowhere
    if _trace.get_current_span().get_span_context().is_valid:
        return _trace.set_span_in_context(_trace.get_current_span())
    parent = headers.get("traceparent")
    if not parent:
        return None
    carrier = {"traceparent": parent}
    if state := headers.get("tracestate"):
        carrier["tracestate"] = state
    return TraceContextTextMapPropagator().extract(carrier)


@contextmanager
def step_span(context: Any, step: str, attempt: int) -> Iterator[None]:
    """A span around a step body; an exception it raises is recorded on it, and passes."""
    if not INSTALLED or context is None:
        yield
        return
    tracer = _trace.get_tracer(TRACER)
    attributes: dict[str, str | int] = {"weir.step.name": step, "weir.step.attempt": attempt + 1}
    with tracer.start_as_current_span(f"step {step}", context=context, attributes=attributes):
        yield
