"""Flow-control keys of a run: evaluate a key expression into readable text and a hash.

Every evaluation is bounded (see weir.expressions: cheap ones in-process, costly ones in a
worker under a time, memory and result-size budget). An exceeded budget is the event's fault,
not the expression's: admission evaluates a function's expressions up front (`prepare`) and
refuses the event with the reason, before any gate has changed state; the gates then reuse
those results. Outside admission (wait and cancel matching) it counts as no match.
"""

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from weir.expressions import (
    BudgetExceeded,
    EvaluationError,
    ExpressionError,
    compile_expression,
    key_hash,
    stable_key,
)

log = logging.getLogger("weir.runtime")
_local = threading.local()  # the writer thread's memo of the admission in progress
Failure = EvaluationError | ExpressionError


@dataclass(frozen=True)
class EvaluatedKey:
    text: str  # readable, cut to 512 bytes
    hash: str
    warning: str | None = None


@contextmanager
def evaluated_once() -> Iterator[None]:
    """Within it (one admission), each expression is evaluated once per activation."""
    outer = getattr(_local, "memo", None)
    _local.memo = {}
    try:
        yield
    finally:
        _local.memo = outer


def prepare(expressions: Iterable[str], activation: dict[str, Any]) -> BudgetExceeded | None:
    """Evaluate each now (inside `evaluated_once`); the first exceeded budget, if any."""
    for expression in expressions:
        outcome = _outcome(expression, activation)
        if isinstance(outcome, BudgetExceeded):
            return outcome
    return None


def evaluate_key(namespace: str, expression: str | None, event: dict[str, Any]) -> EvaluatedKey:
    """A failing key expression puts the run in the shared empty-key bucket, with a warning."""
    if expression is None:
        return EvaluatedKey("", key_hash(namespace))
    value = _outcome(expression, {"event": event})
    if isinstance(value, Failure):
        warning = f"key expression {expression!r} failed ({value}); the run uses the empty key"
        return EvaluatedKey("", key_hash(f"{namespace}\x00{expression}\x00"), warning)
    text = stable_key(value)
    return EvaluatedKey(text[:512], key_hash(f"{namespace}\x00{expression}\x00{text}"))


def evaluate_value(expression: str, event: dict[str, Any]) -> Any:
    value = _outcome(expression, {"event": event})
    return None if isinstance(value, Failure) else value


def condition(expression: str | None, activation: dict[str, Any]) -> bool:
    """Whether it holds; raises BudgetExceeded so that the caller can say why it refused."""
    if expression is None:
        return True
    value = _outcome(expression, activation)
    if isinstance(value, BudgetExceeded):
        raise value
    return value is True


def expression_holds(expression: str | None, activation: dict[str, Any]) -> bool:
    """Whether it holds; an exceeded budget counts as no match (and is logged)."""
    try:
        return condition(expression, activation)
    except BudgetExceeded as over:
        log.warning("no match: %s", over)
        return False


def _outcome(expression: str, activation: dict[str, Any]) -> Any:
    """The result, or the Failure; from the memo when this admission has one."""
    memo: dict[Any, tuple[dict[str, Any], Any]] | None = getattr(_local, "memo", None)
    # The memo keeps the activation's values alive, so their ids cannot be reused meanwhile.
    key = (expression, tuple((name, id(value)) for name, value in activation.items()))
    if memo is not None and key in memo:
        return memo[key][1]
    try:
        value = compile_expression(expression, tuple(activation)).evaluate(activation)
    except (EvaluationError, ExpressionError) as failure:
        value = failure
    if memo is not None:
        memo[key] = (activation, value)
    return value
