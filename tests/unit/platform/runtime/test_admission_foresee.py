"""A large event's costly evaluations made before its transaction, where the ingest worker holds
it parsed (`admission.foresee`): admission then decides exactly as when it evaluated them
itself (the same runs, keys and refusals with the same reasons, the event's total budget
included), and the writer evaluates nothing costly for it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from weir.expressions import Budget, configure_budget
from weir.expressions import _expression as expression_module
from weir.expressions._pool import POOL
from weir.platform.functions import Batching, ConcurrencyLimit, EventTrigger, Throttle
from weir.platform.ingest import workers as ingest_workers
from weir.platform.ingest.validate import LARGE_EVENT_BYTES, parse_body
from weir.platform.runtime import events

from tests.support.flow_harness import EVENT, NOON, Harness, config

S = 1000
OVER = "expression_over_budget"
FILTER = "event.data.items.filter(i, i > 0).size() > 0"
STRINGS = 'event.data.items.map(i, string(i) + "-" + string(i)).size()'
FINE_IF = "event.data.items.exists(i, i == 3)"
FINE_KEY = 'event.data.tenant + "/" + string(event.data.items.size())'


@pytest.fixture(autouse=True)
def small_budget() -> Iterator[Budget]:
    budget = Budget(time_ms=300)
    previous = configure_budget(budget)
    assert POOL.wait_until_ready(budget)
    yield budget
    configure_budget(previous)


def hostile() -> dict[str, Any]:
    return {"items": [1] * 1_500_000}  # ~3 MiB as JSON


def fine() -> dict[str, Any]:
    return {"items": [1, 2, 3], "tenant": "t-1", "pad": "p" * LARGE_EVENT_BYTES}


@contextmanager
def no_costly_evaluation_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within it, a costly evaluation in this process (the writer) fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the writer evaluated {args[0]!r} itself")

    with monkeypatch.context() as patch:
        patch.setattr(expression_module.POOL, "evaluate", refuse)
        yield


def send_large(
    h: Harness, at: int, data: dict[str, Any], monkeypatch: pytest.MonkeyPatch, **event: Any
) -> str:
    """As the API takes a large body: parsed, and foreseen, by an ingest worker."""
    h.advance(at)
    body = json.dumps({"name": EVENT, "data": data, **event}).encode()
    registry = h.registry
    incoming = asyncio.run(
        ingest_workers.parse(body, at, lambda e, held, ms: events.foresee(registry, e, held, ms))
    )
    assert incoming[0].raw is not None and incoming[0].evaluated
    with no_costly_evaluation_here(monkeypatch), h.tx(at) as tx:
        return events.accept(tx, incoming)[0]


def refusals(h: Harness, event_id: str) -> list[str]:
    return sorted(str(row.detail) for row in h.outcomes(OVER) if row.event_id == event_id)


COSTLY = {
    "trigger if": (replace(config(), triggers=(EventTrigger(EVENT, FILTER),)),),
    "concurrency key": (config(concurrency=(ConcurrencyLimit(1, STRINGS, "fn"),)),),
    "throttle key": (config(throttle=Throttle(5, 60 * S, 1, STRINGS)),),
    "batch if": (config(batching=Batching(2, 10 * S, None, FILTER)),),
    "priority": (config(priority_run=STRINGS),),
}


@pytest.mark.parametrize("configs", COSTLY.values(), ids=list(COSTLY))
def test_a_hostile_event_is_refused_for_the_same_reasons_foreseen(
    database_url: str, monkeypatch: pytest.MonkeyPatch, configs: tuple[Any, ...]
) -> None:
    h = Harness(database_url, *configs)
    expected = refusals(h, h.send(NOON, hostile()))  # the writer evaluates everything
    before = len(h.runs())
    got = refusals(h, send_large(h, NOON + 1, hostile(), monkeypatch))
    assert got == expected
    assert len(got) == len(configs)
    assert len(h.runs()) == before  # nothing started, nothing half-written


def test_the_events_total_budget_holds_across_functions(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = [FILTER, STRINGS, FILTER.replace("> 0)", ">= 0)"), FILTER]
    h = Harness(
        database_url,
        *(
            replace(config(f"fn{i}"), triggers=(EventTrigger(EVENT, s),))
            for i, s in enumerate(sources)
        ),
    )
    got = refusals(h, send_large(h, NOON, hostile(), monkeypatch))
    assert len(got) == 4
    # Costly evaluations (each in a child of the ingest worker, stopped at the budget) until
    # the event's 600 ms are spent: two on an idle machine; one when load (the parse, a
    # worker's restart) eats into the event's time first. Every other one is refused unrun.
    stopped = sum("exceeded its cost budget of 300 ms" in d for d in got)
    spent = sum("the event already used its total expression budget of 600 ms" in d for d in got)
    assert stopped in (1, 2)
    assert stopped + spent == 4
    h.send(NOON + 1, {"items": [2]})  # the next event has its own budget
    assert len(h.runs()) == 3  # STRINGS gives a number, not true


def test_an_ordinary_large_event_starts_the_same_runs_with_the_same_keys(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = (
        replace(config("matched"), triggers=(EventTrigger(EVENT, FINE_IF),)),
        replace(config("unmatched"), triggers=(EventTrigger(EVENT, FILTER.replace(">", "<")),)),
        config("keyed", concurrency=(ConcurrencyLimit(2, FINE_KEY, "fn"),), priority_run="0"),
    )
    h = Harness(database_url, *configs)
    h.send(NOON, fine(), user_id="e-1")
    expected = sorted((r.function_id, json.dumps(r.keys, sort_keys=True)) for r in h.runs())
    send_large(h, NOON + 1, fine(), monkeypatch, id="e-2")  # ids dedupe
    got = sorted((r.function_id, json.dumps(r.keys, sort_keys=True)) for r in h.runs())
    assert got == sorted(expected * 2)
    assert {fn for fn, _ in expected} == {"matched", "keyed"}
    assert h.outcomes(OVER) == []


def test_an_expression_reading_the_id_weir_makes_is_left_to_the_writer(
    database_url: str,
) -> None:
    key = 'event.id + "/" + string(event.data.items.size())'
    h = Harness(database_url, config(concurrency=(ConcurrencyLimit(1, key, "fn"),)))
    body = json.dumps({"name": EVENT, "data": fine()}).encode()
    registry = h.registry
    incoming = asyncio.run(
        ingest_workers.parse(body, NOON, lambda e, held, ms: events.foresee(registry, e, held, ms))
    )
    assert incoming[0].evaluated == {}  # not foreseen: its id is made in the transaction
    with h.tx(NOON) as tx:
        [event_id] = events.accept(tx, incoming)
    (run,) = h.runs()
    assert f"{event_id}/3" in json.dumps(run.keys)


def send_small(h: Harness, at: int, data: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """As the API takes a small body: parsed on the loop, its costly evaluations foreseen in
    a thread (`events.foresee_costly`); the writer then evaluates nothing costly."""
    h.advance(at)
    body = json.dumps({"name": EVENT, "data": data}).encode()
    incoming = asyncio.run(events.foresee_costly(h.registry, parse_body(body, at)))
    assert incoming[0].raw is None and incoming[0].evaluated
    with no_costly_evaluation_here(monkeypatch), h.tx(at) as tx:
        return events.accept(tx, incoming)[0]


def small_costly() -> dict[str, Any]:
    return {"items": list(range(-125, 125))}  # small, and over the weight of a cheap one


@pytest.mark.parametrize("configs", COSTLY.values(), ids=list(COSTLY))
def test_a_small_event_is_admitted_as_the_writer_would_without_its_evaluating(
    database_url: str, monkeypatch: pytest.MonkeyPatch, configs: tuple[Any, ...]
) -> None:
    h = Harness(database_url, *configs)
    for at in (NOON, NOON + 1):  # the writer evaluates everything (twice: a batch fills)
        h.send(at, small_costly())
    expected = sorted((r.function_id, json.dumps(r.keys, sort_keys=True)) for r in h.runs())
    assert expected and h.outcomes(OVER) == []
    for at in (NOON + 2, NOON + 3):
        send_small(h, at, small_costly(), monkeypatch)
    got = sorted((r.function_id, json.dumps(r.keys, sort_keys=True)) for r in h.runs())
    assert got == sorted(expected * 2)
    assert h.outcomes(OVER) == []


def test_a_small_event_meeting_only_cheap_expressions_is_not_foreseen(database_url: str) -> None:
    h = Harness(database_url, replace(config(), triggers=(EventTrigger(EVENT, FINE_IF),)))
    body = json.dumps({"name": EVENT, "data": {"items": [1, 2, 3]}}).encode()
    incoming = parse_body(body, NOON)
    assert asyncio.run(events.foresee_costly(h.registry, incoming)) is incoming
