"""Every evaluation is bounded: cheap ones run in-process, costly ones in a worker process that
is stopped at the budget, so a hostile event fails its own evaluation with a clear reason and
this process (which the Rust evaluator could otherwise stall or abort) carries on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from weir.expressions import (
    Budget,
    BudgetExceeded,
    EvaluationError,
    compile_expression,
    configure_budget,
    current_budget,
)
from weir.expressions._pool import POOL

MIB = 1024 * 1024
FILTER = "event.data.items.filter(i, i > 0).size() > 0"  # passes every shape limit
STRINGS = "event.data.items.map(i, event.data.s + event.data.s + event.data.s).size()"


@pytest.fixture(autouse=True)
def small_budget() -> Iterator[Budget]:
    budget = Budget(time_ms=300, memory_bytes=512 * MIB, result_bytes=64 * 1024, workers=2)
    previous = configure_budget(budget)
    # A stopped worker is replaced in the background; a caller never waits for a start
    # beyond its budget, so each test begins with one ready, as a running server would.
    assert POOL.wait_until_ready(budget)
    yield budget
    configure_budget(previous)


def hostile_event(size: int = 3 * MIB) -> dict[str, Any]:
    """An event of about `size` bytes as JSON: a long list of small numbers."""
    return {"name": "t/e", "data": {"items": [1] * (size // 2)}}


def test_a_hostile_event_fails_its_own_evaluation_at_the_time_budget() -> None:
    with pytest.raises(BudgetExceeded) as caught:
        compile_expression(FILTER).evaluate({"event": hostile_event()})
    assert "exceeded its cost budget of 300 ms" in caught.value.reason


def test_a_string_building_map_fails_cleanly_instead_of_ending_the_process() -> None:
    data = {"items": list(range(2000)), "s": "x" * MIB}  # ~6 GB if it were built
    with pytest.raises(BudgetExceeded) as caught:
        compile_expression(STRINGS).evaluate({"event": {"data": data}})
    assert "budget" in caught.value.reason
    assert compile_expression("event.data.n + 1").evaluate({"event": {"data": {"n": 1}}}) == 2


def test_a_worker_out_of_memory_is_reported_as_the_memory_budget(small_budget: Budget) -> None:
    configure_budget(Budget(time_ms=5000, memory_bytes=256 * MIB, workers=1))
    assert POOL.wait_until_ready(small_budget)
    data = {"items": list(range(300)), "s": "x" * MIB}  # ~900 MB of strings
    with pytest.raises(BudgetExceeded) as caught:
        compile_expression(STRINGS).evaluate({"event": {"data": data}})
    assert "exceeded its memory budget of 256 MiB" in caught.value.reason


def test_an_oversized_result_is_refused_with_its_size() -> None:
    source = "event.data.items.map(i, event.data.s)"
    for count in (100, 400):  # in-process, and in a worker
        data = {"items": list(range(count)), "s": "x" * 2000}
        assert compile_expression(source).is_cheap({"event": {"data": data}}) is (count == 100)
        # a worker stopped by an earlier test is started again first: under load its start
        # alone could use the whole 300 ms and stop this evaluation for its time, not its size
        assert POOL.wait_until_ready(current_budget())
        with pytest.raises(BudgetExceeded) as caught:
            compile_expression(source).evaluate({"event": {"data": data}})
        assert "larger than the result size budget of 65536 bytes" in caught.value.reason


def test_after_a_stopped_evaluation_the_next_one_is_answered() -> None:
    stopped = POOL.stopped
    with pytest.raises(BudgetExceeded):
        compile_expression(FILTER).evaluate({"event": hostile_event()})
    assert POOL.stopped == stopped + 1
    assert POOL.wait_until_ready(current_budget())
    items = {"event": {"data": {"items": list(range(-5, 500))}}}  # costly, within budget
    assert compile_expression(FILTER).evaluate(items) is True


def test_errors_from_a_worker_read_as_they_do_in_process() -> None:
    source = "event.data.items.exists(i, i.missing > 0)"
    big = {"event": {"data": {"items": [{"a": 1}] * 5000}}}
    small = {"event": {"data": {"items": [{"a": 1}]}}}
    expression = compile_expression(source)
    with pytest.raises(EvaluationError) as far:
        expression.evaluate(big)
    with pytest.raises(EvaluationError) as near:
        expression.evaluate(small)
    assert not isinstance(far.value, BudgetExceeded)
    assert far.value.reason == near.value.reason


def test_matches_raises_an_exceeded_budget_instead_of_calling_it_no_match() -> None:
    with pytest.raises(BudgetExceeded):
        compile_expression(FILTER).matches({"event": hostile_event()})


@pytest.mark.parametrize(
    ("source", "activation", "cheap"),
    [
        ("event.data.accountId", {"event": {"data": {"accountId": "acc_42"}}}, True),
        ("event.data.accountId", {"event": {"data": {"accountId": "x" * MIB}}}, False),
        ('event.data.plan == "pro" ? 1 : 0', {"event": {"data": {"plan": "pro"}}}, True),
        ("event.data.items.exists(i, i > 3)", {"event": {"data": {"items": [1] * 8}}}, True),
        ("event.data.items.exists(i, i > 3)", {"event": {"data": {"items": [1] * 9000}}}, False),
        ("event.data.items.size()", {"event": {"data": {"items": [1] * 9000}}}, False),
        ('event.data.s.matches("a+")', {"event": {"data": {"s": "a" * 64}}}, True),
        ("event.data.s.matches(event.data.p)", {"event": {"data": {"p": "a" * 20_000}}}, False),
    ],
)
def test_only_provably_cheap_evaluations_run_in_process(
    source: str, activation: dict[str, Any], cheap: bool
) -> None:
    assert compile_expression(source).is_cheap(activation) is cheap
