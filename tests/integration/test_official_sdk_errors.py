"""What an app on the official SDK sees of its own failures, as Inngest shows them, through
every framework adapter (FastAPI, Flask, Django, Tornado, DigitalOcean) and over Connect:

- a failed run's output is the error body as the app sent it, JSON for JSON: `"stack": null`
  stays (an invoke that times out is re-raised by the SDK with no stack);
- when the app says not to retry (`x-inngest-no-retry: true`, a NonRetriableError), the
  `inngest/function.failed` event's `data.error.error` is "NonRetriableError", as Inngest's
  HTTP driver writes it, not the call's HTTP status.
"""

import json
from collections.abc import Callable, Iterator

import pytest

from tests.integration.harness import AppServer, WeirServer, store_rows, wait_until
from tests.integration.test_connect import ConnectWorker, Weir, connected
from tests.integration.test_frameworks import FRAMEWORKS

pytestmark = pytest.mark.integration
SERVED = ["fastapi", *sorted(FRAMEWORKS), "connect"]

Served = tuple[WeirServer, Callable[[str], str]]  # the server, an event's name by its stem


@pytest.fixture(scope="module", params=SERVED)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    how = str(request.param)
    tmp = tmp_path_factory.mktemp(how)
    weir = Weir(tmp)
    app: AppServer | ConnectWorker
    if how == "connect":
        app = ConnectWorker(tmp, weir.url, "connectapp")
    elif how == "fastapi":
        app = AppServer(tmp, "tests.integration.apps.inngest_app", "inngestapp", weir.url)
    else:
        module, launch = FRAMEWORKS[how]
        app = AppServer(tmp, module, f"{how.replace('_', '')}app", weir.url)
        launch(app)
    try:  # started inside: a server slow to start is still stopped
        weir.start()
        app.start()
        if isinstance(app, ConnectWorker):
            wait_until(lambda: connected(weir, "connectapp"), timeout=30)
        else:
            assert app.sync().get("ok")
        prefix = "c" if how == "connect" else "t"
        yield weir, lambda stem: f"{prefix}/{stem}"
    finally:
        app.stop()
        weir.stop()


def _failed_event_data(weir: WeirServer, run_id: str) -> dict[str, object]:
    query = "SELECT payload FROM events WHERE name = 'inngest/function.failed'"

    def found() -> list[dict[str, object]]:
        payloads = [json.loads(p)["data"] for (p,) in store_rows(weir.database_url, query)]
        return [data for data in payloads if data["run_id"] == run_id]

    [data] = wait_until(found)
    return data


def test_a_failed_run_keeps_a_null_stack_as_the_app_sent_it(served: Served) -> None:
    weir, event = served
    run = weir.finished_run(weir.send(event("impatient")), timeout=60)
    assert run["status"] == "Failed", run
    output = run["output"]
    assert output["name"] == "InngestInvokeTimeoutError", output
    assert "stack" in output and output["stack"] is None, output


def test_the_failed_event_of_a_run_the_app_said_not_to_retry_says_non_retriable(
    served: Served,
) -> None:
    weir, event = served
    run = weir.finished_run(weir.send(event("nonretry")), timeout=60)
    assert run["status"] == "Failed", run
    assert [h["attempt"] for h in run["history"] if h["kind"] == "call"] == [0], run["history"]
    error = _failed_event_data(weir, run["run_id"])["error"]
    assert isinstance(error, dict)
    assert error["error"] == "NonRetriableError", error
    assert error["name"] == "NonRetriableError" and error["message"] == "give up at once", error
