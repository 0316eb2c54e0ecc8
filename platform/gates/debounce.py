"""Debounce: collapse a burst of events per key into one run with the last event.

The first event of a key opens a window; every later arrival restarts it. The run is due
exactly `period` after the last arrival, but never later than `timeout` after the first
arrival of the window. It receives the event with the latest `ts` (ties: the later arrival).
An event arriving once the window is due opens a new window; the due one fires first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import (
    MS_PER_DAY,
    MS_PER_S,
    WaitReason,
    require_range,
    wait_until,
)

MAX_PERIOD_MS = 7 * MS_PER_DAY


@dataclass(frozen=True, slots=True)
class DebounceConfig:
    """A debounce: declared once, as the function config holds it (`FunctionConfig.debounce`)
    and as this gate takes it."""

    period_ms: int
    key: str | None = None  # a CEL expression over `event`: a window per value
    timeout_ms: int | None = None

    def __post_init__(self) -> None:
        require_range("debounce.period (ms)", self.period_ms, MS_PER_S, MAX_PERIOD_MS)
        if self.timeout_ms is not None:
            require_range("debounce.timeout (ms)", self.timeout_ms, MS_PER_S)


@record(slots=True)
class DebounceEvent:
    """An incoming event: its id, its `ts`, and the store's arrival sequence number."""

    id: str
    ts_ms: int
    seq: int


@record(slots=True)
class DebounceState:
    """One open window. `window_seq` (its first event's seq) tells its timers apart."""

    window_seq: int
    first_ms: int
    fire_at_ms: int
    event_id: str
    event_ts_ms: int
    event_seq: int


@record(slots=True)
class DebounceFire:
    """Schedule one run of this window with this single event."""

    window_seq: int
    event_id: str


@record(slots=True)
class DebounceDecision:
    """`state` is the window after the event; its `fire_at_ms` is when its timer is due.

    `fire` is set when the event found the previous window already due: that window must be
    scheduled first (its timer may not have run yet).
    """

    state: DebounceState
    opened: bool
    fire: DebounceFire | None


@record(slots=True)
class DebounceTimerResult:
    """A timer outcome: fire now; or nothing yet, retry at `retry_at_ms`; or nothing (stale)."""

    fire: DebounceFire | None
    state: DebounceState | None
    retry_at_ms: int | None


def _cap(config: DebounceConfig, first_ms: int, now_ms: int) -> int:
    due = now_ms + config.period_ms
    if config.timeout_ms is None:
        return due
    return min(due, first_ms + config.timeout_ms)


def _open(config: DebounceConfig, event: DebounceEvent, now_ms: int) -> DebounceState:
    fire_at = _cap(config, now_ms, now_ms)
    return DebounceState(event.seq, now_ms, fire_at, event.id, event.ts_ms, event.seq)


def _is_later(event: DebounceEvent, state: DebounceState) -> bool:
    return (event.ts_ms, event.seq) > (state.event_ts_ms, state.event_seq)


def _extend(
    config: DebounceConfig, state: DebounceState, event: DebounceEvent, now_ms: int
) -> DebounceState:
    restarted = replace(state, fire_at_ms=_cap(config, state.first_ms, now_ms))
    if not _is_later(event, state):
        return restarted  # an older ts restarts the window but is not the one delivered
    return replace(restarted, event_id=event.id, event_ts_ms=event.ts_ms, event_seq=event.seq)


def fire_of(state: DebounceState) -> DebounceFire:
    return DebounceFire(state.window_seq, state.event_id)


def on_event(
    config: DebounceConfig, state: DebounceState | None, event: DebounceEvent, now_ms: int
) -> DebounceDecision:
    """Open, restart or (if the old one is already due) replace the key's window."""
    if state is None:
        return DebounceDecision(_open(config, event, now_ms), True, None)
    if now_ms >= state.fire_at_ms:
        return DebounceDecision(_open(config, event, now_ms), True, fire_of(state))
    return DebounceDecision(_extend(config, state, event, now_ms), False, None)


def on_timer(state: DebounceState | None, window_seq: int, now_ms: int) -> DebounceTimerResult:
    """A flush timer for `window_seq` ran: fire if it is this window's and it is due."""
    if state is None or state.window_seq != window_seq:
        return DebounceTimerResult(None, state, None)  # stale: that window already fired
    if now_ms < state.fire_at_ms:
        return DebounceTimerResult(None, state, state.fire_at_ms)  # restarted since
    return DebounceTimerResult(fire_of(state), None, None)


def wait_reason(state: DebounceState, key: str = "") -> WaitReason:
    return wait_until(GateName.DEBOUNCE, key, state.fire_at_ms, "collecting events")
