"""Throttle: GCRA on run starts; a start over the limit waits for its slot, never dropped.

T = period / limit and τ = burst × T, so from idle 1 + burst runs start at once and then one
every period / limit. Two ways to use it, both exact:
- `schedule_start` at enqueue: give each start its slot in arrival order (the queue item is
  then available at `start_ms`); this is what keeps waiting starts of a key in order.
- `try_start` at claim: admit now, or name the ms the item may next be tried.
Use one or the other for a given key, never both: each consumes a slot from the same meter.
A reserved slot is not given back if its run is cancelled before starting (later starts
only get later, so no limit is ever exceeded).
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.platform.gates import gcra
from weir.platform.gates.decisions import MS_PER_S, WaitReason, require_range, wait_until

GATE = "throttle"


@dataclass(frozen=True, slots=True)
class ThrottleConfig:
    period_ms: int
    limit: int
    burst: int = 0

    def __post_init__(self) -> None:
        require_range("throttle.period (ms)", self.period_ms, MS_PER_S)
        require_range("throttle.limit", self.limit, 1)
        require_range("throttle.burst", self.burst, 0)

    @property
    def meter(self) -> gcra.Meter:
        return gcra.Meter(self.period_ms, self.limit, self.burst)


@dataclass(frozen=True, slots=True)
class ThrottleDecision:
    """`start_ms` == now when the start may go ahead at once; otherwise `wait` says why."""

    admitted: bool
    start_ms: int
    state: gcra.GcraState
    wait: WaitReason | None


def _waiting(key: str, until_ms: int) -> WaitReason:
    return wait_until(GATE, key, until_ms, "waiting for a slot")


def schedule_start(
    config: ThrottleConfig, state: gcra.GcraState | None, now_ms: int, key: str = ""
) -> ThrottleDecision:
    """Reserve the next slot for a start arriving now; call in arrival order per key."""
    slot = gcra.reserve(config.meter, state, now_ms)
    wait = _waiting(key, slot.start_ms) if slot.waited else None
    return ThrottleDecision(not slot.waited, slot.start_ms, slot.state, wait)


def try_start(
    config: ThrottleConfig, state: gcra.GcraState | None, now_ms: int, key: str = ""
) -> ThrottleDecision:
    """Admit a start now if the meter allows; the state only advances when admitted."""
    result = gcra.check(config.meter, state, now_ms)
    wait = None if result.admitted else _waiting(key, result.at_ms)
    return ThrottleDecision(result.admitted, result.at_ms, result.state, wait)


def describe(config: ThrottleConfig) -> str:
    """The effective start pattern, for the function's page."""
    at_once = 1 + config.burst
    every, rest = divmod(config.period_ms, config.limit)
    interval = f"{every} ms" if rest == 0 else f"{config.period_ms}/{config.limit} ms"
    return f"{at_once} at once from idle, then one every {interval}"
