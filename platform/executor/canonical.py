"""Canonical JSON (RFC 8785) for request bodies, fast where that is exact.

`rfc8785` is pure Python and costs about twenty times what `orjson` does on a typical call
body. For values made only of objects with ASCII keys, arrays, strings, booleans, null and
integers within ±(2^53-1), orjson with sorted keys writes exactly the RFC 8785 bytes: the same
minimal string escapes, UTF-8 left as it is, no whitespace, and (keys being ASCII) the same
key order as RFC 8785's UTF-16 order. So do floats with a fraction between 1e-5 and 1e15 in
magnitude (a timestamp in seconds, a price): both print the shortest digits that read back
as the same double, in plain decimal notation. Anything else (a whole-number float, which
ECMAScript prints without ".0"; a float so large or small that either prints an exponent; a
non-ASCII key; an integer past 2^53-1, which RFC 8785 refuses; a string orjson cannot
encode) goes through `rfc8785` itself, errors included. `tests/unit/platform/test_canonical.py`
checks the two agree.
"""

from typing import Any

import orjson
import rfc8785

MAX_EXACT_INT = 2**53 - 1
# Floats printed alike by both (see above): NaN and infinities fail the bounds.
PLAIN_FLOAT_MIN, PLAIN_FLOAT_MAX = 1e-5, 1e15


def dumps(value: Any) -> bytes:
    """RFC 8785 bytes of `value`; raises `rfc8785.CanonicalizationError` as rfc8785 does."""
    fast = dumps_fast(value)
    return fast if fast is not None else bytes(rfc8785.dumps(value))


def dumps_fast(value: Any) -> bytes | None:
    """RFC 8785 bytes of `value` if orjson can write them, else None (`dumps` can)."""
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # e.g. a lone surrogate in a string: rfc8785 says what is wrong
    return None


def _plain(value: Any) -> bool:
    """Only the kinds of values on which orjson and RFC 8785 agree byte for byte."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if -MAX_EXACT_INT <= item <= MAX_EXACT_INT:
                continue
            return False
        if kind is float:
            if PLAIN_FLOAT_MIN <= abs(item) < PLAIN_FLOAT_MAX and not item.is_integer():
                continue
            return False
        if kind is dict:
            for key in item:
                if type(key) is not str or not key.isascii():
                    return False
            pending.extend(item.values())
        elif kind is list or kind is tuple:
            pending.extend(item)
        else:
            return False
    return True
