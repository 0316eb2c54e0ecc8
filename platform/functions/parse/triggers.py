"""Reading a function's triggers: events (with an optional CEL filter) and cron schedules."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from weir.platform.functions.config import CronTrigger, EventTrigger, Trigger
from weir.platform.functions.matching import is_valid_trigger_pattern
from weir.platform.functions.parse.cel_checks import EVENT_ONLY
from weir.platform.functions.parse.cron_dow import aps_cron
from weir.platform.functions.parse.durations import MINUTE_MS, SECOND_MS
from weir.platform.functions.parse.fields import (
    read_duration,
    read_expression,
    read_list,
    read_object,
    read_text,
)
from weir.platform.functions.problems import Issues

MAX_TRIGGERS = 10
MAX_NAME_LENGTH = 255
MAX_JITTER_MS = 5 * MINUTE_MS
_TZ_PREFIXES = ("TZ=", "CRON_TZ=")
_FIELDS = "minute hour day-of-month month day-of-week"


def read_triggers(issues: Issues, value: Any) -> tuple[Trigger, ...]:
    items = read_list(issues, value, "triggers", MAX_TRIGGERS)
    if items is None:
        return ()
    if not items:
        issues.add("triggers", "at least one event or cron trigger is required")
    triggers = [
        _read_trigger(issues, item, f"triggers[{index}]") for index, item in enumerate(items)
    ]
    _check_duplicates(issues, items)
    return tuple(trigger for trigger in triggers if trigger is not None)


def _read_trigger(issues: Issues, value: Any, path: str) -> Trigger | None:
    item = read_object(issues, value, path)
    if item is None:
        return None
    if ("event" in item) == ("cron" in item):
        issues.add(path, "must have exactly one of 'event' or 'cron'")
        return None
    return _read_event(issues, item, path) if "event" in item else _read_cron(issues, item, path)


def _read_event(issues: Issues, item: Mapping[str, Any], path: str) -> EventTrigger | None:
    name = read_text(issues, item["event"], f"{path}.event", MAX_NAME_LENGTH)
    if name is not None and not is_valid_trigger_pattern(name):
        issues.add(
            f"{path}.event",
            f"{name!r}: a '*' wildcard may only end the name, right after '/' or '.' "
            "(like 'app/*' or 'app/user.*')",
        )
    expression = read_expression(issues, item.get("expression"), f"{path}.expression", EVENT_ONLY)
    return None if name is None else EventTrigger(event=name, expression=expression)


def _read_cron(issues: Issues, item: Mapping[str, Any], path: str) -> CronTrigger | None:
    text = read_text(issues, item["cron"], f"{path}.cron", MAX_NAME_LENGTH)
    jitter_ms = _read_jitter(issues, item.get("jitter"), f"{path}.jitter")
    if text is None or jitter_ms is None:
        return None
    try:
        fields, zone = parse_cron(text)
    except ValueError as error:
        issues.add(f"{path}.cron", f"{text!r}: {error}")
        return None
    return CronTrigger(cron=fields, timezone=zone, jitter_ms=jitter_ms)


def _read_jitter(issues: Issues, value: Any, path: str) -> int | None:
    if value is None:
        return 0
    jitter_ms = read_duration(issues, value, path, 0)
    if jitter_ms is not None and not _jitter_allowed(jitter_ms):
        issues.add(path, f"must be 0 or a duration from 1s to 5m, got {value!r}")
        return None
    return jitter_ms


def _jitter_allowed(jitter_ms: int) -> bool:
    return jitter_ms == 0 or SECOND_MS <= jitter_ms <= MAX_JITTER_MS


def parse_cron(text: str) -> tuple[str, str | None]:
    """(the five fields, the time zone or None); ValueError saying what is wrong."""
    zone, schedule = _split_zone(text.strip())
    fields = schedule.split()
    if len(fields) != 5:
        raise ValueError(f"a cron needs 5 fields ({_FIELDS}), got {len(fields)}")
    expression, zone_info = " ".join(fields), _zone_info(zone)
    try:
        aps_cron(expression, zone_info)
    except ValueError as error:
        raise ValueError(f"not a valid cron schedule: {error}") from None
    return expression, zone


def _split_zone(text: str) -> tuple[str | None, str]:
    head, _, rest = text.partition(" ")
    for prefix in _TZ_PREFIXES:
        if head.startswith(prefix):
            return head[len(prefix) :], rest
    return None, text


def _zone_info(zone: str | None) -> ZoneInfo:
    try:
        return ZoneInfo("UTC" if zone is None else zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {zone!r}; use an IANA name like 'Europe/Paris'"
        ) from None


def _check_duplicates(issues: Issues, items: list[Any]) -> None:
    # Inngest refuses identical triggers and, separately, one cron schedule listed twice.
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        for identity, message in _identities(item):
            if identity in seen:
                issues.add(f"triggers[{index}]", f"{message} triggers[{seen[identity]}]")
                break
            seen[identity] = index


def _identities(item: Any) -> list[tuple[str, str]]:
    identities = [(json.dumps(item, sort_keys=True, default=str), "is the same trigger as")]
    if isinstance(item, Mapping) and isinstance(item.get("cron"), str):
        schedule = " ".join(item["cron"].split())
        identities.append(("cron:" + schedule, "repeats the cron schedule of"))
    return identities
