"""Throttle: exact start times on a fake clock, to the millisecond."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction

import pytest
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates import throttle
from weir.platform.gates.decisions import from_json, to_json
from weir.platform.gates.gcra import GcraState
from weir.platform.gates.rolling_window import WindowRule, decide

NOON = 1_767_268_800_000  # 2026-01-01T12:00:00Z


@dataclass
class Throttled:
    """A fake scheduler: a clock and one stored meter per key, slots assigned on arrival."""

    config: throttle.ThrottleConfig
    now_ms: int = NOON
    states: dict[str, GcraState] = field(default_factory=dict)

    def arrive(self, key: str = "") -> int:
        decision = throttle.schedule_start(self.config, self.states.get(key), self.now_ms, key)
        self.states[key] = decision.state
        return decision.start_ms - NOON


def test_from_idle_one_plus_burst_at_once_then_one_per_interval() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=6_000, limit=2, burst=1))
    assert [sim.arrive() for _ in range(6)] == [0, 0, 3_000, 6_000, 9_000, 12_000]


def test_limit_three_per_second_fractional_slots_round_up() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=1_000, limit=3))
    assert [sim.arrive() for _ in range(7)] == [0, 334, 667, 1_000, 1_334, 1_667, 2_000]


def test_hundred_per_second_for_twenty_seconds_is_exact() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=1_000, limit=100))
    starts = []
    for tick in range(20_000 // 5):  # three arrivals every 5 ms: 6x over the limit
        sim.now_ms = NOON + tick * 5
        starts += [sim.arrive() for _ in range(3)]
    assert starts == [10 * n for n in range(len(starts))]
    first_20s = [s for s in starts if s < 20_000]
    assert len(first_20s) == 2_000
    for second in range(20):
        assert sum(1 for s in first_20s if second * 1_000 <= s < (second + 1) * 1_000) == 100


def test_thousand_emissions_at_seven_per_three_seconds_do_not_drift() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=3_000, limit=7, burst=2))
    starts = [sim.arrive() for _ in range(1_000)]
    expected = [math.ceil(max(0, n - 2) * Fraction(3_000, 7)) for n in range(1_000)]
    assert starts == expected


def test_burst_straddling_a_period_boundary() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=1_000, limit=2, burst=1))
    sim.now_ms = NOON + 900
    first = [sim.arrive() for _ in range(3)]  # 2 at once, third at 900 + 500
    sim.now_ms = NOON + 1_100
    second = [sim.arrive() for _ in range(2)]  # queued behind the third, 500 ms apart
    assert first == [900, 900, 1_400]
    assert second == [1_900, 2_400]


def test_idle_meter_recovers_tolerance() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=1_000, limit=4, burst=1))
    assert [sim.arrive() for _ in range(3)] == [0, 0, 250]
    sim.now_ms = NOON + 10_000
    assert [sim.arrive() for _ in range(3)] == [10_000, 10_000, 10_250]


def test_keys_never_interact() -> None:
    sim = Throttled(throttle.ThrottleConfig(period_ms=1_000, limit=1))
    order = ["a", "b", "a", "b", "a", "c"]
    assert [sim.arrive(k) for k in order] == [0, 0, 1_000, 1_000, 2_000, 0]


def test_restart_with_reloaded_state_gives_same_starts() -> None:
    config = throttle.ThrottleConfig(period_ms=1_000, limit=3, burst=1)
    whole = Throttled(config)
    expected = [whole.arrive() for _ in range(10)]

    first = Throttled(config)
    starts = [first.arrive() for _ in range(4)]
    saved = json.dumps({k: to_json(v) for k, v in first.states.items()})
    again = Throttled(
        config, states={k: from_json(GcraState, v) for k, v in json.loads(saved).items()}
    )
    starts += [again.arrive() for _ in range(6)]
    assert starts == expected


def test_schedule_start_explains_the_wait() -> None:
    config = throttle.ThrottleConfig(period_ms=1_000, limit=3)
    at_once = throttle.schedule_start(config, None, NOON + 3_000, "acme")
    waiting = throttle.schedule_start(config, at_once.state, NOON + 3_000, "acme")
    assert at_once.admitted
    assert at_once.wait is None
    assert not waiting.admitted
    assert waiting.wait is not None
    assert waiting.wait.until_ms == waiting.start_ms == NOON + 3_334
    assert waiting.wait.words == "throttle: waiting for a slot until 12:00:03.334 (key 'acme')"


def test_claim_start_admits_a_start_from_the_slack_before_its_cell() -> None:
    """The claim's GCRA has CLAIM_SLACK_MS more tolerance than admission's: three per second,
    the second start's cell is at 333.3 ms, so it may start from 233.3 ms (rounded up)."""
    assert throttle.CLAIM_SLACK_MS == 100
    config = throttle.ThrottleConfig(period_ms=1_000, limit=3)
    meter = throttle.claim_start(config, None, NOON, (0, 0)).meter
    early = throttle.claim_start(config, meter, NOON + 1, (1, 1))
    assert not early.admitted
    assert early.start_ms == NOON + 234
    assert early.wait is not None
    assert early.wait.until_ms == NOON + 234
    assert not throttle.claim_start(config, meter, NOON + 233, (1, 1)).admitted
    on_time = throttle.claim_start(config, meter, NOON + 234, (1, 1))
    assert on_time.admitted
    assert on_time.wait is None
    assert on_time.start_ms == NOON + 234


def test_a_start_claimed_late_costs_the_next_ones_nothing() -> None:
    """Starts claimed 0 to 60 ms after their cells (100 ms apart), in a changing order of
    lateness: every one is admitted when claimed, none is pushed back."""
    config = throttle.ThrottleConfig(period_ms=1_000, limit=10)
    meter = None
    for i in range(200):
        late = (37 * i) % 61
        decision = throttle.claim_start(config, meter, NOON + 100 * i + late, (i, i))
        assert decision.admitted, i
        meter = decision.meter


def test_describe_names_the_start_pattern() -> None:
    exact = throttle.ThrottleConfig(period_ms=6_000, limit=2, burst=1)
    fractional = throttle.ThrottleConfig(period_ms=1_000, limit=3)
    assert throttle.describe(exact) == "2 at once from idle, then one every 3000 ms"
    assert throttle.describe(fractional) == "1 at once from idle, then one every 1000/3 ms"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"period_ms": 999, "limit": 1}, r"throttle.period \(ms\) = 999 .*allowed: >= 1000"),
        ({"period_ms": 1_000, "limit": 0}, r"throttle.limit = 0 .*allowed: >= 1"),
        ({"period_ms": 1_000, "limit": 1, "burst": -1}, r"throttle.burst = -1 .*allowed: >= 0"),
        ({"period_ms": 1_000.5, "limit": 1}, r"throttle.period \(ms\) must be an integer"),
    ],
)
def test_bad_bounds_raise_naming_value_and_range(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        throttle.ThrottleConfig(**kwargs)  # type: ignore[arg-type]


def claim_all(config: throttle.ThrottleConfig, now: int, count: int) -> list[int]:
    """`count` starts claimed at `now` in queue order: 0 for the one admitted, else the offset
    each is deferred to."""
    meter: throttle.StartMeter | None = None
    out = []
    for i in range(count):
        decision = throttle.claim_start(config, meter, now, (i, i))
        meter = decision.meter
        out.append(0 if decision.admitted else decision.start_ms - now)
    return out


def test_claim_start_admits_one_plus_burst_then_defers_the_rest_to_one_cell_each() -> None:
    # T = 250 ms, τ = 250 + 100 ms: two at once, then each 100 ms before its cell
    config = throttle.ThrottleConfig(period_ms=1_000, limit=4, burst=1)
    assert claim_all(config, NOON, 7) == [0, 0, 150, 400, 650, 900, 1150]


def test_a_start_already_in_the_line_goes_to_the_next_cell_not_to_its_end() -> None:
    config = throttle.ThrottleConfig(period_ms=1_000, limit=10)
    meter = None
    for i in range(5):  # two admitted (the slack holds one cell), three deferred
        meter = throttle.claim_start(config, meter, NOON, (i, i)).meter  # to +100, +200, +300
    late = throttle.claim_start(config, meter, NOON + 150, (2, 2))  # after its cell
    assert (late.admitted, late.start_ms) == (True, NOON + 150)
    early = throttle.claim_start(config, late.meter, NOON + 160, (3, 3))  # before its own
    assert (early.admitted, early.start_ms) == (False, NOON + 200)  # next cell, not the end
    newcomer = throttle.claim_start(config, early.meter, NOON + 160, (99, 99))
    assert newcomer.start_ms == NOON + 400  # behind the last deferred start
    assert newcomer.wait is not None and newcomer.wait.gate == "throttle"


def test_the_period_window_is_limit_plus_burst_per_period() -> None:
    assert throttle.ThrottleConfig(period_ms=60_000, limit=10, burst=2).window == (
        WindowRule(12, 60_000)
    )
    # a throttle's period may be longer than a declared rolling window may be
    assert throttle.ThrottleConfig(period_ms=7 * 86_400_000, limit=1).window.window_ms == (
        7 * 86_400_000
    )


def test_a_full_period_window_says_the_throttle_waits() -> None:
    rule = throttle.ThrottleConfig(period_ms=1_000, limit=1).window
    first = decide(rule, None, NOON, (0, 0), {}, "acme", None, GateName.THROTTLE)
    assert first.admitted
    second = decide(
        rule, first.ledger, NOON + 10, (1, 1), {0: NOON}, "acme", None, GateName.THROTTLE
    )
    assert (second.admitted, second.at_ms) == (False, NOON + 1_000)
    assert second.wait is not None and second.wait.gate == "throttle"
    assert second.wait.words.startswith("throttle: 1 per 1000 ms window is full until 12:00:01")


def test_a_start_meter_round_trips_through_json() -> None:
    config = throttle.ThrottleConfig(period_ms=1_000, limit=3)
    meter = throttle.claim_start(config, None, NOON, (0, 0)).meter
    assert from_json(throttle.StartMeter, json.loads(json.dumps(to_json(meter)))) == meter
