"""Every Weir-only option of one function travels in one `weir` block: a lane, rolling
windows, scopes and an app limit together reach the platform's config, none overwriting
another."""

from typing import Any

from weir.sdk import Context, Lane, RollingWindow, Scope, Weir
from weir.sdk._client import compile_all

from tests.unit.sdk.test_sdk_lanes import APP_URL, platform_config


async def handler(ctx: Context) -> None:
    return None


def test_lane_windows_scopes_and_app_limit_share_the_block() -> None:
    weir = Weir("app", dev=True)
    options: dict[str, Any] = {
        "lane": Lane(key="event.data.customer"),
        "rolling_window": RollingWindow(limit=5, window="1s", rate_name="stripe"),
        "scopes": [Scope(2, name="printer")],
        "app_limit": 3,
    }
    weir.function("f", event="app/e", **options)(handler)
    (compiled,) = compile_all(weir.functions)
    wire = compiled.registered(APP_URL)
    assert set(wire["weir"]) == {"lane", "rollingWindows", "scopes", "appLimit"}
    config = platform_config(wire)
    assert config.lane is not None and config.lane.key == "event.data.customer"
    assert [(w.limit, w.window_ms, w.rate_name) for w in config.rolling_windows] == [
        (5, 1000, "stripe")
    ]
    assert [(s.name, s.limit) for s in config.scopes] == [("printer", 2)]
    assert config.app_limit == 3
