"""Introspection, trust probes and signatures, dev and cloud (§5, §12)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
import jcs
import pytest
from weir.sdk._serving.signing import (
    UnreadableBody,
    canonical,
    signature,
    strip_prefix,
    verify,
)

from tests.unit.sdk.sdk_proto_app import (
    APP_URL,
    FALLBACK_KEY,
    PRIMARY_KEY,
    client_for,
    cloud_settings,
    fixture,
    make_app,
    replay,
)


def _response_signed_with(response: httpx.Response, key: str) -> bool:
    fields = dict(p.split("=", 1) for p in response.headers["x-inngest-signature"].split("&"))
    message = response.content + fields["t"].encode()
    mac = hmac.new(strip_prefix(key).encode(), message, hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, fields["s"])


def _fresh(captured: dict[str, Any], key: str) -> dict[str, Any]:
    """The captured exchange with its request signed now: the captured time is too old for
    weir.sdk, which, unlike the official SDK, refuses signatures over five minutes old."""
    request = captured["request"]
    header = signature(canonical(json.dumps(request["body"]).encode()), key)
    headers = request["headers"] | {"X-Inngest-Signature": header}
    return captured | {"request": request | {"headers": headers}}


async def _get(app: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    async with client_for(app) as client:
        return await client.get(APP_URL, headers=headers or {})


async def test_dev_introspection() -> None:
    app, _ = make_app()
    response = await _get(app)
    captured = fixture("introspection/dev_get.json")
    assert response.status_code == 200
    assert response.json() == captured["body"] | {"function_count": 24}


async def test_dev_introspection_from_the_wrong_server_kind_is_forbidden() -> None:
    app, _ = make_app()
    response = await _get(app, {"X-Inngest-Server-Kind": "cloud"})
    assert (response.status_code, response.json()) == (403, {})


async def test_dev_trust_probe() -> None:
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(f"{APP_URL}?probe=trust")
    assert (response.status_code, response.json()) == (200, None)


async def test_unknown_probe_is_an_error() -> None:
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(f"{APP_URL}?probe=other")
    assert response.status_code == 500


async def test_cloud_unsigned_get_is_unauthorized() -> None:
    app, _ = make_app(**cloud_settings())
    response = await _get(app)
    captured = fixture("introspection/cloud_get_unsigned.json")
    assert (response.status_code, response.json()) == (401, captured["body"])
    assert "x-inngest-sdk" not in response.headers


async def test_cloud_signed_get_is_the_authenticated_inspection() -> None:
    app, _ = make_app(**cloud_settings())
    response = await _get(app, {"X-Inngest-Signature": signature(b"", PRIMARY_KEY)})
    captured = fixture("introspection/cloud_get_signed.json")["body"]
    body = response.json()
    assert response.status_code == 200
    assert set(body) == set(captured)
    same = set(captured) - {"capabilities", "function_count", "sdk_version", "framework"}
    assert {k: body[k] for k in same} == {k: captured[k] for k in same}
    assert _response_signed_with(response, PRIMARY_KEY)


@pytest.mark.parametrize(
    ("name", "status", "key"),
    [
        ("signatures/cloud_signed_invoke.json", 200, PRIMARY_KEY),
        ("signatures/cloud_fallback_signed_invoke.json", 200, FALLBACK_KEY),
        ("signatures/cloud_bad_signature.json", 401, None),
        ("signatures/cloud_unsigned_invoke.json", 401, None),
    ],
)
async def test_cloud_invocations_are_verified(name: str, status: int, key: str | None) -> None:
    captured = fixture(name) if key is None else _fresh(fixture(name), key)
    app, _ = make_app(**cloud_settings())
    response = await replay(app, captured)
    assert response.status_code == status
    assert response.json() == captured["response"]["body"]
    if key is None:
        assert set(response.headers) == {"content-type", "x-inngest-sdk-handled", "content-length"}
    else:
        assert _response_signed_with(response, key)
        assert response.headers["x-inngest-env"] == "my-branch"
        assert response.headers["x-inngest-expected-server-kind"] == "cloud"


async def test_a_signature_older_than_five_minutes_is_refused() -> None:
    captured = fixture("signatures/cloud_old_timestamp.json")  # the official SDK takes it
    app, _ = make_app(**cloud_settings())
    response = await replay(app, captured)
    assert (response.status_code, response.json()) == (401, {"message": "Unauthorized"})


async def test_signature_holds_for_a_reformatted_body() -> None:
    captured = _fresh(fixture("signatures/cloud_signed_invoke.json"), PRIMARY_KEY)
    request = captured["request"]
    app, _ = make_app(**cloud_settings())
    async with client_for(app) as client:
        pretty = json.dumps(request["body"], indent=4, sort_keys=False)
        response = await client.post(request["url"], headers=request["headers"], content=pretty)
    assert response.status_code == 200


async def test_cloud_trust_probe_needs_a_signature() -> None:
    app, _ = make_app(**cloud_settings())
    async with client_for(app) as client:
        unsigned = await client.post(f"{APP_URL}?probe=trust")
        signed = await client.post(
            f"{APP_URL}?probe=trust", headers={"X-Inngest-Signature": signature(b"", PRIMARY_KEY)}
        )
    assert unsigned.status_code == 401
    assert (signed.status_code, signed.json()) == (200, None)
    assert _response_signed_with(signed, PRIMARY_KEY)


def test_signature_matches_the_captured_request_signature() -> None:
    captured = fixture("signatures/cloud_signed_invoke.json")
    body = json.dumps(captured["request"]["body"]).encode()
    header = captured["request"]["headers"]["X-Inngest-Signature"]
    assert signature(canonical(body), PRIMARY_KEY, at=1796222277) == header
    assert verify(header, body, [PRIMARY_KEY], now=1796222277 + 60) == PRIMARY_KEY


def test_response_signature_is_over_raw_bytes() -> None:
    response = fixture("signatures/cloud_signed_invoke.json")["response"]
    raw = response["body_raw"].encode()
    assert signature(raw, PRIMARY_KEY, at=1796222277) == response["headers"]["x-inngest-signature"]


@pytest.mark.parametrize(
    "header",
    [None, "", "t=1&s=deadbeef", "garbage", "s=", "t=1796222277"],
)
def test_bad_signatures_do_not_verify(header: str | None) -> None:
    assert verify(header, b'{"a": 1}', [PRIMARY_KEY, FALLBACK_KEY]) is None


def test_a_non_json_body_is_named_unreadable_not_wrongly_signed() -> None:
    header = signature(b"not json", PRIMARY_KEY)
    with pytest.raises(UnreadableBody, match="cannot be put in canonical JSON"):
        verify(header, b"not json", [PRIMARY_KEY])


@pytest.mark.parametrize("number", ["100000000000000000000", "-12345678901234567000", "1e+21"])
def test_a_body_a_server_signed_verifies_whatever_its_numbers(number: str) -> None:
    """A double from 2^53 to 1e21 goes out of canonical JSON (Inngest's, Weir's) as plain
    digits: weir.sdk reads it back as that double, as the official SDK's `jcs` does."""
    body = b'{"data":{"n":' + number.encode() + b"}}"
    assert canonical(body) == bytes(jcs.canonicalize(json.loads(body)))
    assert verify(signature(body, PRIMARY_KEY), body, [PRIMARY_KEY]) == PRIMARY_KEY


async def test_a_body_that_has_no_canonical_form_gets_a_400_naming_it() -> None:
    app, _ = make_app(**cloud_settings())
    body = b'{"a": "\\ud800"}'
    headers = {"X-Inngest-Signature": signature(body, PRIMARY_KEY)}
    async with client_for(app) as client:
        response = await client.post(APP_URL, content=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["name"] == "UnreadableBody"
    assert "canonical JSON" in response.json()["message"]


def test_hex_decoded_key_is_not_the_hmac_key() -> None:
    body = b'{"a": 1}'
    decoded = bytes.fromhex(strip_prefix(PRIMARY_KEY))
    mac = hmac.new(decoded, canonical(body) + b"5", hashlib.sha256).hexdigest()
    assert verify(f"t=5&s={mac}", body, [PRIMARY_KEY]) is None


def test_cloud_mode_without_signing_key_refuses_to_serve() -> None:
    with pytest.raises(ValueError, match="signing key"):
        make_app(dev=False)
