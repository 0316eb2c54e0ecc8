"""Reading `weir.rollingWindows`: strict rolling windows on run starts, and shared meters.

Each entry is `{"limit", "window", "key"?, "rateName"?}`; `window` is a duration string
("1s", "1500ms") or whole milliseconds. Bounds are those of `gates.rolling_window`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from weir.platform.functions.config import RollingWindow
from weir.platform.functions.parse.cel_checks import EVENT_ONLY
from weir.platform.functions.parse.durations import format_duration
from weir.platform.functions.parse.fields import (
    read_duration,
    read_expression,
    read_int,
    read_list,
    read_object,
    read_text,
    refuse,
)
from weir.platform.functions.problems import Issues
from weir.platform.gates.rolling_window import MAX_LIMIT, MAX_WINDOW_MS, MIN_WINDOW_MS

OPTION = "weir.rollingWindows"
KEY = "rollingWindows"
MAX_WINDOWS = 8  # a run needs room in all of them at once
MAX_RATE_NAME = 128


def read(issues: Issues, block: Mapping[str, Any]) -> tuple[RollingWindow, ...]:
    """The windows of the function's `weir` block (() when it has none)."""
    value = block.get(KEY)
    if value is None:
        return ()
    items = read_list(issues, value, OPTION, MAX_WINDOWS) or []
    windows = [_window(issues, item, f"{OPTION}[{i}]") for i, item in enumerate(items)]
    found = tuple(window for window in windows if window is not None)
    _check_repeats(issues, found)
    return found


def _window(issues: Issues, value: Any, path: str) -> RollingWindow | None:
    item = read_object(issues, value, path)
    if item is None:
        return None
    limit = read_int(issues, item.get("limit"), f"{path}.limit", 1, MAX_LIMIT)
    window = _window_ms(issues, item.get("window"), f"{path}.window")
    key = read_expression(issues, item.get("key"), f"{path}.key", EVENT_ONLY)
    rate_name = _rate_name(issues, item.get("rateName"), f"{path}.rateName")
    if limit is None or window is None or rate_name is False:
        return None
    return RollingWindow(limit=limit, window_ms=window, key=key, rate_name=rate_name)


def _window_ms(issues: Issues, value: Any, path: str) -> int | None:
    if isinstance(value, str):
        return read_duration(issues, value, path, MIN_WINDOW_MS, MAX_WINDOW_MS)
    wanted = (
        f"a duration string like '1s' or whole milliseconds, from {MIN_WINDOW_MS} "
        f"({format_duration(MIN_WINDOW_MS)}) to {MAX_WINDOW_MS} ({format_duration(MAX_WINDOW_MS)})"
    )
    if isinstance(value, bool) or not isinstance(value, int):
        refuse(issues, path, wanted, value)
        return None
    if not MIN_WINDOW_MS <= value <= MAX_WINDOW_MS:
        issues.add(path, f"must be {wanted}, got {value}")
        return None
    return value


def _rate_name(issues: Issues, value: Any, path: str) -> str | Literal[False] | None:
    """None when absent, False when invalid (recorded), else the meter's name."""
    if value is None:
        return None
    name = read_text(issues, value, path, MAX_RATE_NAME)
    return False if name is None else name


def _check_repeats(issues: Issues, windows: tuple[RollingWindow, ...]) -> None:
    seen: set[RollingWindow] = set()
    rates: dict[str, RollingWindow] = {}
    for window in windows:
        if window in seen:
            issues.add(OPTION, f"declares the same window twice: {describe(window)}")
        seen.add(window)
        if window.rate_name is None:
            continue
        other = rates.setdefault(window.rate_name, window)
        if (other.limit, other.window_ms) != (window.limit, window.window_ms):
            issues.add(
                OPTION,
                f"meter {window.rate_name!r} is declared at two rates: "
                f"{rate_text(other)} and {rate_text(window)}",
            )


def rate_text(window: RollingWindow) -> str:
    """ "10 per 1s": a window's rate as messages name it."""
    return f"{window.limit} per {format_duration(window.window_ms)}"


def describe(window: RollingWindow) -> str:
    """In plain words, for messages and the function's page."""
    parts = [f"at most {rate_text(window)} (rolling window)"]
    if window.rate_name is not None:
        parts.append(f"meter {window.rate_name!r}")
    if window.key is not None:
        parts.append(f"key {window.key!r}")
    return ", ".join(parts)
