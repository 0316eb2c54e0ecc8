"""Batching: size and timeout flushes, arrival order, `if` false runs alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from weir.platform.gates import batching
from weir.platform.gates.batching import BatchConfig, BatchFlush, BatchState
from weir.platform.gates.decisions import from_json, to_json

NOON = 1_767_268_800_000


@dataclass
class Batcher:
    """A fake store and timer queue for one key; records which events each run receives."""

    config: BatchConfig
    reload_each_time: bool = False
    state: BatchState | None = None
    made: int = 0
    members: dict[str, list[str]] = field(default_factory=dict)
    timers: list[tuple[int, str]] = field(default_factory=list)
    runs: list[tuple[int, str, list[str]]] = field(default_factory=list)  # (at, cause, events)

    def event(self, at: int, event_id: str, batchable: bool = True) -> None:
        self.advance(at)
        if self.reload_each_time and self.state is not None:
            self.state = from_json(BatchState, json.loads(json.dumps(to_json(self.state))))
        decision = batching.on_event(self.config, self.state, at, f"b{self.made}", batchable)
        if decision.alone:
            self.runs.append((at, "alone", [event_id]))
            return
        self._record(decision, event_id)
        for flush in decision.flushes:
            self._run(at, flush)

    def _record(self, decision: batching.BatchDecision, event_id: str) -> None:
        assert decision.batch_id is not None
        if decision.timer_at_ms is not None:
            self.made += 1
            self.timers.append((decision.timer_at_ms, decision.batch_id))
        batch = self.members.setdefault(decision.batch_id, [])
        assert decision.position == len(batch)
        batch.append(event_id)
        self.state = decision.state

    def _run(self, at: int, flush: BatchFlush) -> None:
        events = self.members.pop(flush.batch_id)
        assert len(events) == flush.count
        self.runs.append((at, flush.cause, events))

    def advance(self, to: int) -> None:
        for at, batch_id in sorted(t for t in self.timers if t[0] <= to):
            self.timers.remove((at, batch_id))
            result = batching.on_timer(self.state, batch_id, at)
            self.state = result.state
            if result.flush is not None:
                self._run(at, result.flush)


def test_flushes_immediately_at_max_size_in_arrival_order() -> None:
    b = Batcher(BatchConfig(max_size=3, timeout_ms=10_000))
    for at, eid in [(0, "e1"), (100, "e2"), (200, "e3"), (300, "e4")]:
        b.event(at, eid)
    b.advance(60_000)
    assert b.runs == [(200, "full", ["e1", "e2", "e3"]), (10_300, "timeout", ["e4"])]


def test_flushes_at_timeout_after_the_first_event() -> None:
    b = Batcher(BatchConfig(max_size=100, timeout_ms=5_000))
    for at in [1_000, 2_000, 5_999, 6_000, 6_500]:
        b.event(at, f"e{at}")
    b.advance(60_000)
    assert b.runs == [
        (6_000, "timeout", ["e1000", "e2000", "e5999"]),
        (11_000, "timeout", ["e6000", "e6500"]),
    ]


def test_stale_timer_of_a_full_batch_does_nothing() -> None:
    config = BatchConfig(max_size=2, timeout_ms=5_000)
    first = batching.on_event(config, None, 0, "b0")
    full = batching.on_event(config, first.state, 10, "b1")
    assert full.state is None
    assert full.flushes == (BatchFlush("b0", 2, "full"),)
    opened = batching.on_event(config, None, 20, "b1")
    stale = batching.on_timer(opened.state, "b0", 5_000)
    assert stale.flush is None
    assert stale.state == opened.state


def test_event_finding_an_overdue_batch_flushes_it_first() -> None:
    config = BatchConfig(max_size=10, timeout_ms=5_000)
    first = batching.on_event(config, None, 0, "b0")
    late = batching.on_event(config, first.state, 7_000, "b1")
    assert late.flushes == (BatchFlush("b0", 1, "timeout"),)
    assert late.batch_id == "b1"
    assert late.position == 0
    assert late.timer_at_ms == 12_000
    assert late.state == BatchState("b1", 7_000, 1, 12_000)


def test_if_false_runs_alone_and_leaves_the_batch_untouched() -> None:
    b = Batcher(BatchConfig(max_size=2, timeout_ms=5_000))
    b.event(0, "e1")
    b.event(100, "solo", batchable=False)
    b.event(200, "e2")
    assert b.runs == [(100, "alone", ["solo"]), (200, "full", ["e1", "e2"])]


def test_burst_larger_than_several_batches() -> None:
    b = Batcher(BatchConfig(max_size=4, timeout_ms=1_000))
    for n in range(10):
        b.event(0, f"e{n}")
    b.advance(60_000)
    assert [(at, cause, len(ev)) for at, cause, ev in b.runs] == [
        (0, "full", 4),
        (0, "full", 4),
        (1_000, "timeout", 2),
    ]
    assert [e for _, _, ev in b.runs for e in ev] == [f"e{n}" for n in range(10)]


def test_reloaded_state_gives_the_same_runs() -> None:
    plan = [(0, "a"), (400, "b"), (900, "c"), (1_000, "d"), (1_200, "e"), (1_300, "f")]
    config = BatchConfig(max_size=3, timeout_ms=1_000)
    whole, split = Batcher(config), Batcher(config, reload_each_time=True)
    for sim in (whole, split):
        for at, eid in plan:
            sim.event(at, eid)
        sim.advance(60_000)
    assert (
        split.runs
        == whole.runs
        == [
            (900, "full", ["a", "b", "c"]),
            (1_300, "full", ["d", "e", "f"]),
        ]
    )


def test_wait_reason_counts_events_and_names_the_flush() -> None:
    state = batching.on_event(BatchConfig(max_size=5, timeout_ms=2_000), None, NOON, "b0").state
    assert state is not None
    reason = batching.wait_reason(state, "tenant-1")
    assert reason.until_ms == NOON + 2_000
    assert reason.words == (
        "batching: collecting a batch (1 event so far) until 12:00:02.000 (key 'tenant-1')"
    )


@pytest.mark.parametrize(
    ("max_size", "timeout_ms", "message"),
    [
        (1, 1_000, r"batch_events.max_size = 1 .*allowed: >= 2"),
        (2, 999, r"batch_events.timeout \(ms\) = 999 .*allowed: >= 1000"),
    ],
)
def test_bad_bounds_raise(max_size: int, timeout_ms: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BatchConfig(max_size=max_size, timeout_ms=timeout_ms)
