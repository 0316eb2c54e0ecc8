"""Cancel on: which incoming events may cancel a run.

`match: "data.x"` is shorthand for `event.data.x == async.data.x` (`event` is the run's
trigger, `async` the candidate); with `if` as well, both must hold. The caller evaluates the
expression; this module builds it and applies the timing rules around it.
"""

from __future__ import annotations

import re

from weir.platform.foundation.record_type import record
from weir.platform.gates.decisions import MS_PER_DAY, require_range

MAX_ENTRIES = 5
DEFAULT_TIMEOUT_MS = 365 * MS_PER_DAY  # a subscription must expire some day
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


@record(slots=True)
class CancelWindow:
    """A run's cancel-on subscription: its trigger ids, creation time, and expiry."""

    run_id: str
    trigger_event_ids: tuple[str, ...]
    created_ms: int
    expires_ms: int


@record(slots=True)
class CandidateEvent:
    id: str
    received_ms: int


def check_entry_count(count: int) -> int:
    return require_range("cancel_on entries", count, 0, MAX_ENTRIES)


def match_expression(match: str) -> str:
    """`data.x` -> `event.data.x == async.data.x`; the path must be plain dotted names."""
    path = match.strip()
    if not _PATH.fullmatch(path):
        raise ValueError(f"cancel_on.match = {match!r} must be a dotted field path like 'data.x'")
    return f"event.{path} == async.{path}"


def expression(match: str | None, if_: str | None) -> str | None:
    """The full cancel condition, or None when any event of that name cancels."""
    parts = [match_expression(match)] if match else []
    if if_ and if_.strip():
        parts.append(if_.strip())
    if len(parts) == 2:
        return f"({parts[0]}) && ({parts[1]})"
    return parts[0] if parts else None


def expires_at_ms(scheduled_ms: int, timeout_ms: int | None) -> int:
    """An event received after this instant can no longer cancel the run."""
    if timeout_ms is None:
        return scheduled_ms + DEFAULT_TIMEOUT_MS
    return scheduled_ms + require_range("cancel_on.timeout (ms)", timeout_ms, 0)


def may_cancel(window: CancelWindow, event: CandidateEvent) -> bool:
    """Only events received after the run was created, before expiry, never its own trigger.

    Time is in ms: an event received in the run's creation millisecond does not count, as it
    cannot be told apart from one received just before.
    """
    if event.id in window.trigger_event_ids:
        return False
    return window.created_ms < event.received_ms <= window.expires_ms
