"""GCRA meter: exact integer arithmetic against a Fraction reference model."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from weir.platform.gates import gcra
from weir.platform.gates.decisions import from_json, to_json


def ref_check(
    tat: Fraction | None, now: int, period: int, limit: int, k: int
) -> tuple[bool, Fraction, int]:
    """Textbook GCRA over exact rationals: admitted?, new TAT, earliest admission (ms, ceil)."""
    t = Fraction(period, limit)
    base = Fraction(now) if tat is None else max(tat, Fraction(now))
    if base - now <= k * t:
        return True, base + t, now
    return False, base, math.ceil(base - k * t)


arrivals = st.lists(st.integers(min_value=0, max_value=5_000), min_size=1, max_size=60).map(sorted)


@given(
    times=arrivals,
    period=st.integers(min_value=1, max_value=7_000),
    limit=st.integers(min_value=1, max_value=50),
    k=st.integers(min_value=0, max_value=5),
)
def test_check_matches_exact_rational_model(
    times: list[int], period: int, limit: int, k: int
) -> None:
    meter = gcra.Meter(period, limit, k)
    state: gcra.GcraState | None = None
    ref_tat: Fraction | None = None
    for now in times:
        got = gcra.check(meter, state, now)
        ok, ref_tat_next, at = ref_check(ref_tat, now, period, limit, k)
        assert (got.admitted, got.at_ms) == (ok, at)
        assert Fraction(got.state.tat, got.state.scale) == ref_tat_next
        state, ref_tat = got.state, ref_tat_next


@given(
    times=arrivals,
    period=st.integers(min_value=1, max_value=7_000),
    limit=st.integers(min_value=1, max_value=50),
    k=st.integers(min_value=0, max_value=5),
)
def test_never_admits_more_than_one_plus_tolerance_plus_elapsed_over_t(
    times: list[int], period: int, limit: int, k: int
) -> None:
    meter = gcra.Meter(period, limit, k)
    state: gcra.GcraState | None = None
    admitted: list[int] = []
    for now in times:
        result = gcra.check(meter, state, now)
        state = result.state
        if result.admitted:
            admitted.append(now)
    # Every window [admitted[i], admitted[j]] holds j-i+1 cells: n ≤ 1 + k + W/T, in integers.
    for i in range(len(admitted)):
        for j in range(i, len(admitted)):
            n, width = j - i + 1, admitted[j] - admitted[i]
            assert (n - 1 - k) * period <= width * limit


@given(
    times=arrivals,
    period=st.integers(min_value=1, max_value=7_000),
    limit=st.integers(min_value=1, max_value=50),
    k=st.integers(min_value=0, max_value=5),
)
def test_reserved_slots_are_exact_ceilings_and_never_before_arrival(
    times: list[int], period: int, limit: int, k: int
) -> None:
    meter = gcra.Meter(period, limit, k)
    state: gcra.GcraState | None = None
    ref = Fraction(0)
    t = Fraction(period, limit)
    for n, now in enumerate(times):
        slot = gcra.reserve(meter, state, now)
        base = Fraction(now) if n == 0 else max(ref, Fraction(now))
        expected = max(Fraction(now), base - k * t)
        assert slot.start_ms == math.ceil(expected) >= now
        assert slot.waited == (slot.start_ms > now)
        state, ref = slot.state, base + t


def test_thousand_reservations_do_not_drift() -> None:
    meter = gcra.Meter(1_000, 3, 0)
    state: gcra.GcraState | None = None
    starts = []
    for _ in range(1_000):
        slot = gcra.reserve(meter, state, 0)
        starts.append(slot.start_ms)
        state = slot.state
    assert starts == [math.ceil(Fraction(1_000 * n, 3)) for n in range(1_000)]
    assert starts[999] == 333_000
    assert state == gcra.GcraState(tat=1_000_000, scale=3)


def test_absent_or_past_tat_behaves_as_now() -> None:
    meter = gcra.Meter(1_000, 2, 0)
    fresh = gcra.check(meter, None, 10_000)
    stale = gcra.check(meter, gcra.GcraState(tat=2 * 5_000, scale=2), 10_000)
    assert fresh == stale
    assert fresh.state == gcra.GcraState(tat=2 * 10_000 + 1_000, scale=2)


def test_refusal_keeps_tat_and_names_earliest_admission_rounded_up() -> None:
    meter = gcra.Meter(1_000, 3, 0)
    first = gcra.check(meter, None, 0)
    second = gcra.check(meter, first.state, 100)
    assert not second.admitted
    assert second.at_ms == 334  # 333.33… rounded up, never early
    assert second.state == first.state
    assert not gcra.check(meter, first.state, 333).admitted
    assert gcra.check(meter, first.state, 334).admitted


def test_changed_limit_reexpresses_tat_rounding_up() -> None:
    old = gcra.check(gcra.Meter(1_000, 3, 0), None, 0).state  # TAT = 333.33 ms
    new_meter = gcra.Meter(1_000, 2, 0)
    assert gcra.stored_tat(new_meter, old) == 667  # 333.33 ms = 666.67 half-ms, up
    assert not gcra.check(new_meter, old, 333).admitted
    assert gcra.check(new_meter, old, 334).admitted


def test_room_counts_back_to_back_admissions() -> None:
    meter = gcra.Meter(1_000, 4, 2)
    state: gcra.GcraState | None = None
    assert gcra.room(meter, state, 0) == 3
    for expected_room in (2, 1, 0):
        state = gcra.check(meter, state, 0).state
        assert gcra.room(meter, state, 0) == expected_room
    assert gcra.room(meter, state, 250) == 1


def test_state_round_trips_through_json() -> None:
    state = gcra.check(gcra.Meter(1_000, 3, 1), None, 1_700_000_000_123).state
    loaded = from_json(gcra.GcraState, json.loads(json.dumps(to_json(state))))
    assert loaded == state


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0, 1, 0), "period_ms"),
        ((1_000, 0, 0), "limit"),
        ((1_000, 1, -1), "tolerance"),
        ((1_000, 1, 0, -1), "slack_ms"),
    ],
)
def test_meter_rejects_bad_values(args: tuple[int, ...], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        gcra.Meter(*args)


def test_slack_admits_a_cell_that_much_before_its_time_and_no_earlier() -> None:
    meter = gcra.Meter(1_000, 3, 0, slack_ms=100)  # T = 333.3 ms, τ = 100 ms
    first = gcra.check(meter, None, 0)
    assert gcra.check(meter, first.state, 233).at_ms == 234
    assert not gcra.check(meter, first.state, 233).admitted
    assert gcra.check(meter, first.state, 234).admitted
