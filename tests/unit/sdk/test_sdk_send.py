"""The send client (§6) and settings from arguments and WEIR_*/INNGEST_* env (§2)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from weir.sdk import Event, SendEventsError, Weir
from weir.sdk._declaring.config import resolve

from tests.unit.sdk.sdk_proto_app import fixture


class EventApi:
    def __init__(self, *replies: httpx.Response) -> None:
        self.requests: list[httpx.Request] = []
        self.replies = list(replies)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]


def _weir(api: EventApi, **settings: Any) -> Weir:
    settings.setdefault("dev", True)
    return Weir("app", transport=httpx.MockTransport(api), **settings)


EVENTS = [
    Event(name="app/plain", data={"a": 1}),
    Event(name="app/with-id", id="my-idempotency-id", ts=1700000000000),
]


async def test_dev_send_matches_the_captured_request() -> None:
    captured = fixture("events/send_dev_request.json")
    api = EventApi(httpx.Response(200, json={"ids": fixture("events/send_dev_returned_ids.json")}))
    ids = await _weir(api).send(EVENTS)
    assert ids == fixture("events/send_dev_returned_ids.json")
    [request] = api.requests
    assert request.url.path == captured["path"] == "/e/NO_EVENT_KEY_SET"
    body = json.loads(request.content)
    assert body[1] == captured["json"][1]
    assert {k: v for k, v in body[0].items() if k != "ts"} == {
        "data": {"a": 1},
        "name": "app/plain",
    }
    assert isinstance(body[0]["ts"], int)
    assert body[0]["ts"] > 1700000000000
    seed = request.headers["x-inngest-event-id-seed"].split(",")
    assert seed[0].isdigit()
    assert len(seed[1]) == 16
    assert "authorization" not in request.headers


def test_sync_send_with_event_key_and_env() -> None:
    captured = fixture("events/send_cloud_request.json")
    api = EventApi(httpx.Response(200, json={"ids": ["x"], "status": 200}))
    weir = _weir(api, event_key="test-event-key-123", env="my-branch")
    assert weir.send_sync(Event(name="app/cloud")) == ["x"]
    [request] = api.requests
    assert request.url.path == captured["path"]
    assert request.headers["x-inngest-env"] == "my-branch"


async def test_error_reply_raises_with_ids() -> None:
    outcome = fixture("events/send_error_outcome.json")["server_reply"]
    api = EventApi(httpx.Response(outcome["status"], json=outcome["body"]))
    with pytest.raises(SendEventsError, match="bad event") as caught:
        await _weir(api).send(EVENTS)
    assert caught.value.ids == ["x1"]
    assert len(api.requests) == 1  # a 4xx is not retried


async def test_server_errors_are_retried() -> None:
    api = EventApi(httpx.Response(502), httpx.Response(200, json={"ids": ["a"]}))
    assert await _weir(api).send(EVENTS[:1]) == ["a"]
    assert len(api.requests) == 2


def test_cloud_send_without_key_fails_before_any_request() -> None:
    api = EventApi(httpx.Response(200, json={"ids": []}))
    weir = _weir(api, dev=False, signing_key="signkey-test-12")
    with pytest.raises(SendEventsError, match="no event key"):
        weir.send_sync(EVENTS)
    assert api.requests == []


def test_send_refuses_non_events() -> None:
    with pytest.raises(TypeError):
        _weir(EventApi()).send_sync([{"name": "x"}])  # type: ignore[list-item]


def test_defaults_point_at_local_weir() -> None:
    s = resolve(environ={})
    assert (s.dev, s.api_origin, s.event_api_origin) == (
        True,
        "http://127.0.0.1:8288",
        "http://127.0.0.1:8288",
    )


def test_weir_env_wins_over_inngest_env() -> None:
    env = {
        "WEIR_BASE_URL": "weir:9000",
        "INNGEST_BASE_URL": "http://inngest:1",
        "WEIR_DEV": "1",
        "INNGEST_EVENT_KEY": "ek",
    }
    s = resolve(environ=env)
    assert (s.api_origin, s.event_api_origin, s.event_key) == ("http://weir:9000",) * 2 + ("ek",)


def test_arguments_win_over_env() -> None:
    env = {"WEIR_API_BASE_URL": "http://env:1", "WEIR_DEV": "0", "WEIR_SIGNING_KEY": "aa"}
    s = resolve(api_base_url="http://arg:2", dev=True, environ=env)
    assert (s.api_origin, s.dev, s.signing_key) == ("http://arg:2", True, "aa")


def test_signing_key_without_dev_flag_means_cloud_mode() -> None:
    assert resolve(environ={"INNGEST_SIGNING_KEY": "signkey-prod-12"}).mode == "cloud"
    assert resolve(environ={"INNGEST_DEV": "http://127.0.0.1:9999"}).api_origin == (
        "http://127.0.0.1:9999"
    )


def test_an_unknown_setting_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(TypeError, match=r"unknown settings bogus; allowed: dev, base_url"):
        Weir("app", bogus=1)  # type: ignore[call-arg]
    assert Weir("app", dev=True, base_url="http://x:1").settings.api_origin == "http://x:1"
