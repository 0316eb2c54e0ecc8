"""A plain field path (`event.data.customer`), answered by dict lookups where they give exactly
what the evaluator gives.

Most key expressions are such a path. Through the evaluator one costs about 8 µs (pruning,
the cost check, crossing into Rust and back), by lookups well under 1 µs. Only values that
cross into the evaluator and back unchanged are answered here: strings (of valid UTF-8: the
evaluator refuses a lone surrogate), booleans, null, floats and 64-bit integers, reached
through plain dicts. Anything else (a missing field, a list, a Document, an integer past 64
bits) goes to the evaluator, which gives its own value or error as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PATH = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*(?:\.[_a-zA-Z][_a-zA-Z0-9]*)+")
_UNCHANGED = frozenset({str, bool, float, type(None)})
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
NOT_PLAIN = object()  # `select`'s answer when the evaluator must decide


def path_of(source: str) -> tuple[str, ...] | None:
    """The field path `source` is nothing but (`a.b.c`), or None."""
    return tuple(source.split(".")) if _PATH.fullmatch(source) else None


def select(activation: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path`, or NOT_PLAIN."""
    value = activation.get(path[0], NOT_PLAIN)
    for name in path[1:]:
        if type(value) is not dict:  # also NOT_PLAIN itself, a Document, a dict subclass
            return NOT_PLAIN
        value = value.get(name, NOT_PLAIN)
    kind = type(value)
    if kind is str and not value.isascii() and not _utf8(value):
        return NOT_PLAIN
    if kind in _UNCHANGED or (kind is int and _I64_MIN <= value <= _I64_MAX):
        return value
    return NOT_PLAIN


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True
