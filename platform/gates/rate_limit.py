"""Rate limit: GCRA on events at admission; an event over the budget is skipped.

T = period / limit and τ = (limit − 1) × T, so from idle `limit` runs may start back to back
and the sustained rate is exactly `limit` per `period`.
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates import gcra
from weir.platform.gates.decisions import (
    MS_PER_H,
    MS_PER_S,
    SkipReason,
    clock_text,
    key_text,
    require_range,
)

MAX_PERIOD_MS = 24 * MS_PER_H


@dataclass(frozen=True, slots=True)
class RateLimitConfig:
    """A rate limit: declared once, as the function config holds it (`FunctionConfig.rate_limit`)
    and as this gate takes it."""

    limit: int
    period_ms: int
    key: str | None = None  # a CEL expression over `event`: a budget per value

    def __post_init__(self) -> None:
        require_range("rate_limit.period (ms)", self.period_ms, MS_PER_S, MAX_PERIOD_MS)
        require_range("rate_limit.limit", self.limit, 1)

    @property
    def meter(self) -> gcra.Meter:
        return gcra.Meter(self.period_ms, self.limit, self.limit - 1)


@record(slots=True)
class RateLimitDecision:
    """Admitted events carry the advanced state; skipped ones a reason and the same state."""

    admitted: bool
    state: gcra.GcraState
    skip: SkipReason | None


def _skip_reason(config: RateLimitConfig, key: str, next_ms: int) -> SkipReason:
    words = (
        f"{GateName.RATE_LIMIT}: over {config.limit} per {config.period_ms} ms{key_text(key)}; "
        f"the next event could be admitted at {clock_text(next_ms)}"
    )
    return SkipReason(gate=GateName.RATE_LIMIT, key=key, words=words, retry_at_ms=next_ms)


def admit_event(
    config: RateLimitConfig, state: gcra.GcraState | None, now_ms: int, key: str = ""
) -> RateLimitDecision:
    """Admit the event when TAT − now ≤ τ (TAT then moves on by T), else skip it."""
    result = gcra.check(config.meter, state, now_ms)
    if result.admitted:
        return RateLimitDecision(True, result.state, None)
    return RateLimitDecision(False, result.state, _skip_reason(config, key, result.at_ms))
