"""Rerun from a step with a new input for it (Inngest's `RerunFromStepInput.input`), over REST
and GraphQL, against a real Weir and an app on each SDK: weir.sdk sends a step.run's
arguments (as Inngest's TypeScript SDK does), so a rerun can give that step new ones; the
official Python SDK sends none, so Weir says there is nothing to replace."""

import json
from typing import Any

import httpx
import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until

pytestmark = pytest.mark.integration


def _rerun(weir: WeirServer, run_id: str, body: object) -> httpx.Response:
    return httpx.post(f"{weir.url}/v1/runs/{run_id}/rerun", json=body)


def _finished(weir: WeirServer, run_id: str) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        run = weir.run(run_id)
        return run if run["status"] in ("Completed", "Failed", "Cancelled") else None

    found: dict[str, Any] = wait_until(ended, timeout=30)
    return found


def _greeted(weir: WeirServer) -> dict[str, Any]:
    run = weir.finished_run(weir.send("t/greet"))
    assert run["status"] == "Completed" and run["output"] == {"shout": "HELLO"}, run
    return run


def test_a_rerun_gives_the_step_its_new_input_where_the_sdk_sends_one(
    sdk: str, weir_server: WeirServer, app: AppServer
) -> None:
    run = _greeted(weir_server)
    answer = _rerun(weir_server, run["run_id"], {"from_step": "shout", "input": ["grace"]})
    if sdk == "inngest":
        assert answer.status_code == 409, answer.text
        assert "reported no input" in answer.json()["error"], answer.text
        return
    assert answer.status_code == 200, answer.text
    again = _finished(weir_server, answer.json()["data"]["run_id"])
    assert again["status"] == "Completed" and again["output"] == {"shout": "GRACE"}, again
    assert again["original_run_id"] == run["run_id"]
    [pick] = [s for s in again["steps"] if s["name"] == "pick"]
    assert pick["at"] <= again["run_started_at"]  # kept from the original, not run again


def test_graphql_rerun_takes_the_input_as_inngest_names_it(
    sdk: str, weir_server: WeirServer, app: AppServer
) -> None:
    run = _greeted(weir_server)
    query = "mutation($id: ULID!, $from: RerunFromStepInput) { rerun(runID: $id, fromStep: $from) }"
    variables = {"id": run["run_id"], "from": {"stepID": "shout", "input": json.dumps(["ada"])}}
    body = {"query": query, "variables": variables}
    answer = httpx.post(f"{weir_server.url}/v0/gql", json=body).json()
    if sdk == "inngest":
        assert "reported no input" in answer["errors"][0]["message"], answer
        return
    again = _finished(weir_server, answer["data"]["rerun"])
    assert again["output"] == {"shout": "ADA"}, again


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"from_step": "shout", "input": "grace"}, "input must be a JSON array"),
        ({"input": ["grace"]}, "name the step in from_step"),
        ({"from_step": "shout", "input": [2**60]}, "input[0]"),
        ({"from_step": "shout", "args": ["grace"]}, '"input": [...]'),
    ],
)
def test_an_input_weir_cannot_use_is_refused_saying_what_is_allowed(
    sdk: str, weir_server: WeirServer, app: AppServer, body: object, says: str
) -> None:
    run = _greeted(weir_server)
    answer = _rerun(weir_server, run["run_id"], body)
    assert answer.status_code == 400, answer.text
    assert says in answer.json()["error"], answer.text
