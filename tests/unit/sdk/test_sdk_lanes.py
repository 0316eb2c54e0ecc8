"""weir.sdk's `lane=` (sent in the config's `weir` block, checked at serve and at sync),
`ctx.fence()`, and weir.sdk.official for apps built with the official SDK."""

from __future__ import annotations

from functools import partial
from typing import Any

import inngest
import pytest
from fastapi import FastAPI
from weir.platform.functions import Lane as PlatformLane
from weir.platform.functions import parse_sync
from weir.sdk import Context, InvalidFunctionsError, Lane, NoFencingToken, Weir, official, serve
from weir.sdk._client import compile_all
from weir.sdk.official import fence, fences, weir_options

APP_URL = "http://app.test/api/inngest"


async def handler(ctx: Context) -> None:
    return None


def registered(**options: Any) -> dict[str, Any]:
    weir = Weir("app", dev=True)
    weir.function("f", event="app/e", **options)(handler)
    (compiled,) = compile_all(weir.functions)
    return compiled.registered(APP_URL)


def platform_config(fn: dict[str, Any]) -> Any:
    payload = {"appname": "app", "url": APP_URL, "sdk": "py", "functions": [fn]}
    return parse_sync(payload).functions[0]


def test_a_lane_string_is_the_key_and_travels_in_the_weir_block() -> None:
    fn = registered(lane="event.data.customer")
    assert fn["weir"] == {"lane": {"key": "event.data.customer"}}
    assert platform_config(fn).lane == PlatformLane(key="event.data.customer", name=None)


def test_a_named_lane() -> None:
    fn = registered(lane=Lane(key="event.data.c", name="billing"))
    assert fn["weir"] == {"lane": {"key": "event.data.c", "name": "billing"}}


def test_no_lane_no_weir_block() -> None:
    assert "weir" not in registered()


@pytest.mark.parametrize(
    ("lane", "message"),
    [
        (Lane(), "lane: needs a key (a CEL expression over event) or a name, or both"),
        (Lane(key=""), "lane.key: must be a non-empty CEL expression string"),
        (Lane(name=""), "lane.name: must be a non-empty string"),
        (3, "lane: must be a Lane(...), got 3"),
    ],
)
def test_bad_lanes_are_refused_at_serve(lane: Any, message: str) -> None:
    weir = Weir("app", dev=True)
    weir.function("f", event="app/e", lane=lane)(handler)
    with pytest.raises(InvalidFunctionsError) as caught:
        serve(FastAPI(), weir)
    assert any(message in p for p in caught.value.problems), caught.value.problems


def test_ctx_fence_returns_the_token_and_refuses_a_scope_not_held() -> None:
    event: Any = {"name": "app/e", "data": {}}
    ctx = Context(event=event, events=[event], run_id="r", attempt=0, fences={"lane": 7})
    assert ctx.fence() == 7 and ctx.fence("lane") == 7
    bare = Context(event=event, events=[event], run_id="r", attempt=0)
    with pytest.raises(LookupError, match="holds no 'lane' fencing token"):
        bare.fence()


def test_the_job_id_carries_the_fences_for_official_sdk_apps() -> None:
    assert fences("123;lane=7") == {"lane": 7}
    assert fences("123") == {} and fences(None) == {}

    class Ctx:
        job_id = "9;lane=12"

    assert fence(Ctx()) == 12
    with pytest.raises(LookupError):
        fence(Ctx(), "concurrency")


def official_function(**block: Any) -> Any:
    client = inngest.Inngest(app_id="app", is_production=False)

    @weir_options(**block)
    @client.create_function(fn_id="f", trigger=inngest.TriggerEvent(event="app/e"))
    def f(ctx: inngest.ContextSync) -> None:
        return None

    return f


def test_weir_options_put_the_block_where_the_official_sdk_keeps_it() -> None:
    fn = official_function(lane="event.data.customer")
    wire = fn.get_config(APP_URL).main.to_dict()
    assert "weir=" in wire["steps"]["step"]["runtime"]["url"]
    config = platform_config(wire)
    assert config.lane == PlatformLane(key="event.data.customer", name=None)
    assert config.url == f"{APP_URL}?fnId=app-f&stepId=step"


def test_weir_options_pass_any_block_through_for_weir_to_check() -> None:
    fn = official_function(block={"lane": {"name": "billing"}, "noSuchOption": []})
    wire = fn.get_config(APP_URL).main.to_dict()
    with pytest.raises(ValueError, match=r"weir\.noSuchOption"):
        platform_config(wire)


def test_rolling_windows_travel_from_an_official_sdk_app() -> None:
    windows = [{"limit": 2, "window": 1000, "key": "event.data.c", "rateName": "stripe"}]
    fn = official_function(block={"rollingWindows": windows})
    config = platform_config(fn.get_config(APP_URL).main.to_dict())
    (window,) = config.rolling_windows
    assert (window.limit, window.window_ms, window.key) == (2, 1000, "event.data.c")
    assert window.rate_name == "stripe"


def test_weir_options_refuse_a_bad_lane_at_once() -> None:
    with pytest.raises(InvalidFunctionsError, match="needs a key"):
        weir_options(lane=Lane())


def test_a_call_without_a_concurrency_token_is_told_why_in_both_sdks() -> None:
    """A call claimed while its key's live capacity was above 1 holds no `concurrency0`
    token (docs/semantics.md#fencing-tokens): `fence` raises NoFencingToken, a LookupError
    saying so; the dict of tokens gives None instead, for a write that may go without one."""
    event: Any = {"name": "app/e", "data": {}}
    ctx = Context(event=event, events=[event], run_id="r", attempt=0, fences={"lane": 7})

    class Official:
        job_id = "9;lane=7"

    for read, tokens in ((ctx.fence, ctx.fences), (partial(fence, Official()), fences("9;lane=7"))):
        with pytest.raises(NoFencingToken, match="live capacity is 1") as caught:
            read("concurrency0")
        assert isinstance(caught.value, LookupError)
        assert caught.value.scope == "concurrency0" and caught.value.held == ["lane"]
        assert tokens.get("concurrency0") is None and read("lane") == 7
    with pytest.raises(NoFencingToken, match="declared with a lane"):
        Context(event=event, events=[event], run_id="r", attempt=0).fence()
    assert official.NoFencingToken is NoFencingToken  # importable beside `fence`
