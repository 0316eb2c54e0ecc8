"""Cron fire times: crontab semantics (0 and 7 = Sunday), time zones, strictly after `after`."""

from datetime import UTC, datetime

import pytest
from weir.platform.functions import CronTrigger
from weir.platform.functions.parse.cron_dow import to_apscheduler
from weir.platform.runtime.cron import next_fire_ms


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def at(cron: str, after: str, tz: str | None = None) -> str:
    fire = next_fire_ms(CronTrigger(cron=cron, timezone=tz, jitter_ms=0), ms(after))
    assert fire is not None
    return datetime.fromtimestamp(fire / 1000, tz=UTC).isoformat()


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("0", "sun"),
        ("7", "sun"),
        ("1-5", "mon,tue,wed,thu,fri"),
        ("*/2", "sun,tue,thu,sat"),
        ("sat,0", "sun,sat"),
        ("*", "*"),
        ("5-7", "sun,fri,sat"),
    ],
)
def test_day_of_week_follows_crontab(field: str, expected: str) -> None:
    assert to_apscheduler(field) == expected


@pytest.mark.parametrize("field", ["8", "x", "1-9", "*/0"])
def test_bad_day_of_week_is_rejected(field: str) -> None:
    with pytest.raises(ValueError, match="day"):
        to_apscheduler(field)


def test_sunday_zero_fires_on_sunday() -> None:
    # 2026-12-02 is a Wednesday; the next Sunday midnight is 2026-12-06.
    assert at("0 0 * * 0", "2026-12-02T10:00:00") == "2026-12-06T00:00:00+00:00"


def test_next_fire_is_strictly_after() -> None:
    assert at("*/5 * * * *", "2026-12-02T10:05:00") == "2026-12-02T10:10:00+00:00"


def test_time_zone_prefix_is_honoured() -> None:
    # 09:00 in New York (UTC-5 in December) is 14:00 UTC.
    assert at("0 9 * * *", "2026-12-02T10:00:00", "America/New_York") == "2026-12-02T14:00:00+00:00"
