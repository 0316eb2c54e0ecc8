"""Rule checks over what actually happened: spans of executing steps and admission times.

Each check is written from the rule itself (weir-semantics.md), not from Weir's code, so a
defect in Weir's gates cannot hide in the audit too.
"""

from collections import defaultdict
from collections.abc import Iterable

Span = tuple[str, float, float]  # key, start ms, end ms


def _edges(spans: Iterable[Span]) -> dict[str, list[tuple[float, int]]]:
    """Per key, every start (+1) and end (-1) in time order; an end frees before a start."""
    points: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for key, start, end in spans:
        points[key] += [(start, 1), (end, -1)]
    return {key: sorted(marks) for key, marks in points.items()}


def peaks(spans: Iterable[Span]) -> dict[str, int]:
    """Per key, the most spans open at the same instant."""
    worst: dict[str, int] = {}
    for key, marks in _edges(spans).items():
        open_now = worst[key] = 0
        for _, delta in marks:
            open_now += delta
            worst[key] = max(worst[key], open_now)
    return worst


def max_overlap(spans: Iterable[Span]) -> int:
    return max(peaks(spans).values(), default=0)


def overruns(spans: Iterable[Span], limit: int) -> int:
    """How many span starts found `limit` or more of their key already open."""
    count = 0
    for marks in _edges(spans).values():
        open_now = 0
        for _, delta in marks:
            count += delta > 0 and open_now >= limit
            open_now += delta
    return count


def gcra_replay(
    times_ms: Iterable[float], period_ms: float, limit: int, tolerance: int, slack_ms: float = 0
) -> list[bool]:
    """The GCRA's decision for each time, in the order given (T = period / limit,
    τ = tolerance × T): t conforms when TAT − t ≤ τ (+ slack), and then TAT = max(TAT, t) + T;
    a time that does not conform leaves TAT as it was."""
    interval = period_ms / limit
    tau = tolerance * interval + slack_ms
    tat = float("-inf")
    decisions = []
    for t in times_ms:
        conforms = tat - t <= tau + 1e-6
        if conforms:
            tat = max(tat, t) + interval
        decisions.append(conforms)
    return decisions


def gcra_excess(
    times_ms: Iterable[float], period_ms: float, limit: int, tolerance: int, slack_ms: float = 0
) -> int:
    """How many of these admissions the GCRA would not have made: the excess over the budget."""
    return gcra_replay(sorted(times_ms), period_ms, limit, tolerance, slack_ms).count(False)


# docs/semantics.md, Throttle: how late a start may come after its cell at no cost to the next
CLAIM_SLACK_MS = 100


def throttle_excess(
    times_ms: Iterable[float], period_ms: float, limit: int, burst: int, slack_ms: float = 0
) -> int:
    """How many of these real starts a throttle's rule would not have allowed, beside
    `window_peak` <= limit + burst per period (docs/semantics.md, Throttle): a real start
    comes some time after its GCRA slot, so at the moment runs start the GCRA holds with
    τ = burst × T + 100 ms. (Replaying real starts through τ = burst × T alone would charge
    each start's own lateness to the ones after it: that is not the rule.)"""
    return gcra_excess(times_ms, period_ms, limit, burst, CLAIM_SLACK_MS + slack_ms)


def gcra_overshoot(
    times_ms: Iterable[float], period_ms: float, limit: int, tolerance: int
) -> float:
    """The least slack (ms) under which every one of these admissions conforms: how far the
    worst of them came before the GCRA allowed it (0 when none did)."""
    interval = period_ms / limit
    tat, worst = float("-inf"), 0.0
    for t in sorted(times_ms):
        worst = max(worst, tat - t - tolerance * interval)
        tat = max(tat, t) + interval
    return worst


def window_peak(times_ms: Iterable[float], window_ms: float) -> int:
    """The most times within any half-open window [t, t + window_ms)."""
    ordered = sorted(times_ms)
    best = first = 0
    for last, t in enumerate(ordered):
        while t - ordered[first] >= window_ms:
            first += 1
        best = max(best, last - first + 1)
    return best
