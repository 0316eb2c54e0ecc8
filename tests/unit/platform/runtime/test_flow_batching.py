"""Batching wired into admission: a full batch runs at once, a partial one at its timeout, all
events in arrival order, `if` false runs alone, keys, restarts, and flushes skip batching."""

from __future__ import annotations

from weir.platform.functions import Batching, Throttle
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.runtime import events

from tests.support.flow_harness import EVENT, NOON, Harness, config, event_ids, warnings

S = 1000


def batched(
    database_url: str,
    size: int = 3,
    timeout: int = 10 * S,
    key: str | None = None,
    if_expr: str | None = None,
) -> Harness:
    return Harness(database_url, config(batching=Batching(size, timeout, key, if_expr)))


def test_a_full_batch_runs_at_once_with_every_event_in_arrival_order(database_url: str) -> None:
    h = batched(database_url, size=3)
    sent = [h.send(NOON + i) for i in range(3)]
    (run,) = h.runs()
    assert event_ids(run) == sent
    assert run.created_at == NOON + 2 and run.batch_id is not None
    assert h.queued("batch") == []  # its timer went with it
    assert h.gate_rows("batch") == []


def test_each_event_records_the_batch_it_joined(database_url: str) -> None:
    h = batched(database_url, size=3)
    sent = [h.send(NOON + i) for i in range(3)]
    (run,) = h.runs()
    rows = h.outcomes("batched")
    assert [r.event_id for r in rows] == sent
    assert all(f"batch {run.batch_id}" in r.detail for r in rows)
    assert "event 2 of batch" in rows[1].detail


def test_a_partial_batch_runs_at_its_timeout(database_url: str) -> None:
    h = batched(database_url, size=5, timeout=10 * S)
    sent = [h.send(NOON + i * S) for i in range(2)]
    h.advance(NOON + 10 * S - 1)
    assert h.runs() == []
    h.advance(NOON + 10 * S)
    (run,) = h.runs()
    assert event_ids(run) == sent and run.created_at == NOON + 10 * S


def test_a_burst_larger_than_the_batch_makes_several_runs(database_url: str) -> None:
    h = batched(database_url, size=2)
    sent = h.burst(NOON, [{"n": i} for i in range(5)])
    assert [event_ids(r) for r in h.runs()] == [sent[0:2], sent[2:4]]
    h.advance(NOON + 10 * S)
    assert [event_ids(r) for r in h.runs()][-1] == [sent[4]]


def test_an_event_for_which_if_is_false_runs_alone(database_url: str) -> None:
    h = batched(database_url, size=2, if_expr="event.data.bulk == true")
    alone = h.send(NOON, {"bulk": False})
    a = h.send(NOON + 1, {"bulk": True})
    b = h.send(NOON + 2, {"bulk": True})
    assert [event_ids(r) for r in h.runs()] == [[alone], [a, b]]
    assert h.runs()[0].batch_id is None


def test_keys_interleave_with_their_own_batches(database_url: str) -> None:
    h = batched(database_url, size=2, key="event.data.team")
    a1 = h.send(NOON, {"team": "a"})
    b1 = h.send(NOON + 1, {"team": "b"})
    a2 = h.send(NOON + 2, {"team": "a"})
    assert [event_ids(r) for r in h.runs()] == [[a1, a2]]
    h.advance(NOON + 10 * S + 1)
    assert [event_ids(r) for r in h.runs()] == [[a1, a2], [b1]]


def test_an_event_finding_the_batch_due_flushes_it_first(database_url: str) -> None:
    h = batched(database_url, size=5, timeout=2 * S)
    first = h.send(NOON)
    with h.tx(NOON + 3 * S) as tx:  # the scheduler lags: the batch timer has not run yet
        second = events.accept(tx, [IncomingEvent(EVENT, {}, None, NOON + 3 * S, {}, None)])[0]
    assert [event_ids(r) for r in h.runs()] == [[first]]
    h.advance(NOON + 5 * S)
    assert [event_ids(r) for r in h.runs()] == [[first], [second]]
    assert [r.created_at for r in h.runs()] == [NOON + 3 * S, NOON + 5 * S]


def test_a_restart_mid_batch_keeps_the_collected_events(database_url: str) -> None:
    h = batched(database_url, size=3, timeout=10 * S)
    sent = [h.send(NOON)]
    h.restart()
    sent.append(h.send(NOON + S))
    h.restart()
    h.advance(NOON + 10 * S)
    (run,) = h.runs()
    assert event_ids(run) == sent and run.created_at == NOON + 10 * S


def test_a_flushed_batch_still_obeys_the_throttle(database_url: str) -> None:
    options = {
        "batching": Batching(2, 10 * S, None, None),
        "throttle": Throttle(1, 60 * S, 0, None),
    }
    h = Harness(database_url, config(**options))  # type: ignore[arg-type]
    h.burst(NOON, [{}, {}, {}, {}])
    assert h.start_times() == [NOON, NOON + 60 * S]


def test_a_failing_key_batches_in_the_empty_key_and_warns(database_url: str) -> None:
    h = batched(database_url, size=2, key="event.data.team.name")
    sent = [h.send(NOON, {}), h.send(NOON + 1, {"team": 3})]
    (run,) = h.runs()
    assert event_ids(run) == sent
    assert any(w.startswith("batch: key expression") for w in warnings(run))


def test_a_flushed_batch_meets_idempotency_on_its_first_event(database_url: str) -> None:
    options = {"batching": Batching(2, 10 * S, None, None), "idempotency": "event.data.order"}
    h = Harness(database_url, config(**options))  # type: ignore[arg-type]
    sent = h.burst(NOON, [{"order": 1}] * 4)
    (run,) = h.runs()
    assert event_ids(run) == sent[:2]
    skipped = h.outcomes("idempotent")
    assert [r.event_id for r in skipped] == sent[2:]  # the whole second batch, naming the holder
    assert {r.run_id for r in skipped} == {run.id}


def test_a_function_without_options_keeps_no_gate_state(database_url: str) -> None:
    h = Harness(database_url, config())
    h.burst(NOON, [{}, {}])
    assert len(h.runs()) == 2 and h.outcomes() == []
    assert all(h.gate_rows(g) == [] for g in ("batch", "throttle", "rate_limit", "debounce"))
