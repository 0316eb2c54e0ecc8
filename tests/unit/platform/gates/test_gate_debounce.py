"""Debounce: windows, restarts, timeout caps and which event the run receives."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from weir.platform.gates import debounce
from weir.platform.gates.debounce import DebounceConfig, DebounceEvent, DebounceFire, DebounceState
from weir.platform.gates.decisions import MS_PER_DAY, from_json, to_json

NOON = 1_767_268_800_000


@dataclass
class Debouncer:
    """A fake store + timer queue: events arrive at `now`, timers run when the clock passes."""

    config: DebounceConfig
    now_ms: int = 0
    seq: int = 0
    state: DebounceState | None = None
    timers: list[tuple[int, int]] = field(default_factory=list)  # (at, window_seq)
    fired: list[tuple[int, str]] = field(default_factory=list)  # (at, event id)

    def event(self, at: int, event_id: str, ts: int | None = None) -> None:
        self.advance(at)
        self.seq += 1
        incoming = DebounceEvent(event_id, at if ts is None else ts, self.seq)
        decision = debounce.on_event(self.config, self.state, incoming, at)
        if decision.fire is not None:
            self.fired.append((at, decision.fire.event_id))
        if decision.opened:
            self.timers.append((decision.state.fire_at_ms, decision.state.window_seq))
        self.state = decision.state

    def advance(self, to: int) -> None:
        while self.timers and min(self.timers)[0] <= to:
            at, window = min(self.timers)
            self.timers.remove((at, window))
            self.now_ms = at
            self._timer(window)
        self.now_ms = to

    def _timer(self, window: int) -> None:
        result = debounce.on_timer(self.state, window, self.now_ms)
        self.state = result.state
        if result.fire is not None:
            self.fired.append((self.now_ms, result.fire.event_id))
        if result.retry_at_ms is not None:
            self.timers.append((result.retry_at_ms, window))


def test_single_event_fires_period_later() -> None:
    d = Debouncer(DebounceConfig(period_ms=5_000))
    d.event(1_000, "e1")
    d.advance(60_000)
    assert d.fired == [(6_000, "e1")]
    assert d.state is None


def test_each_event_restarts_the_window_and_the_last_one_runs() -> None:
    d = Debouncer(DebounceConfig(period_ms=5_000))
    for at, eid in [(0, "e1"), (3_000, "e2"), (7_999, "e3"), (12_000, "e4")]:
        d.event(at, eid)
    d.advance(60_000)
    assert d.fired == [(17_000, "e4")]


def test_timeout_caps_the_window_from_its_first_event() -> None:
    d = Debouncer(DebounceConfig(period_ms=5_000, timeout_ms=12_000))
    for at in range(0, 30_000, 1_000):  # a steady stream would otherwise never fire
        d.event(at, f"e{at}")
    d.advance(60_000)
    # Windows open at 0, 12_000 and 24_000; each is cut off 12 s after it opened.
    assert d.fired == [(12_000, "e11000"), (24_000, "e23000"), (34_000, "e29000")]


def test_timeout_shorter_than_period_fires_at_timeout() -> None:
    d = Debouncer(DebounceConfig(period_ms=10_000, timeout_ms=3_000))
    d.event(0, "e1")
    d.advance(60_000)
    assert d.fired == [(3_000, "e1")]


def test_latest_ts_wins_even_if_it_arrived_earlier() -> None:
    d = Debouncer(DebounceConfig(period_ms=5_000))
    d.event(0, "new", ts=NOON + 500)
    d.event(1_000, "old", ts=NOON)  # older ts: restarts the window but is not delivered
    d.advance(60_000)
    assert d.fired == [(6_000, "new")]


def test_equal_ts_goes_to_the_later_arrival() -> None:
    d = Debouncer(DebounceConfig(period_ms=5_000))
    d.event(0, "first", ts=NOON)
    d.event(100, "second", ts=NOON)
    d.advance(60_000)
    assert d.fired == [(5_100, "second")]


def test_event_after_the_run_is_scheduled_opens_a_new_window() -> None:
    d = Debouncer(DebounceConfig(period_ms=5_000))
    d.event(0, "e1")
    d.event(5_000, "e2")  # the timer ran at 5_000 first
    d.advance(60_000)
    assert d.fired == [(5_000, "e1"), (10_000, "e2")]


def test_event_finding_a_due_window_whose_timer_lags_fires_it_first() -> None:
    config = DebounceConfig(period_ms=5_000)
    opened = debounce.on_event(config, None, DebounceEvent("e1", 0, 1), 0)
    late = debounce.on_event(config, opened.state, DebounceEvent("e2", 7_000, 2), 7_000)
    assert late.fire == DebounceFire(window_seq=1, event_id="e1")
    assert late.opened
    assert late.state.window_seq == 2
    assert late.state.fire_at_ms == 12_000
    stale = debounce.on_timer(late.state, 1, 7_001)  # the old window's timer, finally
    assert stale.fire is None
    assert stale.state == late.state
    assert stale.retry_at_ms is None


def test_timer_of_a_restarted_window_asks_to_retry_at_the_new_time() -> None:
    config = DebounceConfig(period_ms=5_000)
    first = debounce.on_event(config, None, DebounceEvent("e1", 0, 1), 0).state
    second = debounce.on_event(config, first, DebounceEvent("e2", 2_000, 2), 2_000).state
    early = debounce.on_timer(second, 1, 5_000)
    assert early.fire is None
    assert early.retry_at_ms == 7_000
    assert early.state == second
    due = debounce.on_timer(second, 1, 7_000)
    assert due.fire == DebounceFire(1, "e2")
    assert due.state is None


def test_interleaved_keys_keep_separate_windows() -> None:
    a, b = Debouncer(DebounceConfig(period_ms=3_000)), Debouncer(DebounceConfig(period_ms=3_000))
    for at, key in [(0, a), (1_000, b), (2_000, a), (4_500, b), (4_900, a)]:
        key.event(at, f"{'a' if key is a else 'b'}{at}")
    a.advance(60_000)
    b.advance(60_000)
    assert a.fired == [(7_900, "a4900")]
    assert b.fired == [(4_000, "b1000"), (7_500, "b4500")]


def test_state_reloaded_mid_window_gives_the_same_outcome() -> None:
    config = DebounceConfig(period_ms=5_000, timeout_ms=9_000)
    plan = [(0, "e1"), (2_000, "e2"), (4_000, "e3"), (6_000, "e4"), (20_000, "e5")]
    whole = Debouncer(config)
    for at, eid in plan:
        whole.event(at, eid)
    whole.advance(60_000)

    split = Debouncer(config)
    for at, eid in plan:
        if split.state is not None:
            raw = json.dumps(to_json(split.state))
            split.state = from_json(DebounceState, json.loads(raw))
        split.event(at, eid)
    split.advance(60_000)
    assert split.fired == whole.fired == [(9_000, "e4"), (25_000, "e5")]


def test_wait_reason_shows_when_the_run_is_due() -> None:
    state = debounce.on_event(
        DebounceConfig(period_ms=3_300), None, DebounceEvent("e", NOON, 1), NOON
    ).state
    reason = debounce.wait_reason(state, "acct-9")
    assert reason.until_ms == NOON + 3_300
    assert reason.words == "debounce: collecting events until 12:00:03.300 (key 'acct-9')"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"period_ms": 999}, r"debounce.period \(ms\) = 999 .*allowed: 1000..604800000"),
        ({"period_ms": 7 * MS_PER_DAY + 1}, r"debounce.period \(ms\) = 604800001"),
        ({"period_ms": 1_000, "timeout_ms": 10}, r"debounce.timeout \(ms\) = 10 .*>= 1000"),
    ],
)
def test_bad_bounds_raise(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DebounceConfig(**kwargs)
