"""The Rust evaluator (`cel`, common-expression-language), behind our two errors.

Its panics surface as `pyo3_runtime.PanicException`, which derives from BaseException only, so
both calls catch BaseException; interrupts and exits still propagate.
"""

from __future__ import annotations

from typing import Any

import cel
from weir.expressions._errors import EvaluationError, ExpressionError
from weir.expressions._worker import reason

_PASS_THROUGH = (KeyboardInterrupt, SystemExit)


def compile_program(source: str) -> Any:
    """A `cel.Program` for `source`, which our own checks have already accepted."""
    try:
        return cel.compile(source)
    except _PASS_THROUGH:
        raise
    except BaseException as error:
        raise ExpressionError(source, f"the evaluator {_verdict(source, error)}") from None


def execute(program: Any, source: str, activation: dict[str, Any]) -> Any:
    try:
        return program.execute(activation)
    except _PASS_THROUGH:
        raise
    except BaseException as error:
        raise EvaluationError(source, reason(error)) from error


def _verdict(source: str, error: BaseException) -> str:
    if not isinstance(error, Exception):
        return f"panicked on it: {_shorten(str(error))}"
    echo = f"Failed to parse expression '{source}': "  # it repeats the source; we name it already
    return f"rejected it: {_shorten(str(error).removeprefix(echo))}"


def _shorten(text: str, limit: int = 300) -> str:
    # The evaluator's messages may quote the whole (up to 4 KB) expression.
    return text if len(text) <= limit else text[: limit - 1] + "…"
