"""Hostile and oversized expressions: rejected with a clear reason, or evaluated; never a crash.

Everything here runs in this process. That is safe only because validation rejects the
expressions known to crash the Rust evaluator before it sees them (the `cel_must_not_compile`
fixture proves it); those that pass validation were probed in child processes first
(docs/architecture.md, Expressions).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cel
import pytest
from weir.expressions import (
    MAX_EXPRESSION_BYTES,
    BudgetExceeded,
    ExpressionError,
    check_expression,
    compile_expression,
)


@pytest.fixture
def cel_must_not_compile(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    reached: list[str] = []
    monkeypatch.setattr(cel, "compile", reached.append)
    yield
    assert reached == [], "an expression that validation should reject reached the evaluator"


def problems_of(source: str, variables: tuple[str, ...] = ("event",)) -> list[str]:
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source, variables)
    assert list(caught.value.problems) == check_expression(source, variables)
    return list(caught.value.problems)


def nested_parens(depth: int) -> str:
    return "(" * depth + "1" + ")" * depth


def exponential_map(levels: int) -> str:
    """Each level doubles a string inside the previous level's body: 2^levels characters."""
    body = f"x{levels - 1} + x{levels - 1}"
    for level in reversed(range(levels)):
        seed = f"x{level - 1}" if level else '"ab"'
        body = f"[{seed} + {seed}].map(x{level}, {body})[0]"
    return body


@pytest.mark.usefixtures("cel_must_not_compile")
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("+".join(["1"] * 20_000), "at most 4096 bytes"),  # 40 KB: a SIGSEGV in cel
        ("event.a" + ".a" * 50_000, "at most 4096 bytes"),  # 100 KB member chain
        (nested_parens(40), "nests 40 levels deep; at most 32"),
        (nested_parens(2_000), "nests 2000 levels deep"),
        ("[" * 100 + "]" * 100, "nests 99 levels deep"),  # innermost [] has no expr inside
        ("true ? 1 : " * 40 + "2", "nests 40 levels deep"),
        (exponential_map(2), "`map(…)` is nested inside `map(…)`"),
        (exponential_map(40), "`map(…)` is nested inside `map(…)`"),
        (
            "event.data.items.exists(a, event.data.items.exists(b, a == b))",
            "`exists(…)` is nested inside `exists(…)`",
        ),
        ("[1].all(a, [a].filter(b, b > 0) == [])", "`filter(…)` is nested inside `all(…)`"),
        ("event.data.x.filter(a, a).map(b, b).all(c, c)", "it uses 3 comprehension macros"),
    ],
)
def test_hostile_expressions_are_rejected_before_the_evaluator(source: str, expected: str) -> None:
    assert any(expected in problem for problem in problems_of(source))


@pytest.mark.parametrize(
    "source",
    [
        "+".join(["1"] * (MAX_EXPRESSION_BYTES // 2)),
        "!" * (MAX_EXPRESSION_BYTES - 4) + "true",
        "-" * (MAX_EXPRESSION_BYTES - 1) + "1",
        " || ".join(["false"] * 450),
        " + ".join(['"ab"'] * 500),
        "event.n" + " + event.n" * 400,
    ],
)
def test_longest_accepted_chains_evaluate_without_crashing(source: str) -> None:
    assert len(source.encode()) <= MAX_EXPRESSION_BYTES
    compile_expression(source).evaluate({"event": {"n": 1}})


def test_a_member_chain_at_the_byte_limit_evaluates_or_fails_cleanly() -> None:
    depth = (MAX_EXPRESSION_BYTES - len("event")) // 2  # 2045 selections of `.a`
    expression = compile_expression("event" + ".a" * depth)
    assert len(expression.paths[0]) == depth + 1
    payload = _nested(depth)
    # Too deep to be provably cheap, and too deep to send to a worker: refused, not a crash.
    with pytest.raises(BudgetExceeded, match="nested too deeply"):
        expression.evaluate({"event": payload})
    shallow = compile_expression("event" + ".a" * 100)
    assert shallow.evaluate({"event": _nested(100)}) == "leaf"
    assert not expression.matches({"event": {"a": {"a": 1}}})  # an int has no fields


def _nested(depth: int) -> Any:
    payload: Any = "leaf"
    for _ in range(depth):
        payload = {"a": payload}
    return payload


def test_the_byte_limit_counts_utf8_bytes_not_characters() -> None:
    source = '"' + "é" * 2100 + '" == event.name'  # 2116 characters, 4216 bytes
    assert "4216 bytes long; at most 4096 bytes" in problems_of(source)[0]


def test_nesting_at_the_limit_is_accepted() -> None:
    assert compile_expression(nested_parens(32)).evaluate({}) == 1


def test_two_comprehensions_in_sequence_are_accepted_and_has_is_not_one() -> None:
    source = "event.xs.filter(a, a > 1).map(b, b * 2) == [4] && has(event.xs)"
    assert compile_expression(source).evaluate({"event": {"xs": [1, 2]}}) is True


def test_a_comprehension_in_another_ones_receiver_is_not_nested() -> None:
    # The receiver is evaluated once, before the loop: cost adds up, it does not multiply.
    source = "event.xs.map(a, a + 1).exists(b, b == 3)"
    assert compile_expression(source).evaluate({"event": {"xs": [1, 2]}}) is True


def test_an_oversized_expression_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    from weir.expressions import _expression

    def refuse(source: str) -> Any:
        raise AssertionError("parsed an oversized expression")

    monkeypatch.setattr(_expression, "parse", refuse)
    assert "at most 4096 bytes" in problems_of("1+" * 3000 + "1")[0]
