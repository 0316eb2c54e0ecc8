"""What a handler receives: the triggering event(s), run identity and the step API."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._event import Event
from ._logs import ReplayLogger
from ._steps import Step, StepSync


@dataclass(frozen=True)
class _RunInfo:
    event: Event
    events: list[Event]  # every event of a batch; `event` is the first
    run_id: str
    attempt: int  # 0-based attempt of this request
    max_attempts: int | None = None
    job_id: str | None = None
    request_id: str | None = None
    # Logs only when the code runs for the first time, not while it replays memoized steps.
    logger: ReplayLogger = field(default_factory=lambda: ReplayLogger(lambda: False, {}))


@dataclass(frozen=True)
class Context(_RunInfo):
    """Context of an async handler: `await ctx.step.run(...)`."""

    step: Step = None  # type: ignore[assignment]  # always given; defaults keep field order


@dataclass(frozen=True)
class ContextSync(_RunInfo):
    """Context of a plain (non-async) handler: `ctx.step.run(...)`."""

    step: StepSync = None  # type: ignore[assignment]
