"""Flow-control keys of a run: evaluate a key expression into readable text and a hash.

Every evaluation is bounded (see weir.expressions: cheap ones in-process, costly ones in a
worker under a time, memory and result-size budget). An exceeded budget is the event's fault,
not the expression's: admission evaluates a function's expressions up front (`prepare`) and
refuses the event with the reason, before any gate has changed state; the gates then reuse
those results. Outside admission (wait and cancel matching) it counts as no match.

A large event may arrive with its costly evaluations made already, before the transaction, by
the process that parsed it (`Foresight`, `Document.evaluated`): the writer takes those
outcomes, and charges their time to the event, instead of evaluating again.
"""

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from weir.expressions import (
    BudgetExceeded,
    Document,
    EvaluationError,
    Expression,
    ExpressionError,
    NotHeld,
    compile_expression,
    current_budget,
    key_hash,
    stable_key,
)
from weir.expressions.held import reads
from weir.platform.foundation.record_type import record

log = logging.getLogger("weir.runtime")
_local = threading.local()  # the writer thread's memo of the admission in progress
Failure = EvaluationError | ExpressionError
# One event may meet many functions, each with costly expressions. Together they may hold the
# writer for this many expression budgets; past that, its costly evaluations are refused at
# once. Spending is tracked for the last few payloads (by identity, kept alive meanwhile:
# a wait's match charges both its run's event and the new one).
EVENT_BUDGETS = 2
_TRACKED_EVENTS = 2
_SLOW_MS = 1.0  # cheaper evaluations are not worth tracking


@record
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


def key_text(expression: str, event: dict[str, Any]) -> str | Failure | BudgetExceeded:
    """The key's whole text (not cut), or why the expression gave none."""
    value = _outcome(expression, {"event": event})
    if isinstance(value, EvaluationError | ExpressionError | BudgetExceeded):
        return value
    return stable_key(value)


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
    if memo is None:
        return _evaluate(expression, activation)
    # The memo keeps the activation's values alive, so their ids cannot be reused meanwhile.
    key = (expression, *[id(value) for value in activation.values()], *activation)
    found = memo.get(key)
    if found is not None:
        return found[1]
    value = _evaluate(expression, activation)
    memo[key] = (activation, value)
    return value


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    spent = _spending()
    try:
        compiled = compile_expression(expression, tuple(activation))
        if spent and _overspent(spent, activation) and not compiled.is_cheap(activation):
            return BudgetExceeded(expression, _overspent_reason())
        foreseen = _foreseen(expression, activation)
        if foreseen is not None:  # evaluated ahead (Foresight): its outcome, at its cost
            value, elapsed_ms = foreseen
            if elapsed_ms >= _SLOW_MS:
                _charge(spent, activation, elapsed_ms)
            return value
        start = time.perf_counter()
        try:
            return compiled.evaluate(activation)
        finally:
            elapsed_ms = (time.perf_counter() - start) * 1000
            if elapsed_ms >= _SLOW_MS:
                _charge(spent, activation, elapsed_ms)
    except (EvaluationError, ExpressionError) as failure:
        return failure


def _foreseen(expression: str, activation: dict[str, Any]) -> tuple[Any, float] | None:
    if len(activation) != 1:
        return None
    event = activation.get("event")
    if isinstance(event, Document):
        return event.evaluated.get(expression)
    ahead: tuple[dict[str, Any], dict[str, tuple[Any, float]]] | None = getattr(
        _local, "foreseen", None
    )
    return ahead[1].get(expression) if ahead is not None and ahead[0] is event else None


@contextmanager
def foreseen(event: dict[str, Any], outcomes: dict[str, tuple[Any, float]]) -> Iterator[None]:
    """Within it, evaluations over `event` (this very object) take `outcomes`, made ahead
    (`Foresight`) over a small event, as a Document's `evaluated` are taken."""
    outer = getattr(_local, "foreseen", None)
    _local.foreseen = (event, outcomes)
    try:
        yield
    finally:
        _local.foreseen = outer


class Foresight:
    """Admission's evaluations over one event made ahead of its transaction, with what
    `_evaluate` does around them (the event's total budget included), so that the writer,
    taking their outcomes in the same order, charges and refuses as if it evaluated them.

    `evaluate` evaluates a costly expression where the event is held parsed; where it cannot
    (NotHeld), the expression is evaluated the usual way (`Expression.evaluate`), still ahead.
    An expression reading a field of `unknown` stops the foresight: the writer evaluates it
    and the rest. Cheap expressions are evaluated here and not kept: the writer evaluates them
    again in microseconds. The same expression met again (another function's) is charged
    again and gives the same outcome."""

    def __init__(
        self,
        event: dict[str, Any],
        evaluate: Callable[[Expression], Any],
        unknown: frozenset[str] = frozenset(),
        parse_ms: float = 0.0,
    ) -> None:
        """`unknown`: top-level fields of `event` whose value is not final yet (an id Weir
        makes when it stores the event): an expression reading one is left to the writer.
        `parse_ms`: the time the event took to parse where `evaluate` holds it, which counts
        toward the first costly evaluation (the holder gives that one the rest of its budget),
        as it would in a CEL worker parsing the event's bytes."""
        self.activation = {"event": event}
        self.evaluate = evaluate
        self.unknown = unknown
        self.outcomes: dict[str, tuple[Any, float]] = {}
        self.spent_ms = 0.0
        self._parse_ms = parse_ms

    def outcome(self, expression: str) -> Any:
        """The value, or the Failure or BudgetExceeded, as `_evaluate` gives it."""
        try:
            compiled = compile_expression(expression, ("event",))
            if any(reads(compiled, "event", name) for name in self.unknown):
                raise NotHeld(f"{expression!r} reads a field not known before the event is stored")
            if compiled.is_cheap(self.activation):
                return compiled.evaluate(self.activation)
        except (EvaluationError, ExpressionError) as failure:
            return failure
        if self.spent_ms >= EVENT_BUDGETS * current_budget().time_ms:
            return BudgetExceeded(expression, _overspent_reason())
        if expression not in self.outcomes:  # a repeat (another function's) is charged again
            start = time.perf_counter()
            try:
                try:
                    value = self.evaluate(compiled)
                except NotHeld:  # e.g. its holder was stopped: the usual way, still ahead
                    value = compiled.evaluate(self.activation)
            except EvaluationError as failure:
                value = failure
            elapsed_ms = (time.perf_counter() - start) * 1000 + self._parse_ms
            self._parse_ms = 0.0
            self.outcomes[expression] = (value, elapsed_ms)
        value, elapsed_ms = self.outcomes[expression]
        if elapsed_ms >= _SLOW_MS:
            self.spent_ms += elapsed_ms
        return value


def _spending() -> "OrderedDict[int, tuple[Any, float]]":
    spent: OrderedDict[int, tuple[Any, float]] | None = getattr(_local, "spent", None)
    if spent is None:
        spent = _local.spent = OrderedDict()
    return spent


def _overspent(spent: "OrderedDict[int, tuple[Any, float]]", activation: dict[str, Any]) -> bool:
    limit = EVENT_BUDGETS * current_budget().time_ms
    return any(spent.get(id(value), (None, 0.0))[1] >= limit for value in activation.values())


def _charge(
    spent: "OrderedDict[int, tuple[Any, float]]", activation: dict[str, Any], ms: float
) -> None:
    for value in activation.values():
        _, before = spent.pop(id(value), (value, 0.0))
        spent[id(value)] = (value, before + ms)  # the value is kept so its id stays its own
    while len(spent) > _TRACKED_EVENTS:
        spent.popitem(last=False)


def _overspent_reason() -> str:
    total = EVENT_BUDGETS * current_budget().time_ms
    return f"the event already used its total expression budget of {total} ms"
