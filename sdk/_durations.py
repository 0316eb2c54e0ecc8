"""Durations and timestamps as the wire protocol writes them (docs/protocol.md §3)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

# Largest unit first: the wire form always uses the largest unit that divides exactly.
_UNITS: tuple[tuple[str, int], ...] = (
    ("w", 7 * 86400),
    ("d", 86400),
    ("h", 3600),
    ("m", 60),
    ("s", 1),
)
_SECONDS = dict(_UNITS)
_PART = re.compile(r"(\d+)([wdhms])")
_WHOLE = re.compile(r"(?:\d+[wdhms])+")

Duration = timedelta | str
ALLOWED = "a timedelta or a string like '30s', '5m', '1h30m', '2d', '1w'"


def to_timedelta(value: object) -> timedelta:
    """Read a user duration; raises ValueError naming the accepted forms."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        seconds = sum(int(n) * _SECONDS[u] for n, u in _PART.findall(value))
        return timedelta(seconds=seconds)
    raise ValueError(f"expected {ALLOWED}, got {value!r}")


def to_wire(value: object, *, minimum: timedelta = timedelta(seconds=1)) -> str:
    """Serialise as `<int><unit>`; the protocol has no fractions and nothing under 1 s."""
    delta = to_timedelta(value)
    if delta < minimum:
        raise ValueError(f"must be at least {format_seconds(minimum)}, got {value!r}")
    if delta.microseconds:
        raise ValueError(f"must be a whole number of seconds, got {value!r}")
    return format_seconds(delta)


def format_seconds(delta: timedelta) -> str:
    total = int(delta.total_seconds())
    for unit, size in _UNITS:
        if total % size == 0:
            return f"{total // size}{unit}"
    return f"{total}s"  # unreachable: 1 divides everything


def iso_utc(moment: datetime) -> str:
    """ISO-8601 UTC with exactly three fractional digits and `Z` (sleep targets, retry-after).

    Naive datetimes are taken to be UTC: a server-side clock has no other meaningful zone.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def now_utc() -> datetime:
    return datetime.now(UTC)
