"""The JSON text of Weir's own columns: orjson where it is exact, the standard library elsewhere.

A transition writes and reads a handful of small JSON columns (a run's event ids and keys, a
queue item's payload, a history row's detail): `json.dumps` takes about 2 µs on a small dict,
orjson a tenth of that. Both write JSON that parses back to the same value. The text differs:
no spaces, `1e16` for `1e+16`, and characters past ASCII written as they are rather than as
`\\u` escapes, so a search of run outputs for such text finds rows written since (older rows
keep their escapes; nothing else compares the text).

Where orjson would not give the same value, the standard library does the work:
- writing: an integer past 64 bits, a key that is not a string, a subclass of `dict` or `list`
  (a large event held as a lazily parsed `Document` must be read by its own methods), a float
  subclass, a dataclass and a datetime are refused by orjson (raised as a TypeError), so `json`
  writes them, or refuses them as it always did;
- reading: orjson reads an integer past 64 bits as a float, silently, so a text holding a run
  of 19 digits is parsed by `json`, as is anything orjson refuses (NaN, a lone surrogate).

Two values are written where `json.dumps` refused or wrote no JSON: NaN and the infinities
become `null` (`json` wrote the bare word NaN, which no other JSON reader accepts, PostgreSQL's
jsonb included; values from outside never hold them, `jsonvalues.problem` refuses them), and a
plain Enum or a UUID is written as its value.
"""

import json
import re
from enum import StrEnum
from typing import Any

import orjson

# subclasses of dict, list, str and int, dataclasses and datetimes: refused, for `json`
_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
_LONG_NUMBER = re.compile(r"[0-9]{19}")
_LONG_NUMBER_BYTES = re.compile(rb"[0-9]{19}")


def dumps(value: Any) -> str:
    """Compact JSON text of `value`."""
    try:
        return orjson.dumps(value, option=_OPTIONS, default=_word).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, separators=(",", ":"))


def _word(value: Any) -> Any:
    """Weir's words (`StrEnum` members, which orjson passes here as str subclasses) are written
    as the plain strings they are, as `json` writes them; anything else orjson refused goes to
    `json` as before."""
    if isinstance(value, StrEnum):
        return value.value
    raise TypeError


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
