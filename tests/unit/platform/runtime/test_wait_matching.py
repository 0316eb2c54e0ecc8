"""Matching accepted events against open waits (runtime/events.accept, runtime/waits): the
waits of a name are read once for the events of that name accepted together."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from weir.platform.functions import CancelOn
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.runtime import cancellation, events
from weir.platform.runtime.steps import waits
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import waits as wait_records

from tests.support.flow_harness import NOON, Harness, config

OTHER = "app/other"


def waiting_run(h: Harness, expression: str | None = None) -> str:
    """A run of the harness's function, waiting for an OTHER event (an hour at most)."""
    h.send(NOON, {"order": 1})
    (run,) = h.runs()
    with h.tx(NOON + 10) as tx:
        held = run_records.get_run(tx.conn, run.id)
        assert held is not None
        waits.open_wait(tx, held, "w", "wait", OTHER, expression, 3_600_000)
    return run.id


def accept(h: Harness, at: int, *datas: dict[str, object]) -> list[str]:
    incoming = [IncomingEvent(OTHER, dict(d), None, at, {}, None) for d in datas]
    with h.tx(at) as tx:
        return events.accept(tx, incoming)


def open_waits(h: Harness) -> int:
    with h.engine.begin() as conn:
        return len(wait_records.waits_for_event(conn, OTHER, NOON + 10**9))


def test_two_events_accepted_together_resume_a_wait_once(database_url: str) -> None:
    h = Harness(database_url)
    run_id = waiting_run(h)
    first, _second = accept(h, NOON + 100, {"n": 1}, {"n": 2})
    (resumed,) = h.outcomes("resumed")
    assert (resumed.event_id, resumed.run_id) == (first, run_id)
    assert open_waits(h) == 0


def test_the_first_matching_event_of_a_batch_takes_the_wait(database_url: str) -> None:
    h = Harness(database_url)
    run_id = waiting_run(h, "async.data.n == 2")
    ids = accept(h, NOON + 100, {"n": 1}, {"n": 2}, {"n": 2})
    (resumed,) = h.outcomes("resumed")
    assert (resumed.event_id, resumed.run_id) == (ids[1], run_id)


def test_a_wait_opened_in_the_same_millisecond_is_not_matched(database_url: str) -> None:
    # Only waits opened before an event arrived can take it.
    h = Harness(database_url)
    waiting_run(h)
    accept(h, NOON + 10, {"n": 1})
    assert h.outcomes("resumed") == [] and open_waits(h) == 1
    accept(h, NOON + 11, {"n": 2})
    assert len(h.outcomes("resumed")) == 1 and open_waits(h) == 0


def test_a_wait_taken_by_an_event_is_not_evaluated_for_the_rest_of_its_batch(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = Harness(database_url)
    waiting_run(h, "async.data.n >= 1")
    evaluated = evaluations(monkeypatch, waits)
    first, _, _ = accept(h, NOON + 100, {"n": 1}, {"n": 2}, {"n": 3})
    assert evaluated == [{"n": 1}]
    (resumed,) = h.outcomes("resumed")
    assert resumed.event_id == first


def test_a_run_cancelled_by_an_event_has_its_waits_passed_over_for_the_rest_of_its_batch(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = tuple(CancelOn(OTHER, f"async.data.n >= {i}", None) for i in (1, 0))
    h = Harness(database_url, config(cancel_on=entries))
    h.send(NOON, {"order": 1})
    evaluated = evaluations(monkeypatch, cancellation)
    accept(h, NOON + 100, {"n": 1}, {"n": 2}, {"n": 3})
    (run,) = h.runs()
    assert run.status == "CANCELLED"
    assert evaluated == [{"n": 1}]


def evaluations(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[object]:
    """The data of each event `module` evaluates a wait's expression on, from now on."""
    evaluated: list[object] = []
    holds = module.expression_holds

    def counted(expression: Any, activation: dict[str, Any]) -> bool:
        evaluated.append(activation["async"]["data"])
        return bool(holds(expression, activation))

    monkeypatch.setattr(module, "expression_holds", counted)
    return evaluated
