"""Shared result types: why a run waits, why an event was skipped, and the bounds checks."""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from typing import Any, TypeVar

from weir.platform.foundation.record_type import record

MS_PER_S = 1_000
MS_PER_MIN = 60 * MS_PER_S
MS_PER_H = 60 * MS_PER_MIN
MS_PER_DAY = 24 * MS_PER_H

S = TypeVar("S")


@record(slots=True)
class WaitReason:
    """Why a run (or one of its steps) is not running yet; shown as-is in the UI."""

    gate: str
    key: str
    until_ms: int | None
    words: str


@record(slots=True)
class SkipReason:
    """Why an event started no run for a function; stored on the event's record."""

    gate: str
    key: str
    words: str
    retry_at_ms: int | None = None
    holder_run_id: str | None = None


def clock_text(ms: int) -> str:
    """Epoch ms as UTC wall-clock text with milliseconds, e.g. '12:00:03.300'."""
    day_ms = ms % MS_PER_DAY
    hours, rest = divmod(day_ms, MS_PER_H)
    minutes, rest = divmod(rest, MS_PER_MIN)
    seconds, millis = divmod(rest, MS_PER_S)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def key_text(key: str) -> str:
    """How a key is named in reasons: the function-wide bucket has the empty key."""
    return f" (key {key!r})" if key else ""


def wait_until(gate: str, key: str, until_ms: int, what: str) -> WaitReason:
    words = f"{gate}: {what} until {clock_text(until_ms)}{key_text(key)}"
    return WaitReason(gate=gate, key=key, until_ms=until_ms, words=words)


def require_range(name: str, value: int, low: int, high: int | None = None) -> int:
    """Reject a config value outside [low, high] with an error naming both (ms for durations)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    too_high = high is not None and value > high
    if value < low or too_high:
        allowed = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} = {value} is out of range; allowed: {allowed}")
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_json(state: Any) -> dict[str, Any]:
    """A state dataclass as a JSON-ready dict (the store's column payload), as
    `dataclasses.asdict` gives it. A state of scalars only (a wait reason, made per queued run)
    is read field by field: asdict's deep copy took 7 µs of its 8."""
    made = {}
    for name in _names(type(state)):
        value = getattr(state, name)
        if type(value) not in _SCALARS:
            if not isinstance(value, StrEnum):
                return dataclasses.asdict(state)
            value = value.value  # one of Weir's words, stored as the plain string it is
        made[name] = value
    return made


_FIELDS: dict[type, tuple[str, ...]] = {}  # by state class: its field names


def _names(cls: type) -> tuple[str, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return found


def from_json(cls: type[S], data: dict[str, Any]) -> S:
    """Rebuild a state dataclass from `to_json` output, ignoring unknown fields."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})
