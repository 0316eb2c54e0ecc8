"""Every step kind, errors, retries, parallelism, invoke and on_failure, over real HTTP,
once with an app built on weir.sdk and once with the official inngest SDK, on SQLite; and
with weir.sdk on PostgreSQL too."""

import time

import pytest

from tests.integration.harness import SDK_AND_BACKEND, AppServer, WeirServer, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize(("sdk", "backend"), SDK_AND_BACKEND, scope="module"),
]


def test_steps_are_memoized_and_repeated_ids_are_distinct(
    weir_server: WeirServer, app: AppServer
) -> None:
    run = weir_server.finished_run(weir_server.send("t/steps", {"x": 1}))
    assert run["status"] == "Completed"
    assert run["output"] == {"a": 2, "b": ["first", "second"]}
    assert [s["result"] for s in run["steps"]] == [
        {"data": 2},
        {"data": "first"},
        {"data": "second"},
    ]
    assert len({s["id"] for s in run["steps"]}) == 3


def test_sleep_resumes_after_its_duration(weir_server: WeirServer, app: AppServer) -> None:
    sent = time.time() * 1000
    run = weir_server.finished_run(weir_server.send("t/sleep"))
    assert run["output"] == "woke"
    assert run["ended_at"] - sent >= 1000
    sleeps = [h for h in run["history"] if h["kind"] == "sleep"]
    assert len(sleeps) == 1 and sleeps[0]["status"] == "COMPLETED"


def test_wait_for_event_matches_on_its_expression(weir_server: WeirServer, app: AppServer) -> None:
    # a wait that outlasts a loaded machine's polling and sends; the timeout has its own test
    event_id = weir_server.send("t/wait", {"k": "blue", "timeout_s": 30})
    wait_until(lambda: any(h["kind"] == "wait" for h in _history(weir_server, event_id)))
    weir_server.send("t/go", {"k": "red"})  # does not match the expression
    weir_server.send("t/go", {"k": "blue", "n": 7})
    run = weir_server.finished_run(event_id)
    assert run["output"] == {"k": "blue", "n": 7}


def test_wait_for_event_times_out_with_null(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/wait", {"k": "never"}))
    assert run["status"] == "Completed" and run["output"] is None
    assert [h["status"] for h in run["history"] if h["kind"] == "wait"] == ["TIMED_OUT"]


def test_invoke_returns_the_child_result(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/parent"))
    assert run["status"] == "Completed" and run["output"] == 42


def test_send_event_from_a_step_triggers_other_functions(
    weir_server: WeirServer, app: AppServer
) -> None:
    run = weir_server.finished_run(weir_server.send("t/send"))
    assert run["output"] == 1
    sent_ids = run["steps"][0]["result"]["data"]
    assert len(sent_ids) == 1
    child = weir_server.finished_run(sent_ids[0])
    assert child["output"] == {"a": 42, "b": ["first", "second"]}


def test_step_error_retries_then_succeeds(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/flaky"))
    assert run["output"] == "ok on attempt 2"
    assert [e["attempt"] for e in app.entries("flaky")] == [0, 1, 2]
    calls = [h for h in run["history"] if h["kind"] == "call"]
    assert [h["attempt"] for h in calls] == [0, 1, 2, 0]  # the same request thrice, then onward
    assert [h["status"] for h in calls] == ["FAILED", "FAILED", "COMPLETED", "COMPLETED"]


def test_exhausted_step_error_is_handed_to_the_function(
    weir_server: WeirServer, app: AppServer
) -> None:
    run = weir_server.finished_run(weir_server.send("t/caught"))
    assert run["status"] == "Completed"
    assert run["output"].startswith("caught") and "always" in run["output"]
    assert run["steps"][0]["result"]["error"]["name"] == "ValueError"


def test_uncaught_failure_fails_the_run_and_runs_on_failure(
    weir_server: WeirServer, app: AppServer
) -> None:
    run = weir_server.finished_run(weir_server.send("t/doomed"))
    assert run["status"] == "Failed"
    assert "doomed step" in run["output"]["message"]
    wait_until(lambda: [e for e in app.entries("on_failure") if e["run"] == run["run_id"]])


def test_parallel_steps_all_complete(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/fanout"))
    assert run["output"] == [1, 2]
    targeted = {h["step_id"] for h in run["history"] if h["kind"] == "call"} - {"step"}
    assert len(targeted) == 2  # each branch ran in its own request


def test_non_retriable_error_fails_at_once(weir_server: WeirServer, app: AppServer) -> None:
    event_id = weir_server.send("t/nonretry")
    run = weir_server.finished_run(event_id)
    assert run["status"] == "Failed"
    assert len([h for h in run["history"] if h["kind"] == "call"]) == 1


def test_function_error_is_retried(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/fnretry"))
    assert run["status"] == "Completed" and run["output"] == 1


def test_repeated_event_id_starts_one_run(weir_server: WeirServer, app: AppServer) -> None:
    first = weir_server.send("t/steps", {"x": 5}, id=f"dedupe-{app.port}")
    second = weir_server.send("t/steps", {"x": 5}, id=f"dedupe-{app.port}")
    assert first != second
    weir_server.finished_run(first)
    fn_runs = [r for r in weir_server.runs(second) if r["function_id"].endswith("-steps")]
    assert fn_runs == []


def test_cancel_a_sleeping_run(weir_server: WeirServer, app: AppServer) -> None:
    import httpx

    event_id = weir_server.send("t/sleep", {"seconds": 60})
    run_id = wait_until(lambda: weir_server.runs(event_id)[0]["run_id"])
    wait_until(lambda: any(h["kind"] == "sleep" for h in weir_server.run(run_id)["history"]))
    assert httpx.delete(f"{weir_server.url}/v1/runs/{run_id}").status_code == 200
    run = weir_server.finished_run(event_id)
    assert run["status"] == "Cancelled"


def _history(server: WeirServer, event_id: str) -> list[dict[str, object]]:
    runs = server.runs(event_id)
    return server.run(runs[0]["run_id"])["history"] if runs else []


def test_race_returns_the_first_branch(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/race"))
    assert run["status"] == "Completed"
    assert "fast" in str(run["output"])


def test_retry_after_is_honoured(weir_server: WeirServer, app: AppServer) -> None:
    run = weir_server.finished_run(weir_server.send("t/later"))
    assert run["output"] == 1
    attempts = app.entries("later")[-2:]
    assert [e["attempt"] for e in attempts] == [0, 1]
    assert attempts[1]["at"] - attempts[0]["at"] >= 1.9  # not the 0.2 s retry interval
