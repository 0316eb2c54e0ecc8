"""An expression evaluation's outcome as a comparable pair, for tests that check two ways of
evaluating agree (a CEL worker, a held event, an ingest worker)."""

from collections.abc import Callable
from typing import Any

from weir.expressions import BudgetExceeded, EvaluationError


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", value), ("over", the budget's reason) or ("error", the reason)."""
    try:
        return ("ok", call())
    except BudgetExceeded as over:
        return ("over", over.reason)
    except EvaluationError as error:
        return ("error", error.reason)
