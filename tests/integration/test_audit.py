"""The audits themselves: they pass the schedules the rules allow and count what they forbid."""

from tests.integration.audit import (
    gcra_excess,
    gcra_overshoot,
    gcra_replay,
    max_overlap,
    overruns,
    throttle_excess,
    window_peak,
)


def test_an_exact_throttle_schedule_conforms() -> None:
    # 2 per 1 s, burst 1: two at once from idle, then one every 500 ms
    starts = [0, 0, 500, 1000, 1500, 2000]
    assert gcra_excess(starts, 1000, 2, 1) == 0
    assert gcra_overshoot(starts, 1000, 2, 1) == 0
    assert window_peak(starts, 1000) == 3


def test_starts_released_together_after_a_restart_are_counted() -> None:
    starts = [0, 0, 2600, 2600, 2600, 2600, 3000]  # slots 500..2500 passed while down
    assert gcra_excess(starts, 1000, 2, 1) == 3  # the third and fourth at 2600, and 3000
    assert gcra_overshoot(starts, 1000, 2, 1) == 1100
    assert window_peak(starts, 1000) == 5


def test_the_throttle_rule_forgives_late_starts_but_not_a_faster_rate() -> None:
    # 2 per 1 s, burst 1 (T = 500 ms): slots 0, 0, 500, 1000, ...; each start a little late
    late = [30, 40, 510, 1030, 1620, 2040, 2540]
    assert gcra_excess(late, 1000, 2, 1) == 1  # the 40 ms start is charged to the next one
    assert throttle_excess(late, 1000, 2, 1) == 0
    assert window_peak(late, 1000) == 3
    # after a restart three at once, then three every second: the period windows hold, but
    # over longer spans that is three per second where the throttle allows two
    faster = [0, 0, 0, 1000, 1000, 1000, 2000, 2000, 2000, 3000, 3000, 3000]
    assert window_peak(faster, 1000) == 3
    assert throttle_excess(faster, 1000, 2, 1) == 4


def test_slack_forgives_jitter_but_not_a_burst() -> None:
    jittered = [120, 120, 500, 1000, 1500]  # the first two calls arrived 120 ms late
    assert gcra_excess(jittered, 1000, 2, 1) == 1
    assert gcra_excess(jittered, 1000, 2, 1, slack_ms=200) == 0
    assert gcra_excess([0, 0, 0, 0], 1000, 2, 1, slack_ms=200) == 2


def test_rate_limit_replay_skips_what_the_budget_does_not_hold() -> None:
    # 4 per 1 s: four at once from idle, then one every 250 ms
    assert gcra_replay([0] * 5 + [250, 260], 1000, 4, 3) == [True] * 4 + [False, True, False]


def test_concurrency_is_counted_per_key_at_every_instant() -> None:
    spans = [("a", 0, 10), ("a", 5, 15), ("a", 10, 20), ("b", 0, 30), ("a", 12, 14)]
    assert max_overlap(spans) == 3  # at 12: the spans from 5, 10 and 12
    assert overruns(spans, 2) == 1  # an end at 10 frees its slot before the start at 10
