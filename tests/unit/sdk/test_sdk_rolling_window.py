"""weir.sdk's rolling_window option: its wire form in the `weir` block, and bad values refused
at serve() with what is allowed. The platform's parser reads the same wire form back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from weir.platform.functions.parse.function import read_function
from weir.platform.functions.problems import Issues
from weir.sdk import Context, InvalidFunctionsError, RollingWindow, Weir, serve


async def handler(ctx: Context) -> None:
    return None


def config(**options: Any) -> dict[str, Any]:
    weir = Weir("app", dev=True)
    fn = weir.function("f", event="t/e", **options)(handler)
    sink: list[str] = []
    [compiled] = fn.compile(sink)
    assert sink == []
    return compiled.registered("http://127.0.0.1:1/api/inngest")


def problems(*windows: Any) -> list[str]:
    weir = Weir("app", dev=True)
    weir.function("f", event="t/e", rolling_window=list(windows))(handler)
    with pytest.raises(InvalidFunctionsError) as caught:
        serve(FastAPI(), weir)
    return caught.value.problems


def test_one_window_or_several_go_in_the_weir_block_in_whole_ms() -> None:
    one = config(rolling_window=RollingWindow(10, "1s", key="event.data.acct"))
    assert one["weir"] == {
        "rollingWindows": [{"limit": 10, "window": 1_000, "key": "event.data.acct"}]
    }
    several = config(
        rolling_window=[
            RollingWindow(100, timedelta(minutes=1), rate_name="stripe"),
            RollingWindow(5, 1_500),
        ]
    )
    assert several["weir"]["rollingWindows"] == [
        {"limit": 100, "window": 60_000, "rateName": "stripe"},
        {"limit": 5, "window": 1_500},
    ]
    assert "weir" not in config()


def test_the_platform_reads_what_the_sdk_sends() -> None:
    wire = config(rolling_window=[RollingWindow(3, 2_500, key="event.data.k", rate_name="m")])
    issues = Issues("f")
    parsed = read_function(issues, wire)
    assert issues.found == [] and parsed is not None
    [window] = parsed.rolling_windows
    assert (window.limit, window.window_ms, window.key, window.rate_name) == (
        3,
        2_500,
        "event.data.k",
        "m",
    )


def test_bad_windows_are_all_listed() -> None:
    found = problems(
        RollingWindow(0, "1s"),
        RollingWindow(100_001, "25h"),
        RollingWindow(1, 999),
        RollingWindow(1, timedelta(microseconds=1_000_500)),
        RollingWindow(1, "soon", key="", rate_name=""),
    )
    assert found == [
        "function 'f': rolling_window[0].limit: must be an integer from 1 to 100000, got 0",
        "function 'f': rolling_window[1].limit: must be an integer from 1 to 100000, got 100001",
        "function 'f': rolling_window[1].window: must be from 1s to 24h (1000 to 86400000 ms), "
        "got '25h'",
        "function 'f': rolling_window[2].window: must be from 1s to 24h (1000 to 86400000 ms), "
        "got 999",
        "function 'f': rolling_window[3].window: must be whole milliseconds, "
        "got datetime.timedelta(seconds=1, microseconds=500)",
        "function 'f': rolling_window[4].key: must be a non-empty CEL expression string, got ''",
        "function 'f': rolling_window[4].rate_name: must be printable text of 1 to 128 "
        "characters, got ''",
        "function 'f': rolling_window[4].window: expected an int (milliseconds), a timedelta or "
        "a string like '1s', '5m', '1h', got 'soon'",
    ]


def test_at_most_eight_windows_and_only_rolling_windows() -> None:
    found = problems(*[RollingWindow(n, "1s") for n in range(1, 10)], "10 per second")
    assert "function 'f': rolling_window: allows at most 8 windows, got 10" in found
    assert "function 'f': rolling_window[9]: must be a RollingWindow(...), got '10 per second'" in (
        found
    )
