"""The flow-control playground (runtime/simulate.py) tells what the platform really does.

Each sequence is played twice: by the simulator (scratch in-memory store, its own clock loop)
and by the flow harness on a real SQLite file, which drives the runtime the way the service
does (events accepted one transaction each, every item claimed at its due ms). Runs (which
events, when queued, when started) and what each event's record says must be equal; each test
also checks the rule itself, so an equal but wrong pair fails too.
"""

import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from weir.platform.functions import (
    Batching,
    ConcurrencyLimit,
    Debounce,
    FunctionConfig,
    RateLimit,
    Singleton,
    Throttle,
)
from weir.platform.registry import Function
from weir.platform.runtime.simulate import (
    MAX_EVENTS,
    SimEvent,
    Simulation,
    SimulationError,
    simulate,
)

from tests.support.flow_harness import NOON, Harness, config

FAR = 40 * 86_400_000  # past every timer of these sequences
Sequence = list[tuple[int, dict[str, Any]]]
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


def _ids_named(effects: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """Batch and run ids are fresh on every play: name them by first appearance instead."""
    seen: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<id{len(seen)}>")

    return [(i, outcome, ULID.sub(name, words)) for i, outcome, words in effects]


def _fn(cfg: FunctionConfig) -> Function:
    return Function(id=cfg.slug, app_id="app", slug=cfg.slug, config=cfg, version=1)


def _real(tmp_path: Path, cfg: FunctionConfig, seq: Sequence) -> dict[str, Any]:
    h = Harness(f"sqlite:///{tmp_path}/real.db", cfg)
    ids = [h.send(NOON + at, data) for at, data in seq]
    h.advance(NOON + FAR)
    index = {event_id: i for i, event_id in enumerate(ids)}
    starts = h.start_times()
    runs = [
        ([index[e] for e in run.event_ids], run.created_at - NOON, start - NOON)
        for run, start in zip(h.runs(), starts, strict=True)
    ]
    effects = sorted((index[o.event_id], o.outcome, o.detail) for o in h.outcomes())
    return {"runs": runs, "effects": _ids_named(effects)}


def _simulated(cfg: FunctionConfig, seq: Sequence) -> tuple[dict[str, Any], Simulation]:
    sim = simulate(_fn(cfg), [SimEvent(at, data) for at, data in seq], 0, base_ms=NOON)
    runs = [(r.events, r.queued_ms, r.started_ms) for r in sim.runs]
    effects = sorted(
        (e.index, x.outcome, x.words)
        for e in sim.events
        for x in e.effects
        if x.outcome not in ("started", "queued")
    )
    return {"runs": runs, "effects": _ids_named(effects)}, sim


def _both(tmp_path: Path, cfg: FunctionConfig, seq: Sequence) -> dict[str, Any]:
    real = _real(tmp_path, cfg, seq)
    simulated, _ = _simulated(cfg, seq)
    assert simulated == real
    return real


def test_throttle_delays_starts_exactly_as_the_platform_does(tmp_path: Path) -> None:
    cfg = config(throttle=Throttle(limit=2, period_ms=10_000, burst=0, key=None))
    seq = [(i * 500, {"n": i}) for i in range(6)]
    real = _both(tmp_path, cfg, seq)
    starts = [start for _, _, start in real["runs"]]
    assert len(starts) == 6 and starts[0] == 0
    assert all(b - a >= 5_000 for a, b in pairwise(starts))  # 2 per 10 s


def test_rate_limit_skips_the_same_events(tmp_path: Path) -> None:
    cfg = config(rate_limit=RateLimit(limit=2, period_ms=60_000, key="event.data.user"))
    seq = [(i * 1_000, {"user": "a" if i % 3 else "b"}) for i in range(9)]
    real = _both(tmp_path, cfg, seq)
    skipped = [i for i, outcome, _ in real["effects"] if outcome == "rate_limited"]
    assert skipped and len(real["runs"]) + len(skipped) == len(seq)
    assert len(real["runs"]) == 4  # two per user key within the minute


def test_debounce_runs_once_per_window_with_the_last_event(tmp_path: Path) -> None:
    cfg = config(debounce=Debounce(period_ms=5_000, key=None, timeout_ms=None))
    seq = [(0, {"n": 0}), (2_000, {"n": 1}), (4_000, {"n": 2}), (20_000, {"n": 3})]
    real = _both(tmp_path, cfg, seq)
    assert [(events, start) for events, _, start in real["runs"]] == [([2], 9_000), ([3], 25_000)]


def test_batches_fill_and_time_out_the_same(tmp_path: Path) -> None:
    cfg = config(batching=Batching(max_size=3, timeout_ms=10_000, key=None, if_expr=None))
    seq = [(i * 1_000, {"n": i}) for i in range(5)]
    real = _both(tmp_path, cfg, seq)
    assert [events for events, _, _ in real["runs"]] == [[0, 1, 2], [3, 4]]
    assert real["runs"][1][2] == 13_000  # the second batch flushes at its timeout


def test_idempotency_skips_repeated_keys(tmp_path: Path) -> None:
    cfg = config(idempotency="event.data.order")
    seq = [(i * 100, {"order": i % 2}) for i in range(5)]
    real = _both(tmp_path, cfg, seq)
    assert [events for events, _, _ in real["runs"]] == [[0], [1]]
    assert [i for i, outcome, _ in real["effects"]] == [2, 3, 4]


def test_singleton_skips_while_a_run_holds_the_key(tmp_path: Path) -> None:
    cfg = config(singleton=Singleton(mode="skip", key="event.data.user"))
    seq = [(0, {"user": "a"}), (100, {"user": "a"}), (200, {"user": "b"})]
    # the harness never ends a run; the simulated ones last a day, past these events
    real = _real(tmp_path, cfg, seq)
    sim = simulate(_fn(cfg), [SimEvent(at, d) for at, d in seq], 86_400_000, base_ms=NOON)
    assert [(r.events, r.queued_ms, r.started_ms) for r in sim.runs] == real["runs"]
    assert [events for events, _, _ in real["runs"]] == [[0], [2]]
    skipped = [
        (e.index, x.outcome) for e in sim.events for x in e.effects if x.outcome != "started"
    ]
    assert skipped == [(1, "singleton_skipped")]


def test_concurrency_holds_runs_while_earlier_ones_last() -> None:
    cfg = config(concurrency=(ConcurrencyLimit(limit=1, key=None, scope="fn"),))
    sim = simulate(_fn(cfg), [SimEvent(0, {}), SimEvent(0, {}), SimEvent(100, {})], run_ms=3_000)
    assert [r.started_ms for r in sim.runs] == [0, 3_000, 6_000]
    assert [r.ended_ms for r in sim.runs] == [3_000, 6_000, 9_000]
    assert sim.runs[1].waits == ["concurrency: waiting for a free slot"]
    assert not sim.unfinished


def test_the_timeline_says_why(tmp_path: Path) -> None:
    cfg = config(throttle=Throttle(limit=1, period_ms=60_000, burst=0, key=None))
    _, sim = _simulated(cfg, [(0, {}), (1_000, {})])
    assert sim.runs[1].waits and "throttle" in sim.runs[1].waits[0]
    assert any(line.kind == "start" and "throttle" in line.text for line in sim.log)


@pytest.mark.parametrize(
    ("events", "run_ms", "says"),
    [
        ([], 0, "at least one event"),
        ([SimEvent(-1, {})], 0, "events[0].at_ms = -1 must be between 0"),
        ([SimEvent(0, {}, name="other/event")], 0, "does not trigger"),
        ([SimEvent(0, {}, name="inngest/function.finished")], 0, "inngest/"),
        ([SimEvent(0, {})], -5, "run_ms = -5"),
        ([SimEvent(0, {})] * (MAX_EVENTS + 1), 0, f"at most {MAX_EVENTS}"),
    ],
)
def test_bad_requests_say_what_is_wrong(events: list[SimEvent], run_ms: int, says: str) -> None:
    with pytest.raises(SimulationError, match=says.replace("[", r"\[").replace("]", r"\]")):
        simulate(_fn(config()), events, run_ms)
