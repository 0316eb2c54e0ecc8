"""Crontab's day-of-week field in APScheduler's terms.

Crontab counts 0 (and 7) as Sunday; APScheduler 3 counts 0 as Monday. Numbers in the field are
rewritten as day names, which both read alike; everything else is left to APScheduler.
"""

from typing import Any

from apscheduler.triggers.cron import CronTrigger as ApsCron

NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def to_apscheduler(field: str) -> str:
    if field in ("*", "?"):
        return "*"
    days: set[int] = set()
    for part in field.lower().split(","):
        days |= _part(part)
    return ",".join(NAMES[d] for d in sorted(days))


def _part(part: str) -> set[int]:
    base, _, step_text = part.partition("/")
    step = int(step_text) if step_text else 1
    if step < 1:
        raise ValueError(f"day-of-week step must be at least 1, got {part!r}")
    first, last = _range(base)
    return {d % 7 for d in range(first, last + 1, step)}


def _range(base: str) -> tuple[int, int]:
    if base in ("*", "?"):
        return 0, 6
    low, _, high = base.partition("-")
    first = _day(low)
    return first, _day(high) if high else first


def _day(text: str) -> int:
    if text in NAMES:
        return NAMES.index(text)
    if text.isdigit() and 0 <= int(text) <= 7:
        return int(text)
    raise ValueError(f"day of week {text!r} is not 0-7 or one of {', '.join(NAMES)}")


def aps_cron(five_fields: str, timezone: Any) -> ApsCron:
    """APScheduler's trigger for a crontab schedule (the five fields, crontab semantics)."""
    minute, hour, day, month, dow = five_fields.split()
    return ApsCron(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=to_apscheduler(dow),
        timezone=timezone,
    )
