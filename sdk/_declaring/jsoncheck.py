"""Saying which part of a step result (or a return value) is not JSON, and of what type.

"returned unserializable data" alone leaves the developer to bisect a large result; naming
`result['when']` and `datetime` points at the line to fix.
"""

from __future__ import annotations

import inspect
import json
import math
from typing import Any

_ALLOWED = "JSON takes dict, list, str, int, float, bool and None"
_MAX_DEPTH = 64  # deeper is almost surely a structure that refers to itself


def problem(value: Any, where: str = "the result") -> str | None:
    """None when `value` is JSON; otherwise what is wrong with it, in one sentence."""
    try:
        json.dumps(value, allow_nan=False)  # NaN would pass here yet be refused by Weir
        return None
    except (TypeError, ValueError):
        pass
    found = _find(value, where, 0) or f"{where} cannot be written as JSON"
    return f"{found} ({_ALLOWED})"


def _find(value: Any, path: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return f"{path} is nested too deeply, or contains itself"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} is {value!r}, which JSON cannot hold"
    if value is None or isinstance(value, str | int | float | bool):
        return None
    if isinstance(value, dict):
        return _find_in_dict(value, path, depth)
    if isinstance(value, list | tuple):
        items = enumerate(value)
        return next((p for i, v in items if (p := _find(v, f"{path}[{i}]", depth + 1))), None)
    hint = "; did you forget to await it?" if inspect.isawaitable(value) else ""
    return f"{path} is of type {type(value).__name__}{hint}"


def _find_in_dict(value: dict[Any, Any], path: str, depth: int) -> str | None:
    for key, item in value.items():
        if key is not None and not isinstance(key, str | int | float | bool):
            return f"{path} has a key of type {type(key).__name__}"
        found = _find(item, f"{path}[{key!r}]", depth + 1)
        if found:
            return found
    return None
