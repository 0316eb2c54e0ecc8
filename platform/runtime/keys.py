"""Flow-control keys of a run: evaluate a key expression into readable text and a hash."""

from dataclasses import dataclass
from typing import Any

from weir.expressions import (
    EvaluationError,
    ExpressionError,
    compile_expression,
    key_hash,
    stable_key,
)


@dataclass(frozen=True)
class EvaluatedKey:
    text: str  # readable, cut to 512 bytes
    hash: str
    warning: str | None = None


def evaluate_key(namespace: str, expression: str | None, event: dict[str, Any]) -> EvaluatedKey:
    """A failing key expression puts the run in the shared empty-key bucket, with a warning."""
    if expression is None:
        return EvaluatedKey("", key_hash(namespace))
    try:
        text = stable_key(compile_expression(expression).evaluate({"event": event}))
    except (EvaluationError, ExpressionError) as exc:
        warning = f"key expression {expression!r} failed ({exc}); the run uses the empty key"
        return EvaluatedKey("", key_hash(f"{namespace}\x00{expression}\x00"), warning)
    return EvaluatedKey(text[:512], key_hash(f"{namespace}\x00{expression}\x00{text}"))


def evaluate_value(expression: str, event: dict[str, Any]) -> Any:
    try:
        return compile_expression(expression).evaluate({"event": event})
    except (EvaluationError, ExpressionError):
        return None


def expression_holds(expression: str | None, activation: dict[str, Any]) -> bool:
    if expression is None:
        return True
    try:
        return compile_expression(expression, tuple(activation)).matches(activation)
    except ExpressionError:
        return False
