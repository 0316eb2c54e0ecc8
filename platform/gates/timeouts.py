"""Run timeouts: `start` from creation to the first step, `finish` from the first step on.

A run that reaches a deadline is cancelled between steps; a running step is never
interrupted (the caller checks before each step and from a timer at the deadline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from weir.platform.foundation.record_type import record
from weir.platform.gates.decisions import clock_text, require_range

Which = Literal["start", "finish"]


@dataclass(frozen=True, slots=True)
class TimeoutConfig:
    """Run timeouts: declared once, as the function config holds it (`FunctionConfig.timeouts`)
    and as this gate takes it."""

    start_ms: int | None = None
    finish_ms: int | None = None

    def __post_init__(self) -> None:
        if self.start_ms is not None:
            require_range("timeouts.start (ms)", self.start_ms, 1)
        if self.finish_ms is not None:
            require_range("timeouts.finish (ms)", self.finish_ms, 1)


@record(slots=True)
class TimeoutDecision:
    cancel: bool
    which: Which | None
    deadline_ms: int | None
    words: str


def start_deadline(config: TimeoutConfig, created_ms: int) -> int | None:
    return None if config.start_ms is None else created_ms + config.start_ms


def finish_deadline(config: TimeoutConfig, first_step_ms: int) -> int | None:
    return None if config.finish_ms is None else first_step_ms + config.finish_ms


def _decide(which: Which, deadline: int | None, now_ms: int) -> TimeoutDecision:
    if deadline is None:
        return TimeoutDecision(False, None, None, "")
    if now_ms < deadline:
        return TimeoutDecision(False, which, deadline, "")
    words = f"timeouts.{which}: deadline {clock_text(deadline)} passed"
    return TimeoutDecision(True, which, deadline, words)


def check(
    config: TimeoutConfig, created_ms: int, first_step_ms: int | None, now_ms: int
) -> TimeoutDecision:
    """Cancel when the deadline that applies now (start before the first step, else finish)
    has been reached."""
    if first_step_ms is None:
        return _decide("start", start_deadline(config, created_ms), now_ms)
    return _decide("finish", finish_deadline(config, first_step_ms), now_ms)
