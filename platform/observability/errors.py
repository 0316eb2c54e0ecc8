"""A step's or a run's error as log fields, with the app's stack trace when it sent one.

The traceback of a step that raised is the first thing a developer needs; the SDK sends it in
the error object, so Weir's own log shows it beside the run's ids.
"""

from collections.abc import Mapping
from typing import Any

MAX_STACK = 16_000  # characters: a deep recursion should not flood the log


def error_fields(error: Mapping[str, Any] | None) -> dict[str, str]:
    """`error` (the message), and `stack` when the error object carries one (its last line
    names the exception's type)."""
    if not error:
        return {}
    fields = {"error": str(error.get("message", ""))}
    stack = error.get("stack")
    if isinstance(stack, str) and stack.strip():
        fields["stack"] = stack.rstrip()[-MAX_STACK:]  # the end holds the raising line
    return fields
