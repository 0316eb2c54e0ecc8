"""Throttle wired into admission: exact start times in the queue, why a run waits, keys,
bursts across period boundaries, and a restart in the middle of a backlog."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from weir.platform.functions import Throttle

from tests.support.flow_harness import NOON, Harness, config, waiting, warnings


def model_starts(arrivals: list[int], period: int, limit: int, burst: int) -> list[int]:
    """The GCRA rule of docs/semantics.md in exact fractions: slot = max(t, TAT − τ)."""
    interval, tat = Fraction(period, limit), None
    starts = []
    for t in arrivals:
        now = Fraction(t)
        current = now if tat is None else max(tat, now)
        starts.append(math.ceil(max(now, current - burst * interval)))
        tat = current + interval
    return starts


def after(*offsets: int) -> list[int]:
    return [NOON + offset for offset in offsets]


def throttled(
    database_url: str, limit: int, period: int, burst: int = 0, key: str | None = None
) -> Harness:
    return Harness(database_url, config(throttle=Throttle(limit, period, burst, key)))


def test_a_burst_from_idle_starts_one_then_one_per_interval(database_url: str) -> None:
    h = throttled(database_url, limit=3, period=3000)
    h.burst(NOON, [{"n": i} for i in range(5)])
    assert h.start_times() == [NOON, NOON + 1000, NOON + 2000, NOON + 3000, NOON + 4000]


def test_burst_lets_extra_runs_start_at_once(database_url: str) -> None:
    h = throttled(database_url, limit=2, period=2000, burst=2)
    h.burst(NOON, [{} for _ in range(5)])
    assert h.start_times() == [NOON, NOON, NOON, NOON + 1000, NOON + 2000]


def test_a_waiting_run_says_which_gate_holds_it_and_until_when(database_url: str) -> None:
    h = throttled(database_url, limit=1, period=10_000, key="event.data.user")
    h.burst(NOON, [{"user": "ann"}, {"user": "ann"}])
    first, second = h.runs()
    assert waiting(first) is None
    reason = waiting(second)
    assert reason is not None
    assert reason["gate"] == "throttle"
    assert reason["key"] == "ann"
    assert reason["until_ms"] == NOON + 10_000
    assert "12:00:10.000" in reason["words"]


def test_runs_are_claimed_exactly_at_their_slots(database_url: str) -> None:
    h = throttled(database_url, limit=4, period=1000)
    h.burst(NOON, [{} for _ in range(6)])
    h.advance(NOON + 2000)
    assert [at for at, _ in h.started] == [
        NOON,
        NOON + 250,
        NOON + 500,
        NOON + 750,
        NOON + 1000,
        NOON + 1250,
    ]
    assert [run_id for _, run_id in h.started] == [r.id for r in h.runs()]


def test_a_period_that_does_not_divide_rounds_each_start_up_without_drift(
    database_url: str,
) -> None:
    h = throttled(database_url, limit=3, period=1000)
    h.burst(NOON, [{} for _ in range(7)])
    assert h.start_times() == [
        NOON,
        NOON + 334,
        NOON + 667,
        NOON + 1000,
        NOON + 1334,
        NOON + 1667,
        NOON + 2000,
    ]


@pytest.mark.parametrize(
    "offsets",
    [
        [900, 950, 999, 1000, 1001, 1100],  # straddles a period boundary at +1000
        [0, 0, 0, 1999, 2000, 2001, 2001, 4500],
        [10, 400, 800, 1200, 1600, 2000, 2400],  # exactly at the sustained rate
    ],
)
def test_bursts_straddling_boundaries_match_the_gcra_model(
    database_url: str, offsets: list[int]
) -> None:
    h = throttled(database_url, limit=2, period=1000, burst=1)
    for offset in offsets:
        h.send(NOON + offset)
    arrivals = [NOON + o for o in offsets]
    assert h.start_times() == model_starts(arrivals, period=1000, limit=2, burst=1)


def test_keys_interleave_without_sharing_a_meter(database_url: str) -> None:
    h = throttled(database_url, limit=1, period=1000, key="event.data.k")
    for i, k in enumerate(["a", "b", "a", "b", "a", "c"]):
        h.send(NOON + i, {"k": k})
    # a at +0, +2, +4; b at +1, +3; c at +5: each key runs its own meter
    assert h.start_times() == [NOON, NOON + 1, NOON + 1000, NOON + 1001, NOON + 2000, NOON + 5]


def test_a_restart_mid_backlog_continues_the_same_meter(database_url: str) -> None:
    h = throttled(database_url, limit=2, period=2000)
    h.burst(NOON, [{}, {}, {}])
    h.restart()
    h.send(NOON + 500)
    assert h.start_times() == [NOON, NOON + 1000, NOON + 2000, NOON + 3000]


def test_a_failing_key_uses_the_empty_key_with_a_warning(database_url: str) -> None:
    h = throttled(database_url, limit=1, period=1000, key="event.data.missing.deep")
    h.burst(NOON, [{}, {"missing": {"deep": "x"}}, {}])
    first, keyed, _second = h.runs()
    assert any("throttle" in w and "empty key" in w for w in warnings(first))
    assert warnings(keyed) == []
    assert h.start_times() == [NOON, NOON, NOON + 1000]  # the two failures share one bucket
    assert "throttle" in h.runs()[0].keys


def most_in_any_window(starts: list[int], period: int) -> int:
    return max(sum(1 for t in starts if s <= t < s + period) for s in starts)


def test_a_stalled_scheduler_starts_the_backlog_at_the_throttle_rate_in_order(
    database_url: str,
) -> None:
    h = throttled(database_url, limit=10, period=1000)
    h.burst(NOON, [{"n": i} for i in range(30)])  # slots NOON … NOON + 2900
    h.stall_until(NOON + 5000)  # every slot has passed: the claim must not start them all
    # the first, and the next slot that the claim's 100 ms of slack holds
    assert [at for at, _ in h.started] == [NOON + 5000, NOON + 5000]
    h.advance(NOON + 10_000)
    starts = [at for at, _ in h.started]
    assert len(starts) == 30
    assert [run_id for _, run_id in h.started] == [r.id for r in h.runs()]  # arrival order
    assert most_in_any_window(starts, 1000) == 10
    assert max(starts.count(t) for t in starts) == 2  # spread: never more than slack holds
    assert starts[-1] < NOON + 5000 + 3000  # at the throttle's rate, not below it


def test_a_start_deferred_at_claim_says_until_when(database_url: str) -> None:
    h = throttled(database_url, limit=2, period=2000, key="event.data.user")
    h.burst(NOON, [{"user": "ann"} for _ in range(3)])
    h.stall_until(NOON + 7000)
    reason = waiting(h.runs()[2])
    assert reason is not None
    # the second starts 100 ms before its cell (the claim's slack): at 7900, the third at 8900
    assert (reason["gate"], reason["key"], reason["until_ms"]) == ("throttle", "ann", NOON + 8900)
    assert "12:00:08.900" in reason["words"]


def test_an_event_arriving_during_a_catch_up_waits_behind_the_backlog(database_url: str) -> None:
    h = throttled(database_url, limit=10, period=1000)
    h.burst(NOON, [{} for _ in range(20)])
    h.stall_until(NOON + 5000)
    h.send(NOON + 5050)  # its own reserved slot is now, but 18 starts wait before it
    h.advance(NOON + 10_000)
    starts = [at for at, _ in h.started]
    assert len(starts) == 21
    assert [run_id for _, run_id in h.started] == [r.id for r in h.runs()]
    assert most_in_any_window(starts, 1000) == 10


def test_a_start_claimed_late_costs_the_next_starts_nothing(database_url: str) -> None:
    h = throttled(database_url, limit=10, period=1000)
    h.burst(NOON, [{} for _ in range(4)])  # slots +0, +100, +200, +300
    h.stall_until(NOON)
    h.stall_until(NOON + 130)  # the second start is 30 ms late …
    h.advance(NOON + 1000)  # … and the third still goes at its own slot
    assert [at for at, _ in h.started] == [NOON, NOON + 130, NOON + 200, NOON + 300]
