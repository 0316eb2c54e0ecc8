"""Readers for one field of a wire config: each returns a typed value or records a problem.

Nothing here raises on bad input: a wrong type, a missing field or an out-of-range value
becomes a Problem naming the option path and what is allowed, and the reader returns None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from weir.platform.foundation.jsonvalues import control_char
from weir.platform.functions.parse.cel_checks import expression_problems
from weir.platform.functions.parse.durations import format_duration, parse_duration_ms
from weir.platform.functions.problems import Issues


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages ("got a string")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def got(value: Any) -> str:
    """ "got 'ten' (a string)", "got true (a boolean)", "got null" for messages."""
    kind = json_type(value)
    if isinstance(value, bool):
        return f"got {str(value).lower()} ({kind})"
    if isinstance(value, str | int | float):
        shown = repr(value)
        return f"got {shown[:60] + '…' if len(shown) > 60 else shown} ({kind})"
    return f"got {kind}"


def refuse(issues: Issues, path: str | None, wanted: str, value: Any) -> None:
    """Record that `path` is missing or of the wrong kind, saying what it must be."""
    if value is None:
        issues.add(path, f"is missing; it must be {wanted}")
    else:
        issues.add(path, f"must be {wanted}, {got(value)}")


def read_object(issues: Issues, value: Any, path: str | None) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    refuse(issues, path, "an object", value)
    return None


def read_int(
    issues: Issues, value: Any, path: str, low: int, high: int | None = None
) -> int | None:
    """An integer in low..high (bools and floats are refused: SDK models are strict)."""
    wanted = f"an integer ≥ {low}" if high is None else f"an integer from {low} to {high}"
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(issues, path, wanted, value)
        return None
    if value < low or (high is not None and value > high):
        issues.add(path, f"must be {wanted}, got {value}")
        return None
    return value


def read_text(issues: Issues, value: Any, path: str, max_length: int | None = None) -> str | None:
    """A non-empty string of printable text, at most `max_length` characters."""
    if not isinstance(value, str) or not value:
        refuse(issues, path, "a non-empty string", value)
        return None
    if max_length is not None and len(value) > max_length:
        issues.add(path, f"must be at most {max_length} characters, got {len(value)}")
        return None
    found = control_char(value)
    if found:  # names and ids: NUL cannot be stored in PostgreSQL, a newline forges log lines
        issues.add(
            path, f"holds the control character {found.group()!r}; it must be printable text"
        )
        return None
    return value


def read_duration(
    issues: Issues, value: Any, path: str, low_ms: int, high_ms: int | None = None
) -> int | None:
    """A duration string within low..high, in milliseconds."""
    span = _span(low_ms, high_ms)
    if not isinstance(value, str):
        refuse(issues, path, f"a duration string{span}, like '30s'", value)
        return None
    try:
        ms = parse_duration_ms(value)
    except ValueError as error:
        issues.add(path, str(error))
        return None
    if ms < low_ms or (high_ms is not None and ms > high_ms):
        issues.add(path, f"must be a duration{span}, got {value!r}")
        return None
    return ms


def _span(low_ms: int, high_ms: int | None) -> str:
    if high_ms is not None:
        return f" from {format_duration(low_ms)} to {format_duration(high_ms)}"
    return f" of at least {format_duration(low_ms)}" if low_ms else ""


def read_expression(issues: Issues, value: Any, path: str, variables: Sequence[str]) -> str | None:
    """An optional CEL expression; absent or "" means none (as SDKs send it)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        issues.add(path, f"must be an expression string, {got(value)}")
        return None
    return value if check_expression(issues, value, path, variables) else None


def check_expression(issues: Issues, source: str, path: str, variables: Sequence[str]) -> bool:
    """Record why `source` does not compile (or cannot be stored); True when it does."""
    found = expression_problems(source, variables)
    if "\x00" in source:  # even inside a CEL string: PostgreSQL text cannot hold a NUL
        found = [*found, "it holds a NUL character, which cannot be stored; write '\\x00'"]
    names = ", ".join(variables)
    for message in found:
        issues.add(path, f"invalid expression {source!r} (variables: {names}): {message}")
    return not found


def read_choice(issues: Issues, value: Any, path: str, choices: Sequence[str]) -> str | None:
    if isinstance(value, str) and value in choices:
        return value
    quoted = [repr(choice) for choice in choices]
    allowed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    refuse(issues, path, allowed, value)
    return None


def read_list(issues: Issues, value: Any, path: str, max_items: int) -> list[Any] | None:
    if not isinstance(value, list):
        refuse(issues, path, "a list", value)
        return None
    if len(value) > max_items:
        issues.add(path, f"at most {max_items} entries are allowed, got {len(value)}")
        return None
    return value
