"""weir.sdk's signatures against replays: a request signed more than five minutes from now is
refused, and every signed answer is bound to its request (X-Weir-Signature) in the form Weir
checks (weir.platform.executor.signing)."""

from __future__ import annotations

import json
import time

import pytest
from weir.platform.executor import signing as weir_signing
from weir.platform.executor.trust import binds_answers
from weir.sdk._identity import SDK_REGISTER
from weir.sdk._serving.signing import canonical, signature, verify

from tests.unit.sdk.sdk_proto_app import (
    APP_URL,
    PRIMARY_KEY,
    client_for,
    cloud_settings,
    fixture,
    make_app,
)

BODY = b'{"a": 1}'
NOW = 1_800_000_000


@pytest.mark.parametrize(("age", "ok"), [(0, True), (299, True), (-299, True), (301, False)])
def test_a_request_signature_must_be_within_five_minutes(age: int, ok: bool) -> None:
    for signed_at in (NOW - age, NOW + age):  # too old, or from too far ahead
        header = signature(canonical(BODY), PRIMARY_KEY, at=signed_at)
        assert (verify(header, BODY, [PRIMARY_KEY], now=NOW) == PRIMARY_KEY) is ok


def test_a_request_signature_without_a_time_is_refused() -> None:
    header = signature(canonical(BODY), PRIMARY_KEY, at=NOW).split("&")[1]  # just s=...
    assert verify(header, BODY, [PRIMARY_KEY], now=NOW) is None


async def test_a_signed_answer_is_bound_to_its_request() -> None:
    request = fixture("signatures/cloud_signed_invoke.json")["request"]
    body = json.dumps(request["body"]).encode()
    app, _ = make_app(**cloud_settings())
    answers = []
    async with client_for(app) as client:
        for _ in range(2):  # two requests, the same but for their signature times
            header = signature(canonical(body), PRIMARY_KEY, at=int(time.time()) - len(answers))
            headers = request["headers"] | {"X-Inngest-Signature": header}
            response = await client.post(request["url"], headers=headers, content=body)
            assert response.status_code == 200
            answers.append((weir_signing.parse(header), response))
    for (ours, response), (other, _) in zip(answers, reversed(answers), strict=True):
        assert ours is not None and other is not None and ours != other
        bound = response.headers["x-weir-signature"]
        assert weir_signing.bound_to(response.content, bound, [PRIMARY_KEY], ours[1])
        assert not weir_signing.bound_to(response.content, bound, [PRIMARY_KEY], other[1])
        plain = response.headers["x-inngest-signature"]  # still what every SDK signs
        assert weir_signing.verify(response.content, plain, [PRIMARY_KEY])


async def test_dev_mode_answers_carry_no_signatures() -> None:
    app, _ = make_app()
    async with client_for(app) as client:
        response = await client.post(f"{APP_URL}?probe=trust")
    assert "x-weir-signature" not in response.headers


def test_weir_knows_from_the_registration_that_this_sdk_binds_its_answers() -> None:
    assert binds_answers(SDK_REGISTER)
    assert not binds_answers("py:v0.5.19")  # the official SDK
