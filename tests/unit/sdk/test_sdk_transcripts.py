"""Whole runs driven request by request, as the executor would, from captured transcripts."""

from __future__ import annotations

from typing import Any

import pytest
from weir.sdk._steps.ops import hash_step_id

from tests.unit.sdk.sdk_proto_app import client_for, fixture, make_app, replay, without_stacks


@pytest.mark.parametrize("name", ["parallel_wait", "step_error_exhausted_uncaught"])
async def test_transcript_replays_identically(name: str) -> None:
    transcript = fixture(f"transcripts/{name}.json")
    app, _ = make_app()
    for exchange in transcript["exchanges"]:
        response = await replay(app, exchange)
        expected = exchange["response"]
        assert response.status_code == expected["status"]
        assert without_stacks(response.json()) == without_stacks(expected["body"])


async def test_on_failure_handler_runs_under_its_own_slug() -> None:
    transcript = fixture("transcripts/on_failure.json")
    app, _ = make_app()
    [exchange] = transcript["failure_handler"]["exchanges"][:1]
    response = await replay(app, exchange)
    assert response.status_code == 200
    assert response.json() == {"failed_fn": "proto-app-with-failure", "orig": "app/fail"}


def _body(steps: dict[str, Any], *, disable: bool = False, attempt: int = 0) -> dict[str, Any]:
    event = {"name": "app/parallel-race", "data": {}, "id": "e1", "ts": 1}
    ctx = {
        "run_id": "r1",
        "attempt": attempt,
        "disable_immediate_execution": disable,
        "stack": {"stack": []},
        "max_attempts": 3,
    }
    return {"event": event, "events": [event], "steps": steps, "ctx": ctx, "use_api": False}


async def _post(
    app: Any, body: dict[str, Any], step_id: str = "step", fn: str = "parallel-race"
) -> Any:
    async with client_for(app) as client:
        url = f"/api/inngest?fnId=proto-app-{fn}&stepId={step_id}"
        return await client.post(url, json=body)


R1, SLEEP, WINNER = (
    hash_step_id("r1", None),
    hash_step_id("r-sleep", None),
    hash_step_id("winner", None),
)


async def test_race_records_the_first_settled_branch_as_a_step() -> None:
    app, _ = make_app()
    response = await _post(app, _body({R1: {"data": 1}}))
    [op] = response.json()
    assert (op["op"], op["id"], op["data"]) == ("StepRun", WINNER, 0)


async def test_race_winner_is_stable_once_recorded() -> None:
    app, _ = make_app()
    # The sleep settles later, but the recorded winner (branch 0) still decides.
    response = await _post(app, _body({R1: {"data": 1}, SLEEP: None, WINNER: {"data": 0}}))
    assert (response.status_code, response.json()) == (200, 1)
    response = await _post(app, _body({SLEEP: None, R1: {"data": 1}, WINNER: {"data": 1}}))
    assert (response.status_code, response.json()) == (200, None)


async def test_race_winner_is_planned_when_immediate_execution_is_off() -> None:
    app, _ = make_app()
    response = await _post(app, _body({SLEEP: None}, disable=True))
    [op] = response.json()
    assert (op["op"], op["id"]) == ("StepPlanned", WINNER)
    response = await _post(app, _body({SLEEP: None}, disable=True), step_id=WINNER)
    [op] = response.json()
    assert (op["op"], op["data"]) == ("StepRun", 1)


async def test_race_targeted_branch_reports_in_race_mode() -> None:
    app, _ = make_app()
    response = await _post(app, _body({}, disable=True), step_id=R1)
    [op] = response.json()
    assert (op["op"], op["id"], op["data"], op["opts"]) == (
        "StepRun",
        R1,
        1,
        {"parallelMode": "race"},
    )


async def test_sync_handler_runs_steps_and_completes() -> None:
    app, _ = make_app()
    s1, s2 = hash_step_id("s1", None), hash_step_id("s2", None)
    body = _body({}) | {"event": {"name": "app/sync", "data": {}}, "events": []}
    response = await _post(app, body, fn="sync-steps")
    assert [(o["op"], o["id"], o["data"]) for o in response.json()] == [("StepRun", s1, 1)]
    body["steps"] = {s1: {"data": 1}, s2: {"data": 2}}
    response = await _post(app, body, fn="sync-steps")
    assert (response.status_code, response.json()) == (200, {"sum": 3})


async def test_step_planned_when_immediate_execution_is_disabled() -> None:
    app, _ = make_app()
    body = _body({}, disable=True) | {"event": {"name": "app/sync", "data": {}}, "events": []}
    response = await _post(app, body, fn="sync-steps")
    [op] = response.json()
    assert op["op"] == "StepPlanned"
    assert op["data"] is None
