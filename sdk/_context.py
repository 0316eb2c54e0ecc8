"""What a handler receives: the triggering event(s), run identity and the step API."""

from __future__ import annotations

from dataclasses import dataclass, field

from weir.sdk._errors import NoFencingToken
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
    fences: dict[str, int] = field(default_factory=dict)  # Weir: this call's tokens, by scope
    # Logs only when the code runs for the first time, not while it replays memoized steps.
    logger: ReplayLogger = field(default_factory=lambda: ReplayLogger(lambda: False, {}))

    def fence(self, scope: str = "lane") -> int:
        """The fencing token of `scope` this call holds: it grows with every new holder of the
        scope, so a downstream system that keeps the highest token it has seen can refuse
        writes carrying a lower one (docs/semantics.md#fencing-tokens).

        `lane`: held by a run of a function with `lane=`, the same for its whole life.
        `concurrency0` (`concurrency1` for a second limit): held by one call, taken when it
        was claimed while that key's live capacity was 1; each call takes a new one, and a
        call claimed under a larger capacity (an operator raised it) holds none. Raises
        NoFencingToken (a LookupError) for a scope the call does not hold, saying why;
        `ctx.fences.get(scope)` is None instead."""
        token = self.fences.get(scope)
        if token is None:
            raise NoFencingToken(scope, list(self.fences), f"ctx.fences.get({scope!r})")
        return token


@dataclass(frozen=True)
class Context(_RunInfo):
    """Context of an async handler: `await ctx.step.run(...)`."""

    step: Step = None  # type: ignore[assignment]  # always given; defaults keep field order


@dataclass(frozen=True)
class ContextSync(_RunInfo):
    """Context of a plain (non-async) handler: `ctx.step.run(...)`."""

    step: StepSync = None  # type: ignore[assignment]
