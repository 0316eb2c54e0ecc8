"""Retries: how many attempts a step gets and when the next one runs.

Backoff follows Inngest's table by attempt index plus a uniform 0–30 s jitter from an
injected RNG (so tests and simulations are reproducible). A `Retry-After` from the app
replaces the backoff, clamped to [now + 1 s, now + 24 h].
"""

from __future__ import annotations

from typing import Protocol

from weir.platform.foundation.record_type import record
from weir.platform.gates.decisions import MS_PER_H, MS_PER_MIN, MS_PER_S, require_range

DEFAULT_RETRIES = 4
MAX_RETRIES = 20
MAX_JITTER_MS = 30 * MS_PER_S
MIN_RETRY_AFTER_MS = MS_PER_S
MAX_RETRY_AFTER_MS = 24 * MS_PER_H
BACKOFF_MS: tuple[int, ...] = (
    15 * MS_PER_S,
    30 * MS_PER_S,
    1 * MS_PER_MIN,
    2 * MS_PER_MIN,
    5 * MS_PER_MIN,
    10 * MS_PER_MIN,
    20 * MS_PER_MIN,
    40 * MS_PER_MIN,
    1 * MS_PER_H,
    2 * MS_PER_H,  # and every later attempt
)


class Rng(Protocol):
    """What the jitter needs; `random.Random` satisfies it."""

    def randint(self, a: int, b: int) -> int: ...


@record(slots=True)
class RetryDecision:
    """`retry`: run attempt `attempt + 1` at `at_ms`; otherwise the failure is final."""

    retry: bool
    at_ms: int | None


def retries_allowed(retries: int | None) -> int:
    """Configured retries: default 4; above 20 is capped (as Inngest does), negative rejected."""
    if retries is None:
        return DEFAULT_RETRIES
    return min(require_range("retries", retries, 0), MAX_RETRIES)


def max_attempts(retries: int | None) -> int:
    return retries_allowed(retries) + 1


def backoff_ms(attempt: int) -> int:
    """The base delay after failed attempt index `attempt` (0 = the first try)."""
    require_range("attempt", attempt, 0)
    return BACKOFF_MS[min(attempt, len(BACKOFF_MS) - 1)]


def jitter_ms(rng: Rng) -> int:
    return rng.randint(0, MAX_JITTER_MS)


def clamp_retry_after(now_ms: int, retry_at_ms: int) -> int:
    return max(now_ms + MIN_RETRY_AFTER_MS, min(retry_at_ms, now_ms + MAX_RETRY_AFTER_MS))


def next_attempt_at(attempt: int, now_ms: int, rng: Rng, retry_after_ms: int | None = None) -> int:
    """When to run the attempt after failed attempt `attempt`; `retry_after_ms` is absolute."""
    if retry_after_ms is not None:
        return clamp_retry_after(now_ms, retry_after_ms)
    return now_ms + backoff_ms(attempt) + jitter_ms(rng)


def decide(
    attempt: int,
    retries: int | None,
    now_ms: int,
    rng: Rng,
    retry_after_ms: int | None = None,
    retriable: bool = True,
) -> RetryDecision:
    """After failed attempt index `attempt`: retry while attempts remain and the error allows."""
    if not retriable or attempt + 1 >= max_attempts(retries):
        return RetryDecision(False, None)
    return RetryDecision(True, next_attempt_at(attempt, now_ms, rng, retry_after_ms))
