"""The `inngest/function.failed` event carries the error as Inngest's server builds it (its
StandardError): `error` names the HTTP status of the failing call, and only `name`,
`message` and `stack` follow; the run's own output keeps the error the SDK sent."""

import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until

pytestmark = pytest.mark.integration


def test_the_failed_event_error_has_inngests_shape(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/doomed"))
    assert run["status"] == "Failed"
    [handled] = wait_until(
        lambda: [e for e in app.entries("on_failure") if e["run"] == run["run_id"]]
    )
    error = handled["error"]
    assert error["error"] == "invalid status code: 500"
    assert set(error) <= {"error", "name", "message", "stack"}, error
    assert "doomed step" in error["message"]
    assert error["name"] == run["output"]["name"]
    assert error.get("stack") == run["output"].get("stack")
