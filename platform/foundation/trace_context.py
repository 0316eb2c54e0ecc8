"""W3C Trace Context (traceparent, tracestate) and the span ids of a run's trace.

Every id is derived from what the store already holds (the run id, a call's step, attempt and
start): the executor names a call's span in its `traceparent` header, and the trace read back
later from the run's rows names it the same, with nothing written for it.
"""

import hashlib
import re

from weir.platform.foundation.record_type import record

# version 00: 32 hex trace id, 16 hex parent id, 2 hex flags; ids of all zeros are invalid
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16
# tracestate is passed on in Weir's requests to apps: printable ASCII only (as the spec's
# list-members are), never a control character a header could be split by
_TRACESTATE = re.compile(r"^[\x20-\x7e]*$")
MAX_TRACESTATE = 512  # the spec's 32 members of at most 256 chars would be far more: kept brief
RUN_TRACE_KEY = "trace"  # in `runs.keys`: the sender's context, {"parent": ..., "state": ...}


@record(slots=True)
class TraceParent:
    """A remote parent: the span of the sender that the run continues."""

    trace_id: str  # 32 lowercase hex
    span_id: str  # 16 lowercase hex
    sampled: bool = True
    state: str = ""  # the tracestate header, passed on as it came

    def header(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"

    def to_json(self) -> dict[str, str]:
        found = {"parent": self.header()}
        if self.state:
            found["state"] = self.state
        return found


def parse_traceparent(value: str | None, state: str | None = None) -> TraceParent | None:
    """The header's context; None for a missing or malformed one (the spec says to ignore it,
    and start a new trace: an event is never refused for it)."""
    if not value:
        return None
    found = _TRACEPARENT.match(value.strip().lower())
    if found is None:
        return None
    version, trace_id, span_id, flags, rest = found.groups()
    if version == "ff" or (version == "00" and rest) or trace_id == _ZERO_TRACE:
        return None
    if span_id == _ZERO_SPAN:
        return None
    kept = (state or "").strip()
    if len(kept) > MAX_TRACESTATE or not _TRACESTATE.match(kept):
        kept = ""  # dropped whole: a cut or cleaned list would say something else
    return TraceParent(trace_id, span_id, bool(int(flags, 16) & 1), kept)


def stored_parent(keys: dict[str, object]) -> TraceParent | None:
    """The sender's context a run was created with (`runs.keys`), if any."""
    stored = keys.get(RUN_TRACE_KEY) if keys else None
    if not isinstance(stored, dict):
        return None
    state = stored.get("state")
    given = state if isinstance(state, str) else ""
    return parse_traceparent(str(stored.get("parent") or ""), given)


def _hex(text: str, size: int) -> str:
    digest = hashlib.blake2b(text.encode(), digest_size=size).hexdigest()
    # an id of all zeros is invalid: vanishingly unlikely, still never produced
    return digest if digest.strip("0") else "1".rjust(size * 2, "0")


def run_trace_id(run_id: str, parent: TraceParent | None = None) -> str:
    """The run's trace: the sender's, or one of its own named by the run id."""
    return parent.trace_id if parent is not None else _hex(f"trace:{run_id}", 16)


def run_span_id(run_id: str) -> str:
    return _hex(f"run:{run_id}", 8)


def call_span_id(run_id: str, step_id: str, attempt: int, started_ms: int) -> str:
    """One call to the app: its run, the step it was sent for, its attempt and its start."""
    return _hex(f"call:{run_id}:{step_id}:{attempt}:{started_ms}", 8)


def child_span_id(parent_span: str, what: str) -> str:
    """A span under another one, named by what it is (a step's op, the wait before a call)."""
    return _hex(f"{parent_span}:{what}", 8)


def entry_span_id(run_id: str, kind: str, step_id: str) -> str:
    """A sleep, wait for an event, invoke or AI request: one per step of the run."""
    return _hex(f"{kind}:{run_id}:{step_id}", 8)


def call_traceparent(
    trace_id: str, run_id: str, step_id: str, attempt: int, started: int, sampled: bool = True
) -> str:
    """The `traceparent` header of a call: the app's spans nest under the call's span."""
    span = call_span_id(run_id, step_id, attempt, started)
    return f"00-{trace_id}-{span}-{'01' if sampled else '00'}"
