"""What a handler receives: the triggering event(s), run identity and the step API."""

from __future__ import annotations

from dataclasses import dataclass, field

from weir.sdk._event import Event
from weir.sdk._logs import ReplayLogger
from weir.sdk._steps.steps import Step, StepSync


@dataclass(frozen=True)
class _RunInfo:
    event: Event
    events: list[Event]  # every event of a batch; `event` is the first
    run_id: str
    attempt: int  # 0-based attempt of this request
    max_attempts: int | None = None
    job_id: str | None = None
    request_id: str | None = None
    fences: dict[str, int] = field(default_factory=dict)  # Weir: fencing tokens, by scope
    # Logs only when the code runs for the first time, not while it replays memoized steps.
    logger: ReplayLogger = field(default_factory=lambda: ReplayLogger(lambda: False, {}))

    def fence(self, scope: str = "lane") -> int:
        """The fencing token of `scope` this run holds: it grows with every new holder of the
        scope, so a downstream system that keeps the highest token it has seen can refuse
        writes carrying a lower one (docs/semantics.md#fencing-tokens)."""
        token = self.fences.get(scope)
        if token is None:
            held = ", ".join(sorted(self.fences)) or "none"
            raise LookupError(f"this run holds no {scope!r} fencing token (it holds: {held})")
        return token


@dataclass(frozen=True)
class Context(_RunInfo):
    """Context of an async handler: `await ctx.step.run(...)`."""

    step: Step = None  # type: ignore[assignment]  # always given; defaults keep field order


@dataclass(frozen=True)
class ContextSync(_RunInfo):
    """Context of a plain (non-async) handler: `ctx.step.run(...)`."""

    step: StepSync = None  # type: ignore[assignment]
