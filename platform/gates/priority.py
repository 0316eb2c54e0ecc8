"""Priority: a run with priority p is queued as though created p seconds earlier."""

from __future__ import annotations

from weir.platform.gates.decisions import MS_PER_S

MIN_S = -600
MAX_S = 600


def clamp(value: object) -> int:
    """The evaluated `priority.run` as seconds in −600…600; non-integers and errors count as 0.

    `bool` is excluded explicitly: Python treats it as an int, CEL does not.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(MIN_S, min(MAX_S, int(value)))


def score_ms(created_ms: int, priority_s: int) -> int:
    """The queue order key: lower runs first. Takes an already-clamped priority."""
    return created_ms - priority_s * MS_PER_S


def run_score_ms(created_ms: int, value: object) -> int:
    """Clamp the raw expression result, then score."""
    return score_ms(created_ms, clamp(value))
