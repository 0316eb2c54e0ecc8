"""Rate limit: which events are admitted and which skipped, to the millisecond."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from weir.platform.gates import rate_limit
from weir.platform.gates.decisions import MS_PER_H, from_json, to_json
from weir.platform.gates.gcra import GcraState

NOON = 1_767_268_800_000  # 2026-01-01T12:00:00Z


def run(config: rate_limit.RateLimitConfig, times: list[int]) -> list[bool]:
    state: GcraState | None = None
    admitted = []
    for t in times:
        decision = rate_limit.admit_event(config, state, NOON + t)
        state = decision.state
        admitted.append(decision.admitted)
    return admitted


def test_from_idle_limit_back_to_back_then_skipped() -> None:
    config = rate_limit.RateLimitConfig(period_ms=60_000, limit=5)
    assert run(config, [0] * 7) == [True] * 5 + [False] * 2


def test_limit_three_per_second_fractional_spacing() -> None:
    config = rate_limit.RateLimitConfig(period_ms=1_000, limit=3)
    times = [0, 0, 0, 0, 333, 334, 500, 667, 999, 1_000, 1_001]
    expected = [True, True, True, False, False, True, False, True, False, True, False]
    assert run(config, times) == expected


def test_skip_reason_names_function_gate_and_next_admission() -> None:
    config = rate_limit.RateLimitConfig(period_ms=1_000, limit=3)
    state: GcraState | None = None
    for _ in range(3):
        state = rate_limit.admit_event(config, state, NOON, "user-1").state
    skipped = rate_limit.admit_event(config, state, NOON + 10, "user-1")
    assert not skipped.admitted
    assert skipped.state == state
    assert skipped.skip is not None
    assert skipped.skip.gate == "rate_limit"
    assert skipped.skip.key == "user-1"
    assert skipped.skip.retry_at_ms == NOON + 334
    assert skipped.skip.words == (
        "rate_limit: over 3 per 1000 ms (key 'user-1'); "
        "the next event could be admitted at 12:00:00.334"
    )


def test_sustained_rate_is_exact_over_a_thousand_events() -> None:
    config = rate_limit.RateLimitConfig(period_ms=1_000, limit=3)
    times = list(range(0, 400_000, 100))  # 10 per second offered, 3 per second allowed
    admitted = [t for t, ok in zip(times, run(config, times), strict=True) if ok]
    # After the opening burst of 3, admissions land on the first offer at or after n·T.
    tail = admitted[3:]
    for n, t in enumerate(tail, start=3):
        assert t == math.ceil(Fraction(1_000 * (n - 2), 3) / 100) * 100
    assert len(admitted) == 3 + len(tail)
    assert len(admitted) == 1_202


def test_straddling_a_period_boundary_admits_only_what_the_meter_allows() -> None:
    config = rate_limit.RateLimitConfig(period_ms=10_000, limit=2)
    times = [9_900, 9_950, 9_990, 10_010, 14_899, 14_900, 19_900]
    assert run(config, times) == [True, True, False, False, False, True, True]


def test_keys_are_independent() -> None:
    config = rate_limit.RateLimitConfig(period_ms=1_000, limit=1)
    states: dict[str, GcraState] = {}
    results = []
    for key in ["a", "b", "a", "c", "b"]:
        decision = rate_limit.admit_event(config, states.get(key), NOON, key)
        states[key] = decision.state
        results.append(decision.admitted)
    assert results == [True, True, False, True, False]


def test_reloaded_state_gives_same_decisions() -> None:
    config = rate_limit.RateLimitConfig(period_ms=1_000, limit=3)
    times = [0, 0, 100, 200, 340, 400, 700, 1_200, 1_300]
    state: GcraState | None = None
    got = []
    for t in times:
        if state is not None:
            state = from_json(GcraState, json.loads(json.dumps(to_json(state))))
        decision = rate_limit.admit_event(config, state, NOON + t)
        state = decision.state
        got.append(decision.admitted)
    assert got == run(config, times)


@given(
    offsets=st.lists(st.integers(min_value=0, max_value=20_000), min_size=1, max_size=80),
    limit=st.integers(min_value=1, max_value=20),
    period_s=st.integers(min_value=1, max_value=10),
)
def test_never_more_than_limit_plus_elapsed_over_t(
    offsets: list[int], limit: int, period_s: int
) -> None:
    config = rate_limit.RateLimitConfig(period_ms=period_s * 1_000, limit=limit)
    times = sorted(offsets)
    admitted = [t for t, ok in zip(times, run(config, times), strict=True) if ok]
    for i in range(len(admitted)):
        for j in range(i, len(admitted)):
            n, width = j - i + 1, admitted[j] - admitted[i]
            assert (n - limit) * config.period_ms <= width * limit


@pytest.mark.parametrize(
    ("period_ms", "limit", "message"),
    [
        (999, 1, r"rate_limit.period \(ms\) = 999 .*allowed: 1000..86400000"),
        (24 * MS_PER_H + 1, 1, r"rate_limit.period \(ms\) = 86400001 .*allowed: 1000..86400000"),
        (1_000, 0, r"rate_limit.limit = 0 .*allowed: >= 1"),
    ],
)
def test_bad_bounds_raise(period_ms: int, limit: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rate_limit.RateLimitConfig(period_ms=period_ms, limit=limit)


def test_bounds_are_inclusive() -> None:
    rate_limit.RateLimitConfig(period_ms=1_000, limit=1)
    rate_limit.RateLimitConfig(period_ms=24 * MS_PER_H, limit=1)
