"""A run's trace as records: spans with ids, parent, kind, times, status, attributes and
links. `reads.traces` derives them from the store's rows; `observability.otel` exports them;
the run page and GraphQL show them."""

from dataclasses import field
from enum import StrEnum

from weir.platform.foundation.record_type import record
from weir.platform.foundation.trace_context import TraceParent

AttrValue = str | int | float | bool | tuple[str, ...]


class SpanKind(StrEnum):
    """What a span stands for (the attribute `weir.span.kind`)."""

    RUN = "run"
    QUEUED = "queued"  # due, waiting for a worker, or between two calls
    GATE = "gate"  # held by flow control (throttle, concurrency, ...): `weir.gate` names it
    BACKOFF = "backoff"  # a failed attempt waited before the next
    CALL = "call"  # one request to the app
    STEP = "step"  # a step the call's answer reported
    SLEEP = "sleep"
    WAIT = "wait"  # step.wait_for_event
    INVOKE = "invoke"
    AI = "ai"  # step.ai.infer: the request Weir made


class SpanStatus(StrEnum):
    UNSET = "unset"
    OK = "ok"
    ERROR = "error"


@record(slots=True)
class SpanLink:
    """Another trace's span this one points to (an invoked run's run span)."""

    trace_id: str
    span_id: str
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@record(slots=True)
class Span:
    span_id: str
    parent_id: str | None  # None: the root (whose remote parent is the trace's `parent`)
    name: str
    kind: SpanKind
    start_ms: int
    end_ms: int | None  # None while it is open
    status: SpanStatus = SpanStatus.UNSET
    message: str = ""  # the error's, for a span with status ERROR
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    links: tuple[SpanLink, ...] = ()


@record(slots=True)
class Trace:
    """A run's spans, parents before children, the run span first."""

    trace_id: str
    run_id: str
    ended: bool
    parent: TraceParent | None  # the sender's span the run continues, if it sent one
    spans: tuple[Span, ...]

    def span(self, span_id: str) -> Span | None:
        return next((s for s in self.spans if s.span_id == span_id), None)
