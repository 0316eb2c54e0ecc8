"""JSON values Weir may keep: those it can store, serve over its API and send back to an app as
canonical JSON (RFC 8785), which carries every number as an IEEE double.

Every door that takes JSON from outside (events, syncs, app answers) checks with `problem`, so
nothing is accepted that would later fail a run or an API read. The walk is iterative: data
nested deeper than Python's recursion limit is refused with a message, never a crash.
"""

import json
import math
import re
from typing import Any

import orjson

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 254  # as deep as orjson goes (it stores events, and checks depth below)
# Canonical JSON writes a double without an exponent below 1e21: from 2^53 up to there every
# double is a whole number and goes out as a run of digits, which an SDK's parser reads as an
# integer past ±(2^53-1) (weir.sdk's canonical check refused those: the signature then failed).
PLAIN_DIGITS_BELOW = 1e21
ALLOWED_NUMBERS = (
    "JSON numbers must be finite, and whole numbers (however written: 1e20 is one) within "
    "±(2^53-1) = ±9007199254740991 or from ±1e21 on, so that every SDK reads them back "
    "exactly; send larger or exact values as strings"
)
# C0/C1 controls and line separators: NUL cannot be stored in PostgreSQL text, and a newline
# in a name could forge a line of a text log.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]{0,39}")


class _NonFinite(float):
    """NaN, ±Infinity or a literal too large for a double (1e400), as `loads` parses them:
    orjson encodes no float subclass, so `problem`'s quick check cannot pass one by."""


def _float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(value)


# orjson parses twice as fast as the standard library but reads an integer past 64 bits as a
# float, silently: a body with a run of 19 digits (an integer near or past 2^63) takes the
# exact parser, as does whatever orjson refuses (NaN, 1e400, lone surrogates: named below).
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_NUMBER = b"0" * 19


def loads(data: bytes | str) -> Any:
    """Parsed JSON; ValueError (never RecursionError) if it is not JSON or nested too deep.
    NaN, Infinity and 1e400 parse (marked) so that `problem` can name where they are."""
    if isinstance(data, bytes) and _LONG_NUMBER not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the exact parser says what is wrong, or marks what `problem` names
    return _exact_loads(data)


def _exact_loads(data: bytes | str) -> Any:
    try:
        return json.loads(data, parse_float=_float, parse_constant=_NonFinite)
    except RecursionError:
        raise ValueError(f"the JSON is nested too deeply; at most {MAX_DEPTH} levels") from None


def control_char(text: str) -> re.Match[str] | None:
    """The first control character in `text` (names and ids must be printable), if any."""
    return CONTROL.search(text)


def problem(value: Any, root: str = "") -> str | None:
    """The first part of `value` (parsed by `loads`) that cannot be kept, named by its JSON
    path under `root` (e.g. "data.amount") and saying what is allowed; None if all can."""
    try:  # in C, and ten times faster than the walk: depth, integers, text, marked floats
        dumped = orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER)
    except orjson.JSONEncodeError:
        return _walk(value, root)
    return _walk(value, root) if may_hold_big_float(dumped) else None


# orjson writes a double from 2^53 to 1e21 as 16 digits and ".0" (below 1e16) or with an
# exponent of +16 to +20: bytes holding neither hold no such number. Text may look the same,
# which only costs the walk that then finds none.
_BIG_EXPONENTS = frozenset({b"16", b"17", b"18", b"19", b"20"})


def may_hold_big_float(dumped: bytes) -> bool:
    """Whether `dumped` (orjson's output) may hold a double that canonical JSON writes as an
    integer past ±(2^53-1): a search in C for each of the two shapes, so every event and
    step result can afford it."""
    at = dumped.find(b"e+")
    while at > 0:
        exponent, after = dumped[at + 2 : at + 4], dumped[at + 4 : at + 5]
        if dumped[at - 1 : at].isdigit() and exponent in _BIG_EXPONENTS and not after.isdigit():
            return True
        at = dumped.find(b"e+", at + 2)
    at = dumped.find(b".0", 16)
    while at > 0:
        if dumped[at - 16 : at].isdigit() and not dumped[at + 2 : at + 3].isdigit():
            return True
        at = dumped.find(b".0", at + 2)
    return False


def _walk(value: Any, root: str) -> str | None:
    stack: list[tuple[Any, str, int]] = [(value, root, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth >= MAX_DEPTH and isinstance(item, dict | list):  # the 255th container
            return f"{_where(path)} is nested deeper than {MAX_DEPTH} levels, the most allowed"
        found = _scalar_problem(item) or _key_problem(item)
        if found:
            return f"{_where(path)} {found}"
        stack.extend(reversed(list(_children(item, path, depth + 1))))  # document order
    return None


def _children(item: Any, path: str, depth: int) -> Any:
    if isinstance(item, dict):
        return ((v, key_path(path, str(k)), depth) for k, v in item.items())
    if isinstance(item, list):
        return ((v, f"{path}[{i}]", depth) for i, v in enumerate(item))
    return ()


def _key_problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    bad = next((k for k in item if isinstance(k, str) and _lone_surrogate(k)), None)
    return None if bad is None else "has a key holding a lone UTF-16 surrogate (\\ud800-\\udfff)"


def _scalar_problem(item: Any) -> str | None:
    if isinstance(item, bool):
        return None
    if isinstance(item, int) and abs(item) > MAX_SAFE_INTEGER:
        return f"is {_shown(item)}, an integer outside ±(2^53-1); {ALLOWED_NUMBERS}"
    if isinstance(item, float) and not math.isfinite(item):
        shown = "NaN" if math.isnan(item) else f"{'-' if item < 0 else ''}Infinity"
        return f"is {shown} (as is any number too large for a double); {ALLOWED_NUMBERS}"
    if isinstance(item, float) and MAX_SAFE_INTEGER < abs(item) < PLAIN_DIGITS_BELOW:
        return (
            f"is {item!r}, a whole number past ±(2^53-1) that canonical JSON sends as a run "
            f"of digits, which SDKs read as an integer they cannot keep exactly; {ALLOWED_NUMBERS}"
        )
    if isinstance(item, str) and not item.isascii() and _lone_surrogate(item):
        return "holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not valid Unicode text"
    return None


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _shown(number: int) -> str:
    digits = str(number) if number.bit_length() < 1000 else "a very long number"
    return digits if len(digits) <= 40 else f"{digits[:20]}… ({len(digits)} digits)"


def key_path(path: str, key: str) -> str:
    """`path.key`, or `path["odd key"]` when the key is not a plain name (kept short)."""
    if _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    shown = json.dumps(key[:40] + ("…" if len(key) > 40 else ""))
    return f"{path}[{shown}]"


def _where(path: str) -> str:
    if len(path) > 120:  # deep paths: the start and the end say enough
        return f"{path[:60]}…{path[-50:]}"
    return path or "the value"
