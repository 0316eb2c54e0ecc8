"""A plain field path is answered by lookups, and gives exactly what the Rust evaluator gives:
the same value of the same type, or (where lookups do not answer) the evaluator's own value or
error."""

from __future__ import annotations

import math
from typing import Any

import pytest
from weir.expressions import BudgetExceeded, EvaluationError, compile_expression, current_budget
from weir.expressions._evaluate import execute
from weir.expressions._selector import NOT_PLAIN, path_of, select

VALUES: list[Any] = [
    "acme",
    "",
    "ünïcode ✓",
    "lone \ud800 surrogate",  # the evaluator refuses it: so do lookups, by passing it on
    "low \udcff surrogate",
    "a pair \ud83d\ude00 of them",  # two code points in a Python str: refused too
    "\U0001f600 astral",
    True,
    False,
    None,
    0,
    -1,
    2**63 - 1,
    -(2**63),
    2**63,  # past 64 bits: left to the evaluator
    -(2**63) - 1,
    1.5,
    -0.0,
    float("inf"),
    float("nan"),
    [1, "x"],
    {"nested": {"deep": 1}},
]


def by_evaluator(source: str, activation: dict[str, Any]) -> Any:
    program = compile_expression(source)._program
    try:
        return execute(program, source, activation)
    except EvaluationError as error:
        return error


def outcome(source: str, activation: dict[str, Any]) -> Any:
    try:
        return compile_expression(source).evaluate(activation)
    except EvaluationError as error:
        return error


def same(a: Any, b: Any) -> bool:
    if isinstance(a, EvaluationError) and isinstance(b, EvaluationError):
        return str(a) == str(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b and (not isinstance(a, float) or str(a) == str(b))


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_path_gives_what_the_evaluator_gives(value: Any) -> None:
    activation = {"event": {"data": {"k": value}}}
    assert same(outcome("event.data.k", activation), by_evaluator("event.data.k", activation))


@pytest.mark.parametrize(
    "event",
    [
        {"data": {}},  # no such key
        {"data": {"other": 1}},
        {"data": "text"},  # not a map on the way
        {"data": ["k"]},
        {"data": None},
        {},
    ],
    ids=repr,
)
def test_where_lookups_find_nothing_the_evaluator_answers_as_before(event: Any) -> None:
    activation = {"event": event}
    expected = by_evaluator("event.data.k", activation)
    assert isinstance(expected, EvaluationError)
    assert same(outcome("event.data.k", activation), expected)


def test_only_a_bare_path_is_answered_by_lookups() -> None:
    assert path_of("event.data.customer_id") == ("event", "data", "customer_id")
    assert compile_expression("event.data.k")._path == ("event", "data", "k")
    for source in ("event", "event.data['k']", "event.data.k + ''", " event.data.k", "a.b.c()"):
        assert path_of(source) is None or compile_expression(source)._path is None, source


def test_lookups_pass_over_what_is_not_a_plain_dict() -> None:
    class Mapped(dict[str, Any]):
        pass

    assert select({"event": Mapped(data={"k": "x"})}, ("event", "data", "k")) is NOT_PLAIN
    assert select({"event": {"data": {"k": b"x"}}}, ("event", "data", "k")) is NOT_PLAIN
    assert select({"event": {"data": {"k": "a\ud800"}}}, ("event", "data", "k")) is NOT_PLAIN
    assert select({"event": {"data": {"k": "ü"}}}, ("event", "data", "k")) == "ü"
    assert select({"event": {"data": {"k": "x"}}}, ("event", "data", "k")) == "x"


def test_a_result_past_the_size_budget_is_still_refused() -> None:
    activation = {"event": {"data": {"k": "x" * 2_000_000}}}
    with pytest.raises(BudgetExceeded):
        compile_expression("event.data.k").evaluate(activation)


def test_lookups_answer_exactly_where_the_evaluator_would_run_in_process() -> None:
    """The leaf rule (`_cheap_leaf`) agrees with `is_cheap` on the whole activation, around
    the text length and the path depth where evaluations stop being cheap."""
    budget = current_budget()
    key = compile_expression("event.data.k")
    for length in range(0, 20_000, 61):
        text = "x" * length
        activation = {"event": {"data": {"k": text}, "other": "y" * 5_000}}
        assert key._cheap_leaf(text, budget) == key.is_cheap(activation), length
    for depth in range(1, 140):
        chain = compile_expression("event" + ".a" * depth)
        activation = {"event": _nested(depth, "leaf")}
        assert chain._cheap_leaf("leaf", budget) == chain.is_cheap(activation), depth


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = {"a": leaf}
    return leaf
