"""Batching: collect events per key; one run receives them all, in arrival order.

A batch flushes the moment it holds `max_size` events, or `timeout` after its first event,
whichever comes first. An event for which the `if` expression is false runs on its own
(the caller evaluates the expression and passes the boolean). An event arriving once the
open batch is due flushes that batch first and opens a new one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import MS_PER_S, WaitReason, require_range, wait_until

FlushCause = Literal["full", "timeout"]


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """Batching: declared once, as the function config holds it (`FunctionConfig.batching`)
    and as this gate takes it."""

    max_size: int
    timeout_ms: int
    key: str | None = None  # a CEL expression over `event`: a batch per value
    if_expr: str | None = None  # events it is false for run alone

    def __post_init__(self) -> None:
        require_range("batch_events.max_size", self.max_size, 2)
        require_range("batch_events.timeout (ms)", self.timeout_ms, MS_PER_S)


@record(slots=True)
class BatchState:
    """The key's open batch."""

    batch_id: str
    first_ms: int
    count: int
    flush_at_ms: int


@record(slots=True)
class BatchFlush:
    """Schedule one run with the `count` events of `batch_id`."""

    batch_id: str
    count: int
    cause: FlushCause


@record(slots=True)
class BatchDecision:
    """Where the event went and what to do now.

    - `alone`: run this event by itself; nothing else changed.
    - otherwise it is event number `position` (0-based) of `batch_id`; `state` is the open
      batch afterwards (None once flushed), `timer_at_ms` a flush timer to enqueue (set when a
      batch was opened), and `flushes` the batches to schedule now, oldest first.
    """

    alone: bool
    batch_id: str | None
    position: int
    state: BatchState | None
    timer_at_ms: int | None
    flushes: tuple[BatchFlush, ...]


@record(slots=True)
class BatchTimerResult:
    flush: BatchFlush | None
    state: BatchState | None


def is_due(state: BatchState, now_ms: int) -> bool:
    return now_ms >= state.flush_at_ms


def _alone(state: BatchState | None) -> BatchDecision:
    return BatchDecision(True, None, 0, state, None, ())


def _open(config: BatchConfig, batch_id: str, now_ms: int) -> BatchState:
    return BatchState(batch_id, now_ms, 0, now_ms + config.timeout_ms)


def _append(
    config: BatchConfig, state: BatchState, opened: bool, earlier: tuple[BatchFlush, ...]
) -> BatchDecision:
    grown = BatchState(state.batch_id, state.first_ms, state.count + 1, state.flush_at_ms)
    timer = grown.flush_at_ms if opened else None
    if grown.count < config.max_size:
        return BatchDecision(False, grown.batch_id, state.count, grown, timer, earlier)
    full = BatchFlush(grown.batch_id, grown.count, "full")
    return BatchDecision(False, grown.batch_id, state.count, None, timer, (*earlier, full))


def on_event(
    config: BatchConfig,
    state: BatchState | None,
    now_ms: int,
    new_batch_id: str,
    batchable: bool = True,
) -> BatchDecision:
    """Add an event to the key's batch; `new_batch_id` names a batch if one has to be opened."""
    if not batchable:
        return _alone(state)
    if state is None:
        return _append(config, _open(config, new_batch_id, now_ms), True, ())
    if is_due(state, now_ms):
        overdue = (BatchFlush(state.batch_id, state.count, "timeout"),)
        return _append(config, _open(config, new_batch_id, now_ms), True, overdue)
    return _append(config, state, False, ())


def on_timer(state: BatchState | None, batch_id: str, now_ms: int) -> BatchTimerResult:
    """The flush timer of `batch_id` ran: flush it if it is still the open, due batch."""
    if state is None or state.batch_id != batch_id or not is_due(state, now_ms):
        return BatchTimerResult(None, state)  # stale: flushed full, or already replaced
    return BatchTimerResult(BatchFlush(state.batch_id, state.count, "timeout"), None)


def wait_reason(state: BatchState, key: str = "") -> WaitReason:
    plural = "" if state.count == 1 else "s"
    words = f"collecting a batch ({state.count} event{plural} so far)"
    return wait_until(GateName.BATCHING, key, state.flush_at_ms, words)
