"""The invocation body is parsed strictly (§7.2): the captured accept/reject matrix."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.sdk.sdk_proto_app import client_for, fixture, make_app

BASE = fixture("errors/request_body_strictness.json")["base_request_body"]
URL = "/api/inngest?fnId=proto-app-echo&stepId=step"

Edit = Callable[[dict[str, Any]], None]


def _drop(*path: str) -> Edit:
    def edit(body: dict[str, Any]) -> None:
        for key in path[:-1]:
            body = body[key]
        del body[path[-1]]

    return edit


def _set(value: Any, *path: Any) -> Edit:
    def edit(body: dict[str, Any]) -> None:
        for key in path[:-1]:
            body = body[key]
        body[path[-1]] = value

    return edit


VARIANTS: dict[str, tuple[Edit, int]] = {
    "no_use_api_top": (_drop("use_api"), 500),
    "no_steps": (_drop("steps"), 500),
    "no_events": (_drop("events"), 500),
    "no_ctx_stack": (_drop("ctx", "stack"), 500),
    "no_ctx_disable_immediate_execution": (_drop("ctx", "disable_immediate_execution"), 500),
    "no_ctx_attempt": (_drop("ctx", "attempt"), 500),
    "no_ctx_run_id": (_drop("ctx", "run_id"), 500),
    "ts_as_float": (_set(1700000000000.0, "event", "ts"), 500),
    "attempt_as_string": (_set("0", "ctx", "attempt"), 500),
    "events_null": (_set(None, "events"), 500),
    "event_id_null": (_set(None, "event", "id"), 500),
    "event_ts_null": (_set(None, "event", "ts"), 500),
    "event_name_missing": (_drop("event", "name"), 500),
    "events_item_ts_float": (_set(1.5, "events", 0, "ts"), 500),
    "disable_immediate_as_int": (_set(0, "ctx", "disable_immediate_execution"), 500),
    "event_data_null": (_set(None, "event", "data"), 200),
    "events_empty_list": (_set([], "events"), 200),
    "stack_null_inside": (_set(None, "ctx", "stack", "stack"), 200),
    "no_version": (_drop("version"), 200),
    "no_ctx_max_attempts": (_drop("ctx", "max_attempts"), 200),
    "extra_unknown_fields": (_set({"x": 1}, "surprise"), 200),
    "run_id_not_ulid": (_set("any-string", "ctx", "run_id"), 200),
}


def test_every_captured_variant_is_covered() -> None:
    names = set(fixture("errors/request_body_strictness.json")["variants"])
    assert set(VARIANTS) <= names
    assert names - set(VARIANTS) == {"event_no_id_no_ts", "minimal", "minimal_without_events"}


@pytest.mark.parametrize("name", sorted(VARIANTS))
async def test_body_variant(name: str) -> None:
    edit, status = VARIANTS[name]
    body = copy.deepcopy(BASE)
    edit(body)
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(URL, json=body)
    assert response.status_code == status
    if status == 500:
        assert response.json()["code"] == "unknown"


async def test_minimal_body_defaults_event_id_and_ts() -> None:
    body = {
        "event": {"name": "app/echo", "data": {}},
        "events": [{"name": "app/echo", "data": {}}],
        "steps": {},
        "use_api": False,
        "ctx": {"attempt": 0, "disable_immediate_execution": False, "run_id": "r1", "stack": {}},
    }
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(URL, json=body)
    assert response.json()["event"] == {"data": {}, "id": "", "name": "app/echo", "ts": 0}


async def test_missing_events_names_the_problem() -> None:
    body = copy.deepcopy(BASE)
    del body["events"]
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(URL, json=body)
    assert response.json()["message"] == "events not in request"


@pytest.mark.parametrize("content", [b"", b"not json", b"[]", b"null"])
async def test_garbage_bodies_are_500_unknown(content: bytes) -> None:
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(URL, content=content)
    assert (response.status_code, response.json()["code"]) == (500, "unknown")


async def test_missing_fn_id_is_an_error() -> None:
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post("/api/inngest?stepId=step", json=BASE)
    assert (response.status_code, response.json()["code"]) == (500, "function_not_found")


async def test_unprefixed_fn_id_is_not_found() -> None:
    captured = fixture("errors/unprefixed_fnId.json")
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(captured["request"]["url"], json=captured["request"]["body"])
    assert response.status_code == 500
    assert response.json()["code"] == captured["response"]["body"]["code"]


async def test_unsupported_method_is_405() -> None:
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.delete("/api/inngest")
    assert response.status_code == 405
