"""Building the invocation request for a run (docs/protocol.md §7)."""

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from weir.platform.executor import canonical
from weir.platform.registry import Function
from weir.platform.store.run_records import Run
from weir.platform.store.step_records import Step

REQUEST_VERSION = 2
MAX_INLINE_BYTES = 4 * 1024 * 1024  # above this the SDK fetches events and steps itself


@dataclass(frozen=True)
class CallState:
    """What a call needs, read in one go before the HTTP request."""

    run: Run
    events: list[dict[str, Any]]
    memos: list[Step]  # in completion order


def attempts_allowed(fn: Function) -> int:
    """Its first attempt and its retries: the request's ctx.max_attempts, and when a failed
    attempt is the last one."""
    return fn.config.retries + 1


def step_url(url: str, step_id: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "stepId"]
    query.append(("stepId", step_id))
    return urlunsplit(parts._replace(query=urlencode(query)))


def build_body(
    state: CallState, *, fn_id: str, step_id: str, attempt: int, max_attempts: int
) -> bytes:
    body = _body(state, fn_id, step_id, attempt, max_attempts, use_api=False)
    if len(body) <= MAX_INLINE_BYTES:
        return body
    return _body(state, fn_id, step_id, attempt, max_attempts, use_api=True)


def _body(
    state: CallState, fn_id: str, step_id: str, attempt: int, max_attempts: int, *, use_api: bool
) -> bytes:
    stack = [m.step_id for m in state.memos]
    body: dict[str, Any] = {
        "event": state.events[0] if state.events else {"name": "", "data": {}},
        "events": [] if use_api else state.events,
        "steps": {} if use_api else {m.step_id: m.memo for m in state.memos},
        "ctx": {
            "run_id": state.run.id,
            "attempt": attempt,
            "max_attempts": max_attempts,
            "disable_immediate_execution": bool(state.run.force_plan),
            "stack": {"stack": stack, "current": len(stack)},
            "use_api": use_api,
            "fn_id": fn_id,
            "step_id": step_id,
        },
        "use_api": use_api,
        "version": REQUEST_VERSION,
    }
    return canonical.dumps(body)
