"""Checkpointed functions end to end over real HTTP: a request runs several steps, Weir
saves them all in one commit with the call that ran them, in order, and whatever ended the
request (the return value, a step's error, the function's error, a sleep) is applied after
them. Every step body runs once, except the step that failed."""

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import weir_and_app
from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.backends import BACKENDS, empty_database

pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize("backend", BACKENDS, scope="module"),
]


@pytest.fixture(scope="module")
def servers(
    backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer]]:
    tmp = tmp_path_factory.mktemp(f"checkpoint-{backend}")
    with weir_and_app(tmp, backend, APP, "cp") as pair:
        yield pair


APP = "tests.integration.apps.weir_checkpoint"


def _finish(servers: tuple[WeirServer, AppServer], name: str) -> dict[str, Any]:
    weir, _ = servers
    return weir.finished_run(weir.send(name))


def _ran(app: AppServer, run: dict[str, Any]) -> Counter[str]:
    return Counter(e["name"] for e in app.entries("step") if e["run"] == run["run_id"])


def _calls(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for h in run["history"] if h["kind"] == "call"]


def _step_names(run: dict[str, Any]) -> list[str]:
    return [s["name"] for s in run["steps"]]


def test_ten_steps_are_saved_in_order_from_one_call(servers: tuple[WeirServer, AppServer]) -> None:
    run = _finish(servers, "cp/ten")
    assert run["status"] == "Completed" and run["output"] == 45
    assert _step_names(run) == [f"s{i}" for i in range(10)]
    assert [s["result"] for s in run["steps"]] == [{"data": i} for i in range(10)]
    [call] = _calls(run)
    assert call["status"] == "COMPLETED" and len(call["detail"]["ops"]) == 10
    assert _ran(servers[1], run) == Counter(f"s{i}" for i in range(10))


def test_the_step_budget_splits_the_run_into_calls(servers: tuple[WeirServer, AppServer]) -> None:
    run = _finish(servers, "cp/budget")
    assert run["output"] == list(range(7))
    assert [len(c["detail"]["ops"]) for c in _calls(run)] == [3, 3, 1]
    assert _step_names(run) == [f"b{i}" for i in range(7)]
    assert set(_ran(servers[1], run).values()) == {1}


def test_a_failed_step_retries_without_running_the_saved_steps_again(
    servers: tuple[WeirServer, AppServer],
) -> None:
    run = _finish(servers, "cp/flaky")
    assert run["status"] == "Completed" and run["output"] == "ok"
    assert _ran(servers[1], run) == Counter({"before": 1, "flaky": 2})
    first, second = _calls(run)  # the retry runs the step and ends the run in one call
    assert [o["op"] for o in first["detail"]["ops"]] == ["StepRun", "StepError"]
    assert first["status"] == "FAILED" and second["status"] == "COMPLETED"
    assert second["detail"]["result"] == "completed"
    assert _step_names(run) == ["before", "flaky"]


def test_the_function_s_error_keeps_its_steps_and_honours_retry_after(
    servers: tuple[WeirServer, AppServer],
) -> None:
    run = _finish(servers, "cp/raise")
    assert run["status"] == "Completed" and run["output"] == "done on attempt 1"
    assert _ran(servers[1], run) == Counter({"kept": 1})
    first, second = _calls(run)
    assert first["status"] == "FAILED" and first["detail"]["error"]["name"] == "RetryAfterError"
    assert second["started_at"] - first["ended_at"] >= 900  # retry-after: 1 s
    assert _step_names(run) == ["kept"]


def test_a_sleep_after_steps_is_slept_and_the_run_goes_on(
    servers: tuple[WeirServer, AppServer],
) -> None:
    run = _finish(servers, "cp/sleep")
    assert run["status"] == "Completed" and run["output"] == ["a", "b"]
    assert [o["op"] for o in _calls(run)[0]["detail"]["ops"]] == ["StepRun", "Sleep"]
    assert [h["status"] for h in run["history"] if h["kind"] == "sleep"] == ["COMPLETED"]
    assert _ran(servers[1], run) == Counter({"a": 1, "b": 1})


def test_a_call_cut_short_runs_its_unsaved_steps_again_and_saved_ones_never(
    backend: str, tmp_path: Path
) -> None:
    # the cost docs/sdk.md names: a checkpointed call's steps are saved when it answers
    with empty_database(backend, tmp_path) as url:
        weir = WeirServer(tmp_path, "--retry-interval", "1", database_url=url)  # app restarts
        app = AppServer(tmp_path, APP, "cpkill", weir.url)
        try:
            weir.start()
            app.start()
            app.sync()
            event_id = weir.send("cp/kill")
            wait_until(lambda: any(e["name"] == "slow" for e in app.entries("step")), 30)
            app.kill()
            app.start()
            run = weir.finished_run(event_id, timeout=60)
            again = weir.finished_run(weir.send("cp/ten"))  # and the app serves on
        finally:
            app.stop()
            weir.stop()
    assert run["status"] == "Completed" and run["output"] == "slow"
    assert _ran(app, run) == Counter({"a": 2, "b": 2, "slow": 2})
    assert _step_names(run) == ["a", "b", "slow"]
    assert set(_ran(app, again).values()) == {1}
