"""Compiling: the cache, the variables, the errors, and the evaluator's own failures."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import pytest
from weir.expressions import (
    EvaluationError,
    Expression,
    ExpressionError,
    _evaluate,
    check_expression,
    compile_expression,
)


def test_compiling_is_cached_per_source_and_variables() -> None:
    first = compile_expression("event.data.id == 'a'")
    assert compile_expression("event.data.id == 'a'") is first
    assert compile_expression("event.data.id == 'a'", ["event"]) is first
    with_async = compile_expression("event.data.id == 'a'", ("event", "async"))
    assert with_async is not first
    assert with_async.variables == frozenset({"event", "async"})


def test_an_expression_describes_itself() -> None:
    expression = compile_expression("event.data.id == async.data.id", ("event", "async"))
    assert isinstance(expression, Expression)
    assert expression.source == "event.data.id == async.data.id"
    assert expression.paths == (("async", "data", "id"), ("event", "data", "id"))
    assert "_program" not in repr(expression)


def test_async_is_unknown_unless_allowed() -> None:
    problems = check_expression("async.data.id == event.data.id")
    assert problems == [
        "unknown identifier `async`; only `event` may be referenced "
        "(plus a comprehension's own loop variable inside it)"
    ]
    assert check_expression("async.data.id == event.data.id", ("event", "async")) == []


def test_an_unknown_identifier_names_itself_and_the_allowed_variables() -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression("evnt.data.id == 1 && user.id == 2", ("event", "async"))
    assert caught.value.problems == (
        "unknown identifier `evnt`; only `async` and `event` may be referenced "
        "(plus a comprehension's own loop variable inside it)",
        "unknown identifier `user`; only `async` and `event` may be referenced "
        "(plus a comprehension's own loop variable inside it)",
    )


def test_a_loop_variable_is_unknown_outside_its_comprehension() -> None:
    problems = check_expression("event.xs.exists(x, x > 1) && x > 2")
    assert len(problems) == 1
    assert problems[0].startswith("unknown identifier `x`")


def test_check_lists_every_problem_at_once() -> None:
    source = "foo + " + "(" * 33 + "event.xs.map(a, a.map(b, b))" + ")" * 33 + " + Bar{x: 1}"
    problems = check_expression(source)
    assert len(problems) == 5
    assert problems[0].startswith("unknown identifier `foo`")
    assert problems[1].startswith("unknown identifier `Bar`")
    assert problems[2].startswith("it nests 35 levels deep; at most 32 levels")
    assert problems[3].startswith("`map(…)` is nested inside `map(…)`")
    assert problems[4].startswith("object construction `Name{…}` is not supported")


def test_an_error_names_the_expression_and_its_problem() -> None:
    with pytest.raises(ExpressionError) as caught:
        compile_expression("event.data.id ==")
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.source == "event.data.id =="
    assert error.problem.startswith("syntax error at line 1, column 15: unexpected end of")
    assert "event.data.id ==\n" in error.problem  # the line, then a caret under the column
    assert str(error).startswith("invalid expression `event.data.id ==`: syntax error")


def test_a_long_expression_is_shortened_in_the_message() -> None:
    source = "event.data.id == " + '"x" + ' * 20 + "1 +"
    with pytest.raises(ExpressionError) as caught:
        compile_expression(source)
    assert str(caught.value).startswith(f"invalid expression `{source[:79]}…`: ")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("event.data.", "syntax error at line 1, column 11: unexpected end of expression"),
        ("event.data.id = 1", "syntax error at line 1, column 15: unexpected character '='"),
        ('event.name == "open', "unexpected character '\"'"),
        ("Foo{a: 1}", "object construction `Name{…}` is not supported; use a map literal"),
        (".event.name", "a leading dot (`.name`) is not supported"),
        ("has(event)", "the evaluator rejected it: ERROR: <input>:1:5: invalid argument to has()"),
        ('"\\z" == event.name', "the evaluator rejected it:"),
    ],
)
def test_clear_messages(source: str, expected: str) -> None:
    assert any(expected in problem for problem in check_expression(source))


def test_variables_must_be_identifiers() -> None:
    with pytest.raises(TypeError, match="collection of names"):
        compile_expression("event", "event")
    with pytest.raises(ValueError, match="CEL identifiers"):
        check_expression("event", ("event", "my-var"))


class FakePanic(BaseException):
    """Stands in for pyo3_runtime.PanicException, which derives from BaseException only."""


class PanickingProgram:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def execute(self, activation: object) -> object:
        raise self.error


def test_an_evaluator_panic_becomes_an_evaluation_error() -> None:
    with pytest.raises(EvaluationError, match="the evaluator panicked: boom") as caught:
        _evaluate.execute(PanickingProgram(FakePanic("boom")), "event", {})
    assert isinstance(caught.value.__cause__, FakePanic)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupts_are_not_swallowed(interrupt: type[BaseException]) -> None:
    with pytest.raises(interrupt):
        _evaluate.execute(PanickingProgram(interrupt()), "event", {})


def test_a_real_panic_at_compile_becomes_an_expression_error() -> None:
    # 100k nested parentheses make cel panic. Our validation never lets that through, so the
    # evaluator wrapper is driven directly, in a child process in case the panic ever aborts.
    script = textwrap.dedent(
        """
        from weir.expressions import ExpressionError
        from weir.expressions._evaluate import compile_program
        try:
            compile_program("(" * 100_000 + "1" + ")" * 100_000)
        except ExpressionError as error:
            print(error.problem)
        """
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RUST_BACKTRACE": "0"},
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.startswith("the evaluator panicked on it: ")


def test_errors_survive_pickling() -> None:
    # Errors may cross process boundaries (worker pools); they keep their parts.
    with pytest.raises(ExpressionError) as caught:
        compile_expression("nope.x && (")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.source, copy.problems, str(copy)) == (
        caught.value.source,
        caught.value.problems,
        str(caught.value),
    )
    evaluation = pickle.loads(pickle.dumps(EvaluationError("event.x", "no such key")))
    assert str(evaluation) == "evaluating `event.x` failed: no such key"


def test_with_no_variables_any_identifier_is_unknown() -> None:
    assert check_expression("1 + 1", ()) == []
    assert check_expression("event.x", ()) == [
        "unknown identifier `event`; no variables may be referenced "
        "(plus a comprehension's own loop variable inside it)"
    ]
