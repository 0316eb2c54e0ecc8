"""Building the invocation request for a run (docs/protocol.md §7).

The body is canonical JSON (RFC 8785), and its signature covers those exact bytes. A large
event comes already canonical (`Canonical`, made once per run in a worker process) and is
spliced in where the same serializer would have written it: the body is byte for byte what
serializing the parsed event would give, without this process building or walking it.
"""

import functools
import itertools
import re
import secrets
from dataclasses import field, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from weir.platform.executor import canonical
from weir.platform.foundation import trace_context as tc
from weir.platform.foundation.record_type import record
from weir.platform.registry import Function
from weir.platform.store.records.runs import RERUN_INPUT_KEY, Run
from weir.platform.store.records.steps import Step

REQUEST_VERSION = 2
MAX_INLINE_BYTES = 4 * 1024 * 1024  # above this the SDK fetches events and steps itself


@record
class Canonical:
    """An event in canonical JSON (RFC 8785), as `rfc8785.dumps` of the parsed event gives."""

    json: bytes


@record
class Unparsed:
    """A large event as stored, to be made `Canonical` (in a worker) before it is sent."""

    json: bytes


Event = dict[str, Any] | Canonical | Unparsed  # a trigger event as a call carries it


@record
class CallState:
    """What a call needs, read in one go before the HTTP request."""

    run: Run
    events: list[Event]
    memos: list[Step]  # in completion order
    fences: dict[str, int] = field(default_factory=dict)  # fencing tokens the run holds, by scope


def attempts_allowed(fn: Function) -> int:
    """Its first attempt and its retries: the request's ctx.max_attempts, and when a failed
    attempt is the last one."""
    return fn.config.retries + 1


def with_claim_fences(state: CallState, claimed: dict[str, int]) -> CallState:
    """Add the tokens this call's claim took (concurrency keys with limit 1, by key hash),
    named as the run's keys name the limits: `concurrency0`, `concurrency1`."""
    if not claimed:
        return state
    named = dict(state.fences)
    for name, entry in state.run.keys.items():
        if name.startswith("concurrency") and isinstance(entry, dict):
            token = claimed.get(str(entry.get("hash")))
            if token is not None:
                named[name] = token
    return replace(state, fences=named)


# A function's URL and the step ids it is called with repeat call after call (the official
# SDK is called with the placeholder id "step" until it reports one): parsing and rebuilding
# the query string each time cost more than signing the body.
@functools.lru_cache(maxsize=4096)
def step_url(url: str, step_id: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "stepId"]
    query.append(("stepId", step_id))
    return urlunsplit(parts._replace(query=urlencode(query)))


def build_body(
    state: CallState, *, fn_id: str, step_id: str, attempt: int, max_attempts: int
) -> bytes:
    # The first event stands in the body twice (event, events[0]): made canonical once here
    # (for both bodies, when the first is too large to send whole), then spliced in twice.
    # The others are serialized with the body (splicing each costs more than it saves), unless
    # that body needs the slow canonical path: then each event is made canonical on its own,
    # so that one event's whole-number float does not send every other through it too.
    events = [_canonical(state.events[0]), *state.events[1:]] if state.events else []
    body, spliced = _body(state, events, fn_id, step_id, attempt, max_attempts, use_api=False)
    text = canonical.dumps_fast(body)
    if text is None:
        events = [_canonical(event) for event in events]
        body, spliced = _body(state, events, fn_id, step_id, attempt, max_attempts, use_api=False)
        text = canonical.dumps(body)
    if len(text := spliced.into(text)) <= MAX_INLINE_BYTES:
        return text
    body, spliced = _body(state, events, fn_id, step_id, attempt, max_attempts, use_api=True)
    return spliced.into(canonical.dumps(body))


def _steps(state: CallState) -> dict[str, Any]:
    """The memos by step id; and, for a rerun from a step given new arguments, that step's
    `{"input": [...]}` until it has run (Inngest sends a step's new input so)."""
    steps = {m.step_id: m.memo for m in state.memos}
    given = state.run.keys.get(RERUN_INPUT_KEY) if state.run.keys else None
    if given is not None and given.get("via") == "sdk":
        steps.setdefault(given["step"], {"input": given["input"]})
    return steps


def _body(
    state: CallState,
    events: list[Event],
    fn_id: str,
    step_id: str,
    attempt: int,
    max_attempts: int,
    *,
    use_api: bool,
) -> tuple[dict[str, Any], "_Splices"]:
    """The body with `events` (the state's, the first made canonical) standing in it as
    markers, and what replaces them once it is serialized."""
    stack = [m.step_id for m in state.memos]
    spliced = _Splices()
    first = spliced.place(events[0]) if events else {"name": "", "data": {}}
    body: dict[str, Any] = {
        "event": first,
        "events": [] if use_api else [spliced.place(event) for event in events],
        "steps": {} if use_api else _steps(state),
        "ctx": {
            "run_id": state.run.id,
            "attempt": attempt,
            "max_attempts": max_attempts,
            "disable_immediate_execution": bool(state.run.force_plan),
            "stack": {"stack": stack, "current": len(stack)},
            "use_api": use_api,
            "fn_id": fn_id,
            "step_id": step_id,
            **({"fences": state.fences} if state.fences else {}),
        },
        "use_api": use_api,
        "version": REQUEST_VERSION,
    }
    return body, spliced


def _canonical(event: Event) -> Event:
    return Canonical(canonical.dumps(event)) if type(event) is dict else event


# A marker is this process's secret (128 random bits, never sent: every marker gives way to
# its event before the body leaves), the body's count and the event's index: no app data can
# hold one, and a body needs no random bytes of its own (a system call per call).
_MARKER_SECRET = secrets.token_hex(16)
_MARKER_COUNT = itertools.count()
_QUOTED_MARKER = re.compile(rb'"%s:(\d+):(\d+)"' % _MARKER_SECRET.encode())


class _Splices:
    """Canonical events stand in the body as unique marker strings until it is serialized;
    each marker, quoted, then gives way to the event's bytes, in one pass over the body."""

    def __init__(self) -> None:
        self.count = next(_MARKER_COUNT)
        self.parts: list[bytes] = []

    def place(self, event: Event) -> Any:
        if isinstance(event, Unparsed):
            raise TypeError("a large event must be made canonical before it is sent")
        if not isinstance(event, Canonical):
            return event
        self.parts.append(event.json)
        return f"{_MARKER_SECRET}:{self.count}:{len(self.parts) - 1}"

    def into(self, body: bytes) -> bytes:
        pieces: list[bytes] = []
        spliced: set[int] = set()
        at = 0
        for found in _QUOTED_MARKER.finditer(body):
            if int(found[1]) != self.count:
                continue  # another body's marker: data (it never left that body)
            index = int(found[2])
            if index in spliced or index >= len(self.parts):  # in the data: refuse, not splice
                raise RuntimeError("a canonical event's marker occurs in the request's data")
            spliced.add(index)  # an event left out (use_api) is not found at all
            pieces += (body[at : found.start()], self.parts[index])
            at = found.end()
        return b"".join([*pieces, body[at:]]) if pieces else body


@functools.lru_cache(maxsize=4096)
def _run_trace(run_id: str, stored: str | None, state: str | None) -> tuple[str, bool, str]:
    """A run's trace id, sampled flag and tracestate: made once per run (the call's own part
    of the header is one hash)."""
    parent = tc.parse_traceparent(stored, state) if stored else None
    if parent is None:
        return tc.run_trace_id(run_id), True, ""
    return parent.trace_id, parent.sampled, parent.state


def trace_headers(run: Run, step_id: str, attempt: int, started: int) -> dict[str, str]:
    """`traceparent` (and the sender's `tracestate`) of a call begun at `started` (ms)."""
    given = run.keys.get(tc.RUN_TRACE_KEY) if run.keys else None
    if isinstance(given, dict):
        trace_id, sampled, state = _run_trace(run.id, given.get("parent"), given.get("state"))
    else:
        trace_id, sampled, state = _run_trace(run.id, None, None)
    found = {
        "traceparent": tc.call_traceparent(trace_id, run.id, step_id, attempt, started, sampled)
    }
    if state:
        found["tracestate"] = state
    return found


def job_id(item_id: int, series: int, fences: dict[str, int]) -> str:
    """The `x-inngest-job-id` header: the queue item's id (`<id>.<series>` for a row's later
    calls, `queue.enqueue_in_place`), then `;scope=token` for each fencing token the run holds
    (the official SDK hands this text to the function as `ctx.job_id`)."""
    tokens = [f"{scope}={token}" for scope, token in sorted(fences.items())]
    return ";".join([series_id(item_id, series), *tokens])


def series_id(item_id: int, series: int) -> str:
    """A queue item's retry series: the same for each attempt of one call, another for the
    next call its row carries."""
    return f"{item_id}.{series}" if series else str(item_id)
