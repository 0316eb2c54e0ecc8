"""Rate limit and idempotency wired into admission: skips recorded on the event, budgets per
key, bursts across period boundaries, restarts, and idempotency replacing the rate limit."""

from __future__ import annotations

from fractions import Fraction

import pytest
from weir.platform.functions import RateLimit

from tests.support.flow_harness import NOON, Harness, config, event_ids, warnings

DAY = 24 * 3600 * 1000


def model_admits(arrivals: list[int], period: int, limit: int) -> list[bool]:
    """GCRA on events: admitted when TAT − t ≤ (limit − 1)·T, then TAT = max(TAT, t) + T."""
    interval, tat = Fraction(period, limit), None
    admitted = []
    for t in arrivals:
        current = Fraction(t) if tat is None else max(tat, Fraction(t))
        ok = current - t <= (limit - 1) * interval
        admitted.append(ok)
        tat = current + interval if ok else tat
    return admitted


def limited(
    database_url: str, limit: int, period: int, key: str | None = None, **more: object
) -> Harness:
    options = {"rate_limit": RateLimit(limit, period, key), **more}
    return Harness(database_url, config(**options))  # type: ignore[arg-type]


def started_events(h: Harness) -> list[str]:
    return [event_ids(run)[0] for run in h.runs()]


def test_from_idle_limit_runs_start_back_to_back_and_the_rest_are_skipped(
    database_url: str,
) -> None:
    h = limited(database_url, limit=3, period=3000)
    sent = h.burst(NOON, [{"n": i} for i in range(5)])
    assert started_events(h) == sent[:3]
    skipped = h.outcomes("rate_limited")
    assert [row.event_id for row in skipped] == sent[3:]
    assert all(row.function_id == "fn" and row.run_id is None for row in skipped)
    assert "rate_limit: over 3 per 3000 ms" in skipped[0].detail
    assert "12:00:01.000" in skipped[0].detail  # when the next event could be admitted


def test_the_sustained_rate_is_limit_per_period(database_url: str) -> None:
    h = limited(database_url, limit=2, period=1000)
    arrivals = [NOON + 100 * i for i in range(40)]  # 10 per second for 4 s
    for at in arrivals:
        h.send(at)
    assert len(h.runs()) == 2 + 2 * 4 - 1  # 2 at once, then one per 500 ms after the first
    assert len(h.runs()) + len(h.outcomes("rate_limited")) == 40


@pytest.mark.parametrize(
    "offsets",
    [
        [998, 999, 1000, 1001, 1999, 2000, 2001],
        [0, 0, 0, 0, 333, 334, 666, 667, 1000],
        [500, 1499, 1500, 1501, 2500, 2500, 2501],
    ],
)
def test_bursts_straddling_boundaries_match_the_model(
    database_url: str, offsets: list[int]
) -> None:
    h = limited(database_url, limit=3, period=1000)
    sent = [h.send(NOON + o) for o in offsets]
    admitted = model_admits([NOON + o for o in offsets], period=1000, limit=3)
    assert started_events(h) == [e for e, ok in zip(sent, admitted, strict=True) if ok]
    assert [r.event_id for r in h.outcomes("rate_limited")] == [
        e for e, ok in zip(sent, admitted, strict=True) if not ok
    ]


def test_keys_interleave_with_separate_budgets(database_url: str) -> None:
    h = limited(database_url, limit=1, period=60_000, key="event.data.user")
    sent = [h.send(NOON + i, {"user": u}) for i, u in enumerate("abab")]
    assert started_events(h) == sent[:2]
    assert [r.event_id for r in h.outcomes("rate_limited")] == sent[2:]
    assert "(key 'a')" in h.outcomes("rate_limited")[0].detail


def test_a_restart_mid_window_keeps_the_spent_budget(database_url: str) -> None:
    h = limited(database_url, limit=2, period=10_000)
    h.burst(NOON, [{}, {}])
    h.restart()
    late = h.send(NOON + 4_000)  # T = 5 s: the next cell is at +5 s
    ok = h.send(NOON + 5_000)
    assert [r.event_id for r in h.outcomes("rate_limited")] == [late]
    assert started_events(h)[-1] == ok


def test_a_failing_key_shares_the_empty_key_budget_and_warns(database_url: str) -> None:
    h = limited(database_url, limit=1, period=60_000, key="event.data.user.id")
    h.send(NOON, {})
    h.send(NOON + 1, {"other": 1})
    (run,) = h.runs()
    assert any(w.startswith("rate_limit: key expression") for w in warnings(run))
    assert len(h.outcomes("rate_limited")) == 1


def test_idempotency_starts_one_run_per_key_per_day(database_url: str) -> None:
    h = Harness(database_url, config(idempotency="event.data.order"))
    first = h.send(NOON, {"order": 7})
    again = h.send(NOON + 1000, {"order": 7})
    other = h.send(NOON + 2000, {"order": 8})
    (holder, second) = h.runs()
    assert event_ids(holder) == [first] and event_ids(second) == [other]
    (skip,) = h.outcomes("idempotent")
    assert skip.event_id == again and skip.run_id == holder.id
    assert holder.id in skip.detail
    next_day = h.send(NOON + DAY, {"order": 7})
    assert event_ids(h.runs()[-1]) == [next_day]


def test_idempotency_replaces_any_rate_limit(database_url: str) -> None:
    h = limited(database_url, limit=1, period=60_000, idempotency="event.data.order")
    h.burst(NOON, [{"order": 1}, {"order": 2}, {"order": 1}])
    assert len(h.runs()) == 2
    assert h.outcomes("rate_limited") == []
    assert len(h.outcomes("idempotent")) == 1


def test_a_run_refused_later_does_not_take_the_idempotency_key(database_url: str) -> None:
    # A duplicate event id is refused after the gates: the key must stay free.
    h = Harness(database_url, config(idempotency="event.data.order"))
    h.send(NOON, {"order": 1}, user_id="same")
    h.send(NOON + 1, {"order": 2}, user_id="same")
    fresh = h.send(NOON + 2, {"order": 2})
    assert event_ids(h.runs()[-1]) == [fresh]
    assert [r.outcome for r in h.outcomes()] == ["duplicate_event_id"]


def test_a_duplicate_event_id_spends_no_rate_budget(database_url: str) -> None:
    h = limited(database_url, limit=2, period=60_000)
    first = h.send(NOON, {"n": 1}, user_id="same")
    duplicate = h.send(NOON + 1, {"n": 2}, user_id="same")
    other = h.send(NOON + 2, {"n": 3}, user_id="other")
    assert started_events(h) == [first, other]
    dup = h.outcomes("duplicate_event_id")
    assert [row.event_id for row in dup] == [duplicate]
    assert h.outcomes("rate_limited") == []
