"""The `inngest/function.failed` event carries the error as Inngest's server builds it (its
StandardError): `error` is "NonRetriableError" when the failing answer said not to retry
(as both SDKs say once a step has failed for good), and only `name`, `message` and `stack`
follow; the run's own output keeps the error the SDK sent. The
`inngest/function.finished` event carries the trigger event as stored."""

import json

import pytest

from tests.integration.harness import AppServer, WeirServer, store_rows, wait_until

pytestmark = pytest.mark.integration


def test_the_failed_event_error_has_inngests_shape(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/doomed"))
    assert run["status"] == "Failed"
    [handled] = wait_until(
        lambda: [e for e in app.entries("on_failure") if e["run"] == run["run_id"]]
    )
    error = handled["error"]
    assert error["error"] == "NonRetriableError"  # the step failed for good: no retry
    assert set(error) <= {"error", "name", "message", "stack"}, error
    assert "doomed step" in error["message"]
    assert error["name"] == run["output"]["name"]
    assert error.get("stack") == run["output"].get("stack")


def test_the_finished_event_carries_the_trigger_event_as_stored(
    weir_server: WeirServer, app: AppServer
) -> None:
    # Weir builds it from the events the executor holds for the run's calls, when it has
    # them: they must be the stored event, field for field.
    event_id = weir_server.send("t/steps", {"x": 7, "who": "\u00e9"}, id="finished-carries")
    run = weir_server.finished_run(event_id)
    assert run["status"] == "Completed"
    url = weir_server.database_url
    finished_events = "SELECT payload FROM events WHERE name = 'inngest/function.finished'"

    def finished() -> list[dict[str, object]]:
        found = [json.loads(p)["data"] for (p,) in store_rows(url, finished_events)]
        return [data for data in found if data["run_id"] == run["run_id"]]

    [data] = wait_until(finished)
    [(stored,)] = store_rows(url, f"SELECT payload FROM events WHERE id = '{event_id}'")
    assert data["event"] == json.loads(stored)
    assert data["events"] == [json.loads(stored)]
    assert data["result"] == run["output"]
