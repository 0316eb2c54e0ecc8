"""Which member paths an expression reads (these decide what each evaluation is given)."""

from __future__ import annotations

import pytest
from weir.expressions import compile_expression


@pytest.mark.parametrize(
    ("source", "paths"),
    [
        ("event.data.id", [("event", "data", "id")]),
        ("event", [("event",)]),
        ("size(event) > 0", [("event",)]),
        ("has(event.data.x)", [("event", "data", "x")]),
        ('event.name.startsWith("a/")', [("event", "name")]),  # a method is not a field
        ('event.data["a-b"].c', [("event", "data")]),  # an index stops the path
        ("event.data.items[0].id", [("event", "data", "items")]),
        ("(event.data).id", [("event", "data")]),
        ("event.data.a == 1 && event.data.a.b == 2", [("event", "data", "a")]),  # minimal
        (
            "event.data.b || event.data.a || event.name",
            [("event", "data", "a"), ("event", "data", "b"), ("event", "name")],  # sorted
        ),
        ("event.a[event.b.c].d", [("event", "a"), ("event", "b", "c")]),
        ("event.xs.exists(x, x.id == event.data.id)", [("event", "data", "id"), ("event", "xs")]),
        ("event.xs.exists(event, event.y)", [("event", "xs")]),  # the loop variable shadows
        ("[1, 2].map(n, n * 2) == [2, 4]", []),
        ("type(1) == int", []),
    ],
)
def test_paths(source: str, paths: list[tuple[str, ...]]) -> None:
    assert list(compile_expression(source).paths) == paths


def test_paths_of_several_variables() -> None:
    expression = compile_expression("async.data.id == event.data.id", ("event", "async"))
    assert expression.paths == (("async", "data", "id"), ("event", "data", "id"))


def test_an_unreferenced_variable_is_not_passed_to_the_evaluator() -> None:
    expression = compile_expression("event.data.x == 1", ("event", "async"))
    assert expression.evaluate({"event": {"data": {"x": 1}}, "async": object()}) is True
