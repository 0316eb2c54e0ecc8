"""The ingest worker that parsed a large body evaluates over its large events (`foresee`): the
same outcomes as the event sent as bytes to a pool worker, the same budgets (time, memory),
and the same events back; a worker stopped for a budget is replaced, and a refused body leaves
the pool as it was."""

import asyncio
import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from weir.expressions import (
    Budget,
    Expression,
    NotHeld,
    compile_expression,
    configure_budget,
)
from weir.expressions._pool import POOL as EXPRESSION_POOL
from weir.platform.ingest import workers as ingest_workers
from weir.platform.ingest.validate import (
    LARGE_EVENT_BYTES,
    EventError,
    IncomingEvent,
    event_payload,
)

from tests.support.verdicts import outcome

NOW = 1_700_000_000_000
MIB = 1024 * 1024
PAD = "p" * LARGE_EVENT_BYTES
FILTER = "event.data.items.filter(i, i > 0).size() > 0"
GROWING = "event.data.items.map(i, event.data.s + string(i)).size()"  # 1 MiB more each
SOURCES = [
    'event.data.items.exists(i, i == 2) && event.data.kind == "a"',
    "event.data.items.map(i, i * 2)[1]",
    "event.data.nope == 1",
    'event.id + "/" + event.data.kind',
    "event.user.tier",
]


@pytest.fixture
def budget() -> Iterator[Budget]:
    budget = Budget(time_ms=10_000)  # outcomes are compared: room for a loaded machine
    previous = configure_budget(budget)
    assert EXPRESSION_POOL.wait_until_ready(budget)
    yield budget
    configure_budget(previous)


def _body(*events: dict[str, Any]) -> bytes:
    return json.dumps(list(events)).encode()


def _foresee_each(
    sources: list[str], seen: dict[int, list[tuple[str, Any]]]
) -> ingest_workers.Foresee:
    """Evaluates each of `sources` where the worker holds the event; records the outcomes."""

    def foresee(
        event: IncomingEvent, held: Callable[[Expression], Any], parse_ms: float
    ) -> dict[str, tuple[Any, float]]:
        outcomes = seen.setdefault(len(seen), [])
        for source in sources:
            try:
                outcomes.append(outcome(lambda s=source: held(compile_expression(s))))
            except NotHeld:
                outcomes.append(("not held", source))
        return {"marker": (len(seen), 0.0)}

    return foresee


def test_the_held_event_gives_what_its_stored_bytes_give(budget: Budget) -> None:
    event = {
        "name": "t/big",
        "id": "mine",
        "data": {"pad": PAD, "items": [1, 2, 3], "kind": "a"},
        "user": {"tier": "gold"},
    }
    small = {"name": "t/small", "data": {"n": 1}}
    body = _body(event, small)
    seen: dict[int, list[tuple[str, Any]]] = {}
    plain = asyncio.run(ingest_workers.parse(body, NOW))
    events = asyncio.run(ingest_workers.parse(body, NOW, _foresee_each(SOURCES, seen)))

    assert [e.raw for e in events] == [e.raw for e in plain]  # the same bytes to store
    assert events[0].evaluated == {"marker": (1, 0.0)}  # what foresee gave, kept with it
    assert events[1].evaluated == {}  # a small event is not foreseen
    document = event_payload(events[0], "internal-id")
    expected = [
        outcome(lambda s=s: compile_expression(s).evaluate({"event": document})) for s in SOURCES
    ]
    assert seen == {0: expected}
    assert ("ok", "mine/a") in expected and ("ok", "gold") in expected


def test_an_expression_reading_an_id_not_made_yet_is_left_alone(budget: Budget) -> None:
    event = {"name": "t/big", "data": {"pad": PAD, "kind": "a"}}  # no id: Weir makes it
    seen: dict[int, list[tuple[str, Any]]] = {}
    sources = ['event.id + "/" + event.data.kind', 'event.data.kind + "!"']
    asyncio.run(ingest_workers.parse(_body(event), NOW, _foresee_each(sources, seen)))
    assert seen == {0: [("not held", sources[0]), ("ok", "a!")]}


def test_a_costly_expression_is_stopped_at_the_budget_and_the_worker_lives_on() -> None:
    budget = Budget(time_ms=200)
    previous = configure_budget(budget)
    asyncio.run(ingest_workers.parse(_body({"name": "t/warm", "data": {"pad": PAD}}), NOW))
    workers = _worker_pids()
    try:
        event = {"name": "t/big", "data": {"items": [1] * 1_500_000}}
        seen: dict[int, list[tuple[str, Any]]] = {}
        sources = [FILTER, 'event.name + "!"', FILTER]  # the next ones: held still
        events = asyncio.run(ingest_workers.parse(_body(event), NOW, _foresee_each(sources, seen)))
    finally:
        configure_budget(previous)
    stopped = ("over", "it exceeded its cost budget of 200 ms and was stopped")
    assert seen == {0: [stopped, ("ok", "t/big!"), stopped]}
    assert events[0].raw is not None and events[0].raw.data == orjson.dumps(event["data"])
    assert _worker_pids() == workers  # only the children evaluating were killed


def _worker_pids() -> set[int]:
    with ingest_workers.POOL._lock:
        return {worker.pid for worker in ingest_workers.POOL._idle}


def test_a_runaway_allocation_is_stopped_at_the_memory_budget() -> None:
    budget = Budget(time_ms=60_000, memory_bytes=64 * MIB)
    previous = configure_budget(budget)
    try:
        event = {"name": "t/big", "data": {"items": list(range(300)), "s": "x" * MIB}}
        seen: dict[int, list[tuple[str, Any]]] = {}
        asyncio.run(ingest_workers.parse(_body(event), NOW, _foresee_each([GROWING], seen)))
    finally:
        configure_budget(previous)
    assert seen == {0: [("over", "it exceeded its memory budget of 64 MiB and was stopped")]}


def test_a_refused_body_leaves_the_workers_ready_for_the_next(budget: Budget) -> None:
    seen: dict[int, list[tuple[str, Any]]] = {}
    bad = _body({"name": "t/big", "data": {"pad": PAD}}, {"name": "t/big", "data": {"n": 2**60}})
    for _ in range(ingest_workers.POOL.size + 1):  # every worker gets a refused body
        with pytest.raises(EventError, match=r"^event 1: data\.n is 1152921504606846976"):
            asyncio.run(ingest_workers.parse(bad, NOW, _foresee_each(["event.data.pad"], seen)))
    assert seen == {}
    good = _body({"name": "t/big", "data": {"pad": PAD, "kind": "a"}})
    asyncio.run(ingest_workers.parse(good, NOW, _foresee_each(["event.data.kind"], seen)))
    assert seen == {0: [("ok", "a")]}


def test_the_parse_counts_toward_the_first_evaluation_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker hands the time since the body came to the first evaluation on its events
    (so a costly one is given up a budget after the body arrived), and nothing to the next."""
    spent: list[float] = []

    def evaluate(held: Any, request: Any, spent_ms: float = 0.0) -> bytes:
        spent.append(spent_ms)
        return ingest_workers._frame(("ok", True))

    monkeypatch.setattr(ingest_workers, "answer_held_forked", evaluate)
    request = (200, 64 * MIB, ("true", 1024, "json", b"{}", ()))
    parent = io.BytesIO()
    for message in (("evaluate", request), ("evaluate", request), ("done",)):
        parent.write(ingest_workers._frame(message))
    parent.seek(0)
    answers = io.BytesIO()
    body = _body({"name": "t/big", "data": {"items": [1] * 200_000}})
    ingest_workers._hold(parent, answers, body, NOW)

    assert len(spent) == 2
    assert spent[0] > 0 and spent[1] == 0
    answers.seek(0)
    verdict, events = ingest_workers._read(answers)
    assert verdict == "ok" and events[0].raw is not None
