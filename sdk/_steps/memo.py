"""Reading memoized step state (§10): `{"data"}`/`{"error"}` wrappers, else bare values."""

from __future__ import annotations

from typing import Any

from weir.sdk._errors import StepError

_WRAPPER_KEYS = frozenset({"data", "error"})


def unwrap(memo: Any) -> Any:
    """The step's result; raises StepError for a well-formed `{"error": {...}}` memo."""
    if not isinstance(memo, dict) or not set(memo) <= _WRAPPER_KEYS:
        return memo  # bare value: a matched event, a sleep's null, ...
    error = memo.get("error")
    if error is None:
        return memo.get("data")
    if _is_error_object(error):
        raise StepError(error["message"], error["name"], _stack(error))
    return memo  # a malformed error is not an error: the whole memo is the result


def _is_error_object(error: Any) -> bool:
    return (
        isinstance(error, dict)
        and isinstance(error.get("name"), str)
        and isinstance(error.get("message"), str)
    )


def _stack(error: dict[str, Any]) -> str | None:
    stack = error.get("stack")
    return stack if isinstance(stack, str) else None
