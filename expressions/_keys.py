"""Turn an evaluation result into a stable text key, and a key into a fixed-length hash.

Keys feed concurrency, throttle, rate-limit, debounce and idempotency: equal values must give
equal keys whatever their Python spelling. JSON events from JavaScript carry every number as a
double, so integral floats are written as integers (`120.0` -> "120"); beyond 2^53 a double no
longer holds an exact integer, so those stay floats. Strings are used verbatim, so the string
"120" and the number 120 share a key: a deliberate trade-off for readable keys.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

_EXACT_INTEGERS = 2**53
KEY_HASH_LENGTH = 32  # hex characters: a 128-bit prefix of SHA-256


def stable_key(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(
        _normalise(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=True,  # NaN/Infinity are valid CEL doubles; keep them distinct, not an error
    )


def key_hash(text: str) -> str:
    """The first 32 hex characters (128 bits) of the SHA-256 of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_HASH_LENGTH]


def _normalise(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INTEGERS:
        return int(value)
    if isinstance(value, dict):
        return {_map_key(key): _normalise(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(item) for item in value]
    return _other(value)


def _map_key(key: Any) -> str:
    # CEL maps may have int, uint or bool keys; JSON objects need text (and one sort order).
    return key if isinstance(key, str) else stable_key(key)


def _other(value: Any) -> Any:
    """CEL timestamps, durations and bytes as text; JSON scalars as they are."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return f"{_normalise(value.total_seconds())}s"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value
