"""Evaluating over an object another process holds parsed (`held`): the same values and the
same error reasons as the same object sent as bytes (a Document) to a pool worker.

The holder here is this process (`answer_held` called directly), so only expressions that stay
well inside the memory budget are used; tests/unit/platform/test_ingest_workers.py runs the
real holder process against hostile ones."""

import pickle
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from weir.expressions import (
    Budget,
    BudgetExceeded,
    Document,
    NotHeld,
    compile_expression,
    configure_budget,
)
from weir.expressions._pool import POOL
from weir.expressions.held import (
    HeldRequest,
    HolderStopped,
    answer_held,
    evaluate_held,
    reads,
    time_left_ms,
)

from tests.support.verdicts import outcome

EVENT: dict[str, Any] = {
    "name": "e",
    "data": {"x": [1, 2, 3], "s": "a", "f": 2.5, "deep": {"k": [{"v": None}]}},
    "id": "i1",
    "ts": 1_700_000_000_000,
    "user": {},
}
SOURCES = [
    "event.data.x.map(i, i * 2)",
    'event.data.s + "-" + event.id',
    "event.data.f * 2.0",
    "event.data.deep.k[0].v == null",
    "has(event.data.missing)",
    "event.data.missing == 1",  # an error: no such key
    "event.data.s + 1",  # an error: no such overload
    "event.data.x.all(i, i > 0) && event.ts > 0",
    "event",  # the whole event
]


@pytest.fixture(autouse=True)
def roomy_budget() -> Iterator[Budget]:
    """Results are compared: on a loaded machine a worker may be slow to answer."""
    budget = Budget(time_ms=10_000, result_bytes=1024)
    previous = configure_budget(budget)
    assert POOL.wait_until_ready(budget)
    yield budget
    configure_budget(previous)


def _here(held: dict[str, Any]) -> Any:
    kept: OrderedDict[str, Any] = OrderedDict(held)

    def exchange(request: HeldRequest, deadline: float) -> tuple[str, Any]:
        return _unframed(answer_held(kept, request))

    return exchange


def _unframed(framed: bytes) -> tuple[str, Any]:
    verdict, payload = pickle.loads(framed[8:])  # the frame's 8-byte length, then the pickle
    return verdict, payload


@pytest.mark.parametrize("source", SOURCES)
def test_a_held_object_gives_what_the_same_bytes_give_a_pool_worker(source: str) -> None:
    expression = compile_expression(source)
    document = Document(f"doc-{source}", orjson.dumps(EVENT), {"name": "e"}, tuple(EVENT))
    sent = outcome(lambda: expression.evaluate({"event": document}))
    held = outcome(lambda: evaluate_held(expression, "event", "k", _here({"k": EVENT})))
    assert held == sent
    assert dict.__len__(document) == 1  # the bytes were parsed only in a worker


def test_a_result_over_the_size_budget_is_refused_with_its_size() -> None:
    big = {**EVENT, "data": {**EVENT["data"], "s": "s" * 2000}}
    expression = compile_expression("event.data.x.map(i, string(i) + event.data.s)")
    with pytest.raises(BudgetExceeded) as over:
        evaluate_held(expression, "event", "k", _here({"k": big}))
    assert "larger than the result size budget of 1024 bytes" in over.value.reason


@pytest.mark.parametrize(
    ("what", "said"),
    [
        ("time", "it exceeded its cost budget of 10000 ms and was stopped"),
        ("died", "it exceeded its memory budget of 512 MiB and was stopped"),
    ],
)
def test_a_stopped_holder_is_an_exceeded_budget_with_the_pools_reason(what: str, said: str) -> None:
    def exchange(request: HeldRequest, deadline: float) -> tuple[str, Any]:
        raise HolderStopped(what)

    with pytest.raises(BudgetExceeded) as over:
        evaluate_held(compile_expression("event.data.x.size()"), "event", "k", exchange)
    assert over.value.reason == said


def test_an_object_the_holder_no_longer_has_is_not_held() -> None:
    with pytest.raises(NotHeld):
        evaluate_held(compile_expression("event.data.s"), "event", "gone", _here({}))


def test_an_expression_over_other_variables_is_not_held() -> None:
    expression = compile_expression("event.data.s == async.data.s", ("event", "async"))
    with pytest.raises(NotHeld):
        evaluate_held(expression, "event", "k", _here({"k": EVENT}))


def test_reads_names_the_top_level_fields_an_expression_reads() -> None:
    assert reads(compile_expression("event.id + event.data.s"), "event", "id")
    assert not reads(compile_expression("event.data.id"), "event", "id")
    assert reads(compile_expression("event.size() > 0"), "event", "id")  # all of it
    assert not reads(compile_expression("1 == 1"), "event", "id")


@pytest.mark.parametrize(
    ("spent", "left"), [(0.0, 200.0), (60.0, 140.0), (150.0, 50.0), (190.0, 50.0), (900.0, 50.0)]
)
def test_the_time_spent_before_an_evaluation_counts_toward_its_budget(
    spent: float, left: float
) -> None:
    assert time_left_ms(200, spent) == left  # never less than a quarter of it
