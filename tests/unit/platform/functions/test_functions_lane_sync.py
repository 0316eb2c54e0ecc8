"""The `weir` block and its `lane` at sync: from the config key (weir.sdk) or from the step
URL's `weir` parameter (official-SDK apps); every bad input is refused with a clear message."""

import json
from typing import Any
from urllib.parse import quote

import pytest
from weir.platform.functions import Lane, Problem, SyncError, parse_sync
from weir.platform.functions.describe import describe_function, describe_lane

FN = "app-f"
URL = "http://app:8000/api/inngest"


def function(url: str | None = None, **extra: Any) -> dict[str, Any]:
    step_url = url or f"{URL}?fnId={FN}&stepId=step"
    return {
        "id": FN,
        "name": "f",
        "triggers": [{"event": "app/e"}],
        "steps": {"step": {"id": "step", "runtime": {"type": "http", "url": step_url}}},
        **extra,
    }


def sync(fn: dict[str, Any]) -> Any:
    return parse_sync({"appname": "app", "url": URL, "sdk": "py", "functions": [fn]}).functions[0]


def problems(fn: dict[str, Any]) -> list[tuple[str | None, str]]:
    with pytest.raises(SyncError) as raised:
        sync(fn)
    found: list[Problem] = raised.value.problems
    return [(p.option, p.message) for p in found]


def in_url(block: Any) -> str:
    text = block if isinstance(block, str) else json.dumps(block)
    return f"{URL}?fnId={FN}&stepId=step&weir={quote(text)}"


def test_a_lane_from_the_weir_key() -> None:
    config = sync(function(weir={"lane": {"key": "event.data.customer"}}))
    assert config.lane == Lane(key="event.data.customer", name=None)


def test_a_named_lane_without_a_key() -> None:
    assert sync(function(weir={"lane": {"name": "billing"}})).lane == Lane(None, "billing")


def test_no_weir_block_no_lane() -> None:
    assert sync(function()).lane is None


def test_the_block_in_the_step_url_is_read_and_taken_out_of_the_url() -> None:
    config = sync(function(url=in_url({"lane": {"key": "event.data.c", "name": "n"}})))
    assert config.lane == Lane(key="event.data.c", name="n")
    assert config.url == f"{URL}?fnId={FN}&stepId=step"


def test_the_stored_config_round_trips_with_its_lane() -> None:
    config = sync(function(weir={"lane": {"key": "event.data.c"}}))
    assert type(config).from_json(json.loads(json.dumps(config.to_json()))) == config


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"weir": "lane"}, "weir", "must be an object, got 'lane' (a string)"),
    ({"weir": {"lanes": {}}}, "weir.lanes", "is not a Weir option; allowed: lane"),
    ({"weir": {"lane": "event.data.c"}}, "weir.lane", "must be an object, got 'event.data.c'"),
    ({"weir": {"lane": {}}}, "weir.lane", "needs a key (a CEL expression over event) or a name"),
    ({"weir": {"lane": {"key": "event.data.x =="}}}, "weir.lane.key", "invalid expression"),
    ({"weir": {"lane": {"key": "async.data.x"}}}, "weir.lane.key", "invalid expression"),
    ({"weir": {"lane": {"key": 3}}}, "weir.lane.key", "must be an expression string, got 3"),
    ({"weir": {"lane": {"name": ""}}}, "weir.lane.name", "must be a non-empty string"),
    ({"weir": {"lane": {"name": "a\nb"}}}, "weir.lane.name", "holds the control character"),
    (
        {"weir": {"lane": {"name": "é" * 257}}},
        "weir.lane.name",
        "must be at most 512 UTF-8 bytes, got 514",
    ),
    (
        {"weir": {"lane": {"key": "event.data.c", "order": "lifo"}}},
        "weir.lane.order",
        "is not a lane field; allowed: key, name",
    ),
]


@pytest.mark.parametrize(("extra", "option", "message"), BAD)
def test_bad_weir_blocks_are_refused(extra: dict[str, Any], option: str, message: str) -> None:
    found = problems(function(**extra))
    assert any(o == option and message in m for o, m in found), found


def test_a_block_that_is_not_json_in_the_url_is_refused() -> None:
    found = problems(function(url=in_url("{lane:")))
    assert found[0][0] == "weir"
    assert (
        "the step URL's 'weir' parameter must be a JSON object, but it is not JSON" in (found[0][1])
    )


def test_a_block_given_both_ways_is_refused() -> None:
    found = problems(function(url=in_url({"lane": {"name": "a"}}), weir={"lane": {"name": "a"}}))
    assert found == [("weir", "is given more than once (config key and step URL parameter)")]


def test_an_oversized_block_in_the_url_is_refused() -> None:
    found = problems(function(url=in_url({"lane": {"name": "x" * 20_000}})))
    assert found[0][0] == "weir" and "must be at most 16384 characters" in found[0][1]


def test_the_functions_page_describes_a_lane() -> None:
    assert describe_lane(Lane("event.data.c", None)) == (
        "lane: one run at a time per event.data.c, in the order runs were created"
    )
    assert describe_lane(Lane(None, "billing")) == (
        "lane: one run at a time, in the order runs were created, shared with every function "
        "naming lane 'billing'"
    )
    config = sync(function(weir={"lane": {"key": "event.data.c"}}))
    assert describe_lane(Lane("event.data.c", None)) in describe_function(config)
