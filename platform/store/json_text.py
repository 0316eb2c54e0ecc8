"""The JSON text of Weir's own columns: orjson where it is exact, the standard library elsewhere.

A transition writes and reads a handful of small JSON columns (a run's event ids and keys, a
queue item's payload, a history row's detail): `json.dumps` takes about 2 µs on a small dict,
orjson a tenth of that. Both write JSON that parses back to the same value; the text may differ
(spacing, `1e16` for `1e+16`, non-ASCII written as it is), and no reader compares the text.

Where orjson would not give the same value, the standard library does the work:
- writing: an integer past 64 bits, a key that is not a string, a subclass of `dict` or `list`
  (a large event held as a lazily parsed `Document` must be read by its own methods) and a
  float subclass are refused by orjson (raised as a TypeError), so `json` writes them;
- reading: orjson reads an integer past 64 bits as a float, silently, so a text holding a run
  of 19 digits is parsed by `json`, as is anything orjson refuses (NaN, a lone surrogate).
"""

import json
import re
from typing import Any

import orjson

_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS  # subclasses of dict, list, str, int: refused
_LONG_NUMBER = re.compile(r"[0-9]{19}")
_LONG_NUMBER_BYTES = re.compile(rb"[0-9]{19}")


def dumps(value: Any) -> str:
    """Compact JSON text of `value`."""
    try:
        return orjson.dumps(value, option=_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """The value of a JSON text, as `json.loads` reads it."""
    if len(text) < 19 or _long_number(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # what orjson refuses, json may read (NaN) or says what is wrong
    return json.loads(text)


def _long_number(text: str | bytes) -> re.Match[str] | re.Match[bytes] | None:
    if isinstance(text, str):
        return _LONG_NUMBER.search(text)
    return _LONG_NUMBER_BYTES.search(text)
