"""PUT sync: the register request weir.sdk posts, and how the PUT is answered (§4)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from weir.sdk._serving.signing import hashed_key

from tests.unit.sdk.sdk_proto_app import APP_URL, cloud_settings, fixture, make_app


class FakeApi:
    """Records register calls and answers them like the dev server."""

    def __init__(self, *replies: httpx.Response) -> None:
        self.requests: list[httpx.Request] = []
        self.replies = list(replies) or [httpx.Response(200, json={"ok": True, "modified": True})]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]

    def payload(self, index: int = 0) -> Any:
        return json.loads(self.requests[index].content)


async def _put(
    app: Any, url: str = APP_URL, headers: dict[str, str] | None = None
) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport) as client:
        return await client.put(url, json={"url": url}, headers=headers or {})


async def test_put_posts_the_register_payload() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    response = await _put(app, headers={"X-Inngest-Server-Kind": "dev"})
    assert (response.status_code, response.json()) == (200, {"ok": True, "modified": True})
    assert response.headers["x-inngest-sync-kind"] == "out_of_band"
    [request] = api.requests
    assert str(request.url) == "http://127.0.0.1:8288/fn/register"
    assert request.headers["x-inngest-expected-server-kind"] == "dev"
    assert request.headers["x-inngest-framework"] == "fast_api"
    assert "authorization" not in request.headers


async def test_register_payload_top_level_shape() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    await _put(app)
    payload = api.payload()
    captured = fixture("register/dev_register_payload.json")
    assert set(payload) == set(captured)
    for key in ("appname", "appVersion", "deploy_type", "framework", "url", "v"):
        assert payload[key] == captured[key]
    assert payload["sdk"].startswith("weir-py:v")  # weir-: it binds its signed answers
    assert payload["capabilities"] == {"trust_probe": "v1"}


async def test_function_configs_match_the_captured_ones() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    await _put(app)
    ours = {f["id"]: f for f in api.payload()["functions"]}
    captured = {f["id"]: f for f in fixture("register/dev_register_payload.json")["functions"]}
    shared = set(ours) & set(captured)
    assert len(shared) >= 20
    for slug in sorted(shared):
        assert ours[slug] == captured[slug], slug


async def test_failure_handler_is_registered_right_after_its_function() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    await _put(app)
    ids = [f["id"] for f in api.payload()["functions"]]
    assert ids[ids.index("proto-app-with-failure") + 1] == "proto-app-with-failure-failure"


async def test_registered_url_is_the_url_the_put_reached() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    await _put(app, url="http://apps.internal:9000/api/inngest?x=1")
    payload = api.payload()
    assert payload["url"] == "http://apps.internal:9000/api/inngest"
    step = payload["functions"][0]["steps"]["step"]
    assert step["runtime"]["url"].startswith(
        "http://apps.internal:9000/api/inngest?fnId=proto-app-"
    )


async def test_serve_origin_overrides_the_registered_url(monkeypatch: Any) -> None:
    monkeypatch.setenv("WEIR_SERVE_ORIGIN", "https://public.example.com")
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    await _put(app)
    assert api.payload()["url"] == "https://public.example.com/api/inngest"


async def test_deploy_id_is_forwarded() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    await _put(app, url=f"{APP_URL}?deployId=d-123")
    assert api.requests[0].url.params["deployId"] == "d-123"


async def test_server_kind_mismatch_is_refused_without_registering() -> None:
    api = FakeApi()
    app, _ = make_app(transport=httpx.MockTransport(api))
    response = await _put(app, headers={"X-Inngest-Server-Kind": "cloud"})
    captured = fixture("register/dev_put_kind_mismatch_response.json")
    assert response.status_code == captured["status"] == 400
    assert response.json()["code"] == "server_kind_mismatch"
    assert api.requests == []


async def test_register_failure_is_passed_through_with_200() -> None:
    refusal = httpx.Response(400, json={"error": "At least one function is invalid"})
    app, _ = make_app(transport=httpx.MockTransport(FakeApi(refusal)))
    response = await _put(app)
    captured = fixture("register/dev_put_when_register_fails.json")
    assert (response.status_code, response.json()) == (captured["status"], captured["body"])


async def test_non_json_register_reply_is_registration_failed() -> None:
    app, _ = make_app(transport=httpx.MockTransport(FakeApi(httpx.Response(200, text="ok"))))
    response = await _put(app)
    assert response.status_code == 500
    assert response.json()["code"] == "registration_failed"


async def test_unreachable_api_is_registration_failed() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    app, _ = make_app(transport=httpx.MockTransport(down))
    response = await _put(app)
    assert (response.status_code, response.json()["code"]) == (500, "registration_failed")


async def test_register_auth_falls_back_to_the_second_key() -> None:
    captured = fixture("signatures/register_auth_fallback.json")
    unauthorized = httpx.Response(401, json={"error": "unauthorized"})
    api = FakeApi(unauthorized, unauthorized)
    app, _ = make_app(transport=httpx.MockTransport(api), **cloud_settings())
    response = await _put(app)
    sent = [r.headers["authorization"] for r in api.requests]
    assert sent == captured["authorization_headers_in_order"]
    assert response.status_code == captured["put_status"]
    assert response.json() == json.loads(captured["put_body"])
    assert api.requests[0].headers["x-inngest-env"] == "my-branch"


def test_bearer_is_sha256_of_the_hex_decoded_key() -> None:
    assert hashed_key("signkey-prod-" + "12" * 32) == (
        "b6acca81a0939a856c35e4c4188e95b91731aab1d4629a4cee79dd09ded4fc94"
    )
