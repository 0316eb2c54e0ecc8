"""Duration strings as apps send them, turned into whole milliseconds.

SDKs write `<int><unit>` ("30s", "2w"); Inngest's Go side also writes `time.Duration`
strings ("24h0m0s", "1.5h", "500ms"). Both forms are accepted so configs from either
round-trip; anything else is refused with a message saying what is allowed.
"""

from __future__ import annotations

import re

SECOND_MS = 1_000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
WEEK_MS = 7 * DAY_MS

_UNIT_MS = {"ms": 1, "s": SECOND_MS, "m": MINUTE_MS, "h": HOUR_MS, "d": DAY_MS, "w": WEEK_MS}
# "ms" is listed before "m" so the alternation never reads "500ms" as 500 minutes + "s".
_PART = re.compile(r"(\d+)(?:\.(\d+))?(ms|s|m|h|d|w)")
_MAX_LENGTH = 64  # far beyond any real duration; keeps pathological input cheap to refuse
_ALLOWED = "use whole units like '30s', '5m', '1h30m', '2d', '1w' or '500ms'"


def parse_duration_ms(text: str) -> int:
    """Milliseconds in `text`; ValueError naming the allowed forms otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"a duration must be a string; {_ALLOWED}")
    if text == "0":  # Go writes a zero duration as a bare "0"
        return 0
    if not text or len(text) > _MAX_LENGTH:
        raise ValueError(f"{text!r} is not a duration; {_ALLOWED}")
    return _sum_parts(text)


def _sum_parts(text: str) -> int:
    total, position = 0, 0
    for part in _PART.finditer(text):
        if part.start() != position:
            break
        total += _part_ms(text, part)
        position = part.end()
    if position != len(text):
        raise ValueError(f"{text!r} is not a duration; {_ALLOWED}")
    return total


def _part_ms(text: str, part: re.Match[str]) -> int:
    whole: str = part.group(1)
    fraction: str = part.group(2) or ""
    unit: str = part.group(3)
    scale: int = 10 ** len(fraction)
    numerator = (int(whole) * scale + int(fraction or "0")) * _UNIT_MS[unit]
    if numerator % scale:
        raise ValueError(f"{text!r} is finer than a millisecond; {_ALLOWED}")
    return numerator // scale


def format_duration(ms: int) -> str:
    """The SDK's own spelling: the largest unit that divides exactly ("90s", "1h", "2w")."""
    if ms == 0:
        return "0s"
    for unit in ("w", "d", "h", "m", "s"):
        if ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"
