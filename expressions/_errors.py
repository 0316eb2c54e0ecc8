"""The errors `weir.expressions` raises: one before evaluation, two during it."""

from __future__ import annotations


class ExpressionError(ValueError):
    """An expression is invalid; found when it is checked or compiled, never per event."""

    def __init__(self, source: str, *problems: str) -> None:
        self.source = source
        self.problems = problems  # each one: what is wrong and what is allowed, for a human
        self.problem = "; ".join(problems)
        super().__init__(f"invalid expression {_excerpt(source)}: {self.problem}")

    def __reduce__(self) -> tuple[type[ExpressionError], tuple[str, ...]]:
        # Rebuild from the parts (not the message) when sent to another process.
        return (type(self), (self.source, *self.problems))


class EvaluationError(Exception):
    """Evaluating a valid expression failed at run time (missing field, type error, panic)."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"evaluating {_excerpt(source)} failed: {reason}")

    def __reduce__(self) -> tuple[type[EvaluationError], tuple[str, str]]:
        return (type(self), (self.source, self.reason))


class BudgetExceeded(EvaluationError):
    """An evaluation ran past its time, memory or result-size budget and was stopped.

    The data, not the expression, is to blame (the same expression is cheap on small events),
    so callers refuse this one event's admission instead of treating it as a normal error.
    """

    def __reduce__(self) -> tuple[type[BudgetExceeded], tuple[str, str]]:
        return (type(self), (self.source, self.reason))


def _excerpt(source: str, limit: int = 80) -> str:
    # Expressions may be 4 KB long; an error message should stay readable.
    text = source if len(source) <= limit else source[: limit - 1] + "…"
    return f"`{text}`"
