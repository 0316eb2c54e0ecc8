"""Triggers: an event name (exact or `prefix/*`), optionally filtered, or a cron schedule."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from weir.sdk._declaring.problems import Problems
from weir.sdk._durations import Duration, to_timedelta, to_wire

_MAX_NAME = 255
_MAX_JITTER = timedelta(minutes=5)


@dataclass(frozen=True)
class TriggerEvent:
    """Run on `event` (a name, or `prefix/*` / `prefix.*`) when `expression` holds."""

    event: str
    expression: str | None = None

    def to_wire(self, p: Problems, option: str) -> dict[str, Any]:
        _check_event_name(p, f"{option}.event", self.event)
        ok = self.expression is None or (isinstance(self.expression, str) and self.expression)
        p.check(bool(ok), f"{option}.expression", "must be a non-empty CEL expression string")
        body: dict[str, Any] = {"event": self.event}
        if self.expression is not None:
            body["expression"] = self.expression
        return body


@dataclass(frozen=True)
class TriggerCron:
    """Run on a 5-field cron schedule, optionally `TZ=Area/City ...`, with optional jitter."""

    cron: str
    jitter: Duration | None = None

    def to_wire(self, p: Problems, option: str) -> dict[str, Any]:
        _check_cron(p, f"{option}.cron", self.cron)
        body: dict[str, Any] = {"cron": self.cron}
        if self.jitter is not None:
            body["jitter"] = p.attempt(f"{option}.jitter", lambda: _jitter(self.jitter))
        return body


Trigger = TriggerEvent | TriggerCron


def _check_event_name(p: Problems, option: str, name: object) -> None:
    if not isinstance(name, str) or not name or len(name) > _MAX_NAME:
        p.add(option, f"must be a non-empty event name of at most {_MAX_NAME} characters")
        return
    star = name.find("*")
    wildcard_ok = star == -1 or (star == len(name) - 1 and star > 0 and name[star - 1] in "/.")
    p.check(
        wildcard_ok,
        option,
        f"a wildcard may only end the name as 'prefix/*' or 'prefix.*', got {name!r}",
    )


def _check_cron(p: Problems, option: str, cron: object) -> None:
    if not isinstance(cron, str) or not cron.strip() or len(cron) > _MAX_NAME:
        p.add(option, f"must be a cron string of at most {_MAX_NAME} characters")
        return
    fields = cron.split()
    if fields[0].startswith(("TZ=", "CRON_TZ=")):
        _check_zone(p, option, fields.pop(0).split("=", 1)[1])
    p.check(
        len(fields) == 5,
        option,
        f"must have 5 fields (minute hour day month weekday) "
        f"after an optional 'TZ=Area/City', got {cron!r}",
    )


def _check_zone(p: Problems, option: str, zone: str) -> None:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        p.add(option, f"unknown time zone {zone!r}")


def _jitter(value: object) -> str:
    wire = to_wire(value)
    if to_timedelta(value) > _MAX_JITTER:
        raise ValueError(f"must be at most 5m, got {value!r}")
    return wire
