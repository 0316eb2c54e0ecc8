"""Captured invocations replayed against weir.sdk: same status, ops, bodies and retry headers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from weir.sdk._steps.ops import hash_step_id

from tests.unit.sdk.sdk_proto_app import fixture, make_app, replay, without_stacks

EXACT = [
    "step_run_success",
    "step_run_repeated_id",
    "sleep_until",
    "wait_for_event",
    "wait_for_event_no_if",
    "invoke",
    "invoke_memoized_error",
    "parallel_discovery",
    "parallel_targeted_step",
    "step_planned_after_parallel",
    "step_error_retriable",
    "step_failed_last_attempt",
    "step_error_no_max_attempts",
    "step_error_memo_uncaught",
    "function_complete",
    "function_error",
    "function_returns_none",
    "echo_event_roundtrip",
]
RETRY_HEADERS = ("x-inngest-no-retry", "retry-after")


def _retry_headers(headers: Any) -> dict[str, str]:
    return {k: headers[k] for k in RETRY_HEADERS if k in headers}


@pytest.mark.parametrize("name", EXACT)
async def test_response_matches_capture(name: str) -> None:
    captured = fixture(f"opcodes/{name}.json")
    app, _ = make_app()
    response = await replay(app, captured)
    expected = captured["response"]
    assert response.status_code == expected["status"]
    assert without_stacks(response.json()) == without_stacks(expected["body"])
    assert _retry_headers(response.headers) == _retry_headers(expected["headers"])


async def test_targeting_an_unknown_step_is_step_unexpected() -> None:
    # The official SDK runs past a group whose branches were all skipped and reports the next
    # step ("after"); weir.sdk stops at the group, naming its first skipped step.
    captured = fixture("opcodes/targeted_unknown_step.json")
    app, _ = make_app()
    response = await replay(app, captured)
    assert response.status_code == 500
    assert response.json() == {
        "code": "step_unexpected",
        "message": 'found step "p1" when targeting a different step',
        "name": "StepUnexpectedError",
    }


async def test_step_errors_carry_a_traceback() -> None:
    app, _ = make_app()
    response = await replay(app, fixture("opcodes/step_error_retriable.json"))
    [op] = response.json()
    assert op["error"]["stack"].startswith("Traceback")
    assert "flaky failure on attempt 0" in op["error"]["stack"]


async def test_memoized_step_error_keeps_the_original_stack() -> None:
    app, _ = make_app()
    response = await replay(app, fixture("opcodes/step_error_memo_uncaught.json"))
    assert response.json()["stack"] == "Traceback..."


async def test_sleep_names_the_wake_time_in_iso_utc() -> None:
    app, _ = make_app()
    before = datetime.now(UTC)
    response = await replay(app, fixture("opcodes/sleep.json"))
    [op] = response.json()
    expected = fixture("opcodes/sleep.json")["response"]["body"][0]
    assert {k: v for k, v in op.items() if k != "name"} == {
        k: v for k, v in expected.items() if k != "name"
    }
    assert op["name"].endswith("Z")
    assert len(op["name"]) == len("2026-12-02T14:38:06.354Z")
    wake = datetime.fromisoformat(op["name"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=9) < wake < before + timedelta(seconds=11)


async def test_race_discovery_reports_every_branch_in_race_mode() -> None:
    captured = fixture("opcodes/parallel_race_discovery.json")
    app, _ = make_app()
    ops = (await replay(app, captured)).json()
    assert [(o["op"], o["id"], o["opts"]) for o in ops] == [
        (o["op"], o["id"], o["opts"]) for o in captured["response"]["body"]
    ]


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("step_nonretriable", "non_retriable_error", "do not retry me"),
        ("function_nonretriable", "non_retriable_error", "fatal function error"),
        ("step_retry_after", "retry_after_error", "try later"),
        ("function_retry_after", "retry_after_error", "rate limited upstream"),
    ],
)
async def test_control_errors_fail_the_request(name: str, code: str, message: str) -> None:
    captured = fixture(f"opcodes/{name}.json")
    app, _ = make_app()
    response = await replay(app, captured)
    body = response.json()
    assert response.status_code == 500
    assert (body["code"], body["message"], body["name"]) == (
        code,
        message,
        captured["response"]["body"]["name"],
    )
    assert ("x-inngest-no-retry" in response.headers) == (code == "non_retriable_error")


async def test_step_retry_after_sends_the_exact_time() -> None:
    app, _ = make_app()
    response = await replay(app, fixture("opcodes/step_retry_after.json"))
    assert response.headers["retry-after"] == "2030-01-02T03:04:05.678Z"


async def test_function_retry_after_is_relative_to_now() -> None:
    app, _ = make_app()
    response = await replay(app, fixture("opcodes/function_retry_after.json"))
    when = datetime.fromisoformat(response.headers["retry-after"].replace("Z", "+00:00"))
    assert abs((when - datetime.now(UTC)).total_seconds() - 90) < 5


async def test_nested_step_is_a_non_retriable_step_error() -> None:
    captured = fixture("opcodes/nested_step.json")
    app, _ = make_app()
    response = await replay(app, captured)
    [op] = response.json()
    [expected] = captured["response"]["body"]
    assert response.status_code == 206
    assert response.headers["x-inngest-no-retry"] == "true"
    assert (op["op"], op["id"], op["error"]["code"], op["error"]["message"]) == (
        expected["op"],
        expected["id"],
        "step_nested",
        expected["error"]["message"],
    )


async def test_send_event_posts_to_the_event_api_and_returns_ids() -> None:
    captured = fixture("opcodes/send_event.json")
    outgoing = fixture("opcodes/send_event_outgoing_request.json")
    seen: list[httpx.Request] = []

    def event_api(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"ids": ["01M8VK1MRTV7KT10KM8K182M1W"], "status": 200})

    app, _ = make_app(transport=httpx.MockTransport(event_api))
    response = await replay(app, captured)
    assert response.json() == captured["response"]["body"]
    [request] = seen
    assert request.url.path == outgoing["path"]
    body = httpx.Response(200, content=request.content).json()
    assert [{k: v for k, v in e.items() if k != "ts"} for e in body] == [
        {k: v for k, v in e.items() if k != "ts"} for e in outgoing["json"]
    ]
    assert isinstance(body[0]["ts"], int)


async def test_every_response_carries_the_sdk_headers() -> None:
    app, _ = make_app()
    response = await replay(app, fixture("opcodes/step_run_success.json"))
    assert response.headers["x-inngest-sdk"].startswith("weir-py:v")
    assert response.headers["x-inngest-req-version"] == "2"
    assert response.headers["x-inngest-framework"] == "fast_api"
    assert response.headers["x-inngest-expected-server-kind"] == "dev"
    assert response.headers["x-inngest-sdk-handled"] == "true"
    assert response.headers["content-type"] == "application/json"


async def test_use_api_fetches_events_and_memos_from_the_api() -> None:
    captured = fixture("opcodes/use_api.json")
    expected_paths = [r["path"] for r in captured["sdk_api_requests"]]
    seen: list[httpx.Request] = []
    event = captured["exchange"]["request"]["body"]["event"]

    def api(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/batch"):
            return httpx.Response(200, json=[event])
        return httpx.Response(200, json={hash_step_id("work", None): {"data": {"n": 1}}})

    app, _ = make_app(transport=httpx.MockTransport(api))
    response = await replay(app, captured["exchange"])
    assert response.json() == captured["exchange"]["response"]["body"]
    assert [r.url.path for r in seen] == expected_paths


async def test_use_api_failure_is_a_500() -> None:
    captured = fixture("opcodes/use_api.json")
    app, _ = make_app(transport=httpx.MockTransport(lambda r: httpx.Response(404)))
    response = await replay(app, captured["exchange"])
    assert response.status_code == 500
