"""Connect: a worker of the official SDK (`inngest.connect`, its own process, listening on no
port) connects out to a real Weir process; every call travels over its WebSocket.

Each step body appends a line to the worker's journal, so "no lost or doubled step" is
counted in the app's own log, across a Weir restart and a worker restart.
"""

import html
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import (
    START_EVENT_KEY,
    START_OTHER_KEY,
    START_SIGNING_KEY,
    AppServer,
    Process,
    WeirServer,
    wait_until,
)

pytestmark = pytest.mark.integration
WORKER = "tests.integration.apps.inngest_connect"
STEP_S = 12.0  # c/slow's steps in `pair`: two lease extensions (every 5 s) before one ends


class Weir(WeirServer):
    def start(self) -> None:
        # a worker gives up after ~25 s without Weir; a busy machine may take 20 s to start it
        Process.start(self)
        wait_until(lambda: httpx.get(f"{self.url}/health").status_code == 200, timeout=60)


class ConnectWorker(Process):
    def __init__(
        self,
        tmp: Path,
        weir_url: str,
        app_id: str,
        step_s: float = 0.0,
        signing_key: str | None = None,
    ) -> None:
        self.journal = tmp / f"{app_id}.journal"
        env = os.environ | {
            "APP_ID": app_id,
            "WEIR_TEST_JOURNAL": str(self.journal),
            "STEP_SECONDS": str(step_s),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("INNGEST_DEV", None)
        if signing_key is None:
            env["INNGEST_DEV"] = weir_url
        else:  # cloud mode: the worker proves the key to /v0/connect/start
            env |= {"INNGEST_BASE_URL": weir_url, "INNGEST_SIGNING_KEY": signing_key}
        super().__init__([sys.executable, "-m", WORKER], env, tmp / f"{app_id}.log")

    def entries(self, what: str) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        lines = self.journal.read_text().splitlines()
        return [e for e in map(json.loads, lines) if e["what"] == what]


def connected(weir: WeirServer, app_id: str, headers: dict[str, str] | None = None) -> bool:
    """The worker's app shows on the apps page, synced with its functions."""
    page = httpx.get(f"{weir.url}/apps", headers=headers).text
    functions = httpx.get(f"{weir.url}/functions", headers=headers).text
    return app_id in page and f"{app_id}-steps" in functions


def run_of(weir: WeirServer, event_id: str) -> str:
    run_id: str = wait_until(lambda: weir.runs(event_id)[0]["run_id"])
    return run_id


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WeirServer, ConnectWorker]]:
    tmp = tmp_path_factory.mktemp("connect")
    weir = Weir(tmp)
    worker = ConnectWorker(tmp, weir.url, "connectapp", step_s=STEP_S)
    try:  # started inside: a server slow to start is still stopped
        weir.start()
        worker.start()
        wait_until(lambda: connected(weir, "connectapp"), timeout=30)
        yield weir, worker
    finally:
        worker.stop()
        weir.stop()


def test_a_connected_app_is_synced_like_any_app(pair: tuple[WeirServer, ConnectWorker]) -> None:
    weir, _ = pair
    functions = httpx.get(f"{weir.url}/functions").text
    for fn in ("steps", "sleeper", "waiter", "flaky", "slow"):
        assert f"connectapp-{fn}" in functions


def test_steps_run_over_the_socket_once_each(pair: tuple[WeirServer, ConnectWorker]) -> None:
    weir, worker = pair
    event_id = weir.send("c/steps", {"x": 4})
    run = weir.finished_run(event_id)
    assert run["status"] == "Completed"
    assert run["output"] == {"a": 5, "b": 10}
    mine = [e["step"] for e in worker.entries("step") if e["run"] == run["run_id"]]
    assert sorted(mine) == ["a", "b"]


def test_a_sleep_wakes_the_run(pair: tuple[WeirServer, ConnectWorker]) -> None:
    weir, _ = pair
    run = weir.finished_run(weir.send("c/sleep", {"seconds": 1}))
    assert run["status"] == "Completed"
    assert run["output"] == "woke"
    assert any(h["kind"] == "sleep" for h in run["history"])


def test_wait_for_event_resumes_with_the_matching_event(
    pair: tuple[WeirServer, ConnectWorker],
) -> None:
    weir, _ = pair
    event_id = weir.send("c/wait", {"k": "one"})
    run_id = run_of(weir, event_id)
    wait_until(lambda: any(h["kind"] == "wait" for h in weir.run(run_id)["history"]))
    weir.send("c/go", {"k": "other"})  # does not match: the run keeps waiting
    weir.send("c/go", {"k": "one", "v": 7})
    run = weir.finished_run(event_id)
    assert run["status"] == "Completed"
    assert run["output"] == {"k": "one", "v": 7}


def test_a_failing_step_is_retried_until_it_succeeds(
    pair: tuple[WeirServer, ConnectWorker],
) -> None:
    weir, worker = pair
    run = weir.finished_run(weir.send("c/flaky"))
    assert run["output"] == "ok on attempt 2"
    attempts = [e["attempt"] for e in worker.entries("flaky") if e["run"] == run["run_id"]]
    assert attempts == [0, 1, 2]


def test_cancel_stops_the_step_running_on_the_worker(
    pair: tuple[WeirServer, ConnectWorker],
) -> None:
    weir, worker = pair
    event_id = weir.send("c/slow", {"steps": 2})
    run_id = run_of(weir, event_id)
    wait_until(lambda: _phases(worker, run_id, 0) == ["start"])
    assert httpx.delete(f"{weir.url}/v1/runs/{run_id}").status_code == 200
    assert weir.finished_run(event_id)["status"] == "Cancelled"
    # the worker's next lease extension (every 5 s) is refused, so it drops the step: it never
    # ends, though the cancel may land as late as the second extension, and no later step
    # starts. Look once the step would have ended.
    [started] = [e["at"] for e in worker.entries("slow") if e["run"] == run_id and e["step"] == 0]
    time.sleep(max(0.0, started + STEP_S + 1 - time.time()))
    assert _phases(worker, run_id, 0) == ["start"]
    assert _phases(worker, run_id, 1) == []


def _phases(worker: ConnectWorker, run_id: str, step: int) -> list[str]:
    return [e["phase"] for e in worker.entries("slow") if e["run"] == run_id and e["step"] == step]


def test_a_weir_restart_mid_run_loses_and_doubles_no_step(tmp_path: Path) -> None:
    weir = Weir(tmp_path)
    worker = ConnectWorker(tmp_path, weir.url, "restartapp", step_s=1.5)
    try:
        weir.start()
        worker.start()
        wait_until(lambda: connected(weir, "restartapp"), timeout=30)
        event_id = weir.send("c/slow", {"steps": 4})
        run_id = run_of(weir, event_id)
        # SIGTERM while step 1 runs on the worker: Weir lets it finish and keeps its result
        wait_until(lambda: _phases(worker, run_id, 1) == ["start"], timeout=30)
        weir.stop()
        weir.start()
        run = weir.finished_run(event_id, timeout=60)
    finally:
        worker.stop()
        weir.stop()
    assert run["status"] == "Completed"
    assert run["output"] == [0, 1, 2, 3]
    starts = Counter(e["step"] for e in worker.entries("slow") if e["phase"] == "start")
    assert starts == {0: 1, 1: 1, 2: 1, 3: 1}


def test_a_worker_restart_mid_run_loses_and_doubles_no_step(tmp_path: Path) -> None:
    weir = Weir(tmp_path)
    first = ConnectWorker(tmp_path, weir.url, "workerapp", step_s=1.5)
    second = ConnectWorker(tmp_path, weir.url, "workerapp", step_s=1.5)
    try:
        weir.start()
        first.start()
        wait_until(lambda: connected(weir, "workerapp"), timeout=30)
        event_id = weir.send("c/slow", {"steps": 4})
        run_id = run_of(weir, event_id)
        # SIGTERM while step 1 runs: the worker pauses, finishes the step, replies and leaves
        wait_until(lambda: _phases(first, run_id, 1) == ["start"], timeout=30)
        first.stop()
        second.start()  # the same app: its next steps run here
        run = weir.finished_run(event_id, timeout=60)
    finally:
        second.stop()
        first.stop()
        weir.stop()
    assert run["status"] == "Completed"
    assert run["output"] == [0, 1, 2, 3]
    starts = Counter(e["step"] for e in first.entries("slow") if e["phase"] == "start")
    assert starts == {0: 1, 1: 1, 2: 1, 3: 1}  # both workers write the same journal


KEY = START_SIGNING_KEY
OTHER = START_OTHER_KEY
TOKEN = "integration-admin-token"
ADMIN = {"authorization": f"Bearer {TOKEN}"}


class StartedWeir(Weir):
    """`weir start`: the signing key, a strong event key and an admin token for the reads."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        super().__init__(
            tmp,
            "--signing-key",
            KEY,
            "--event-key",
            START_EVENT_KEY,
            "--admin-token",
            TOKEN,
            *extra,
        )
        self.args[self.args.index("dev")] = "start"
        self.event_key = START_EVENT_KEY

    def runs(self, event_id: str) -> list[dict[str, Any]]:
        resp = httpx.get(f"{self.url}/v1/events/{event_id}/runs", headers=ADMIN)
        data: list[dict[str, Any]] = resp.json()["data"]
        return data

    def run(self, run_id: str) -> dict[str, Any]:
        resp = httpx.get(f"{self.url}/v1/runs/{run_id}", headers=ADMIN)
        data: dict[str, Any] = resp.json()["data"]
        return data


def test_weir_start_admits_only_a_worker_holding_the_signing_key(tmp_path: Path) -> None:
    weir = StartedWeir(tmp_path, "--connect-apps", "cloudapp")
    impostor = ConnectWorker(tmp_path, weir.url, "impostor", signing_key=OTHER)
    worker = ConnectWorker(tmp_path, weir.url, "cloudapp", signing_key=KEY)
    try:
        weir.start()
        impostor.start()
        worker.start()
        wait_until(lambda: connected(weir, "cloudapp", ADMIN), timeout=30)
        # unsigned replies over the socket are trusted: the socket was opened with the key
        run = weir.finished_run(weir.send("c/steps", {"x": 1}))
        assert impostor.proc is not None
        impostor.proc.wait(30)  # refused (401): the SDK gives up at once
    finally:
        impostor.stop()
        worker.stop()
        weir.stop()
    assert run["status"] == "Completed"
    assert run["output"] == {"a": 2, "b": 4}
    assert impostor.proc.returncode != 0
    assert "unauthorized" in impostor.log.read_text()
    assert "impostor" not in weir.log.read_text()


def test_a_worker_killed_mid_step_loses_its_lease_and_the_step_runs_again(
    tmp_path: Path,
) -> None:
    weir = Weir(tmp_path)
    first = ConnectWorker(tmp_path, weir.url, "killedapp", step_s=3.0)
    second = ConnectWorker(tmp_path, weir.url, "killedapp", step_s=3.0)
    try:
        weir.start()
        first.start()
        wait_until(lambda: connected(weir, "killedapp"), timeout=30)
        event_id = weir.send("c/slow", {"steps": 2})
        run_id = run_of(weir, event_id)
        wait_until(lambda: _phases(first, run_id, 0) == ["start"], timeout=30)
        first.kill()  # no reply, no more lease extensions: after 20 s the call is lost
        second.start()
        run = weir.finished_run(event_id, timeout=90)
    finally:
        first.stop()
        second.stop()
        weir.stop()
    assert run["status"] == "Completed"
    assert run["output"] == [0, 1]
    assert _phases(first, run_id, 0) == ["start", "start", "end"]  # at least once, as HTTP
    assert _phases(first, run_id, 1) == ["start", "end"]
    assert "stopped extending the call's lease" in weir.log.read_text()


def test_weir_killed_while_a_run_sleeps_resumes_it_with_the_reconnected_worker(
    tmp_path: Path,
) -> None:
    weir = Weir(tmp_path)
    worker = ConnectWorker(tmp_path, weir.url, "sleepapp")
    try:
        weir.start()
        worker.start()
        wait_until(lambda: connected(weir, "sleepapp"), timeout=30)
        event_id = weir.send("c/sleep", {"seconds": 3})
        run_id = run_of(weir, event_id)
        wait_until(lambda: any(h["kind"] == "sleep" for h in weir.run(run_id)["history"]))
        weir.kill()  # SIGKILL: no drain, no goodbye to the worker
        weir.start()
        run = weir.finished_run(event_id, timeout=60)
    finally:
        worker.stop()
        weir.stop()
    assert run["status"] == "Completed" and run["output"] == "woke"
    steps = Counter(e["step"] for e in worker.entries("step") if e["run"] == run_id)
    assert steps == {"before": 1, "after": 1}


# -- which apps a worker may serve (--connect-apps, connect/binding.py) ---------------------


def apps_listed(weir: WeirServer, headers: dict[str, str] | None = None) -> str:
    """The Apps page's text, its entities read back (a quote shows as `&#39;`)."""
    return html.unescape(httpx.get(f"{weir.url}/apps", headers=headers).text)


def test_weir_start_serves_only_the_apps_it_names_over_connect(tmp_path: Path) -> None:
    """Both workers hold the signing key; only the app --connect-apps names is served."""
    weir = StartedWeir(tmp_path, "--connect-apps", "cloudapp")
    unnamed = ConnectWorker(tmp_path, weir.url, "unnamedapp", signing_key=KEY)
    worker = ConnectWorker(tmp_path, weir.url, "cloudapp", signing_key=KEY)
    try:
        weir.start()
        unnamed.start()
        worker.start()
        wait_until(lambda: connected(weir, "cloudapp", ADMIN), timeout=30)
        refusal = "the app 'unnamedapp' may not be served by a Connect worker"
        wait_until(lambda: refusal in weir.log.read_text(), timeout=30)
        run = weir.finished_run(weir.send("c/steps", {"x": 2}))
        page = apps_listed(weir, ADMIN)
        functions = httpx.get(f"{weir.url}/functions", headers=ADMIN).text
    finally:
        unnamed.stop()
        worker.stop()
        weir.stop()
    assert run["status"] == "Completed" and run["output"] == {"a": 3, "b": 6}
    assert "Connect workers may serve: only cloudapp (--connect-apps)" in page
    assert "1 Connect worker connected" in page
    assert "unnamedapp" not in functions and "unnamedapp" not in page  # nothing registered
    assert "add it there to let its workers connect" in weir.log.read_text()
    # the worker's steps ran; none of the refused worker's
    assert unnamed.entries("step") == []


def test_weir_start_without_connect_apps_admits_no_worker(tmp_path: Path) -> None:
    weir = StartedWeir(tmp_path)
    worker = ConnectWorker(tmp_path, weir.url, "cloudapp", signing_key=KEY)
    try:
        weir.start()
        worker.start()
        assert worker.proc is not None
        worker.proc.wait(30)  # refused at /v0/connect/start (403): the SDK gives up at once
        page = apps_listed(weir, ADMIN)
    finally:
        worker.stop()
        weir.stop()
    assert worker.proc.returncode != 0
    assert "Connect is off" in weir.log.read_text()
    assert "cloudapp" not in page
    assert "Connect workers may serve: off" in page


def test_a_worker_does_not_take_over_an_app_synced_over_http(tmp_path: Path) -> None:
    """`weir dev` admits any app name over Connect, but not one an HTTP app holds: the app's
    calls keep going to its URL, and the worker is refused saying how to hand it over."""
    http_dir, worker_dir = tmp_path / "http", tmp_path / "worker"
    http_dir.mkdir()
    worker_dir.mkdir()
    weir = Weir(tmp_path)
    http_app = AppServer(http_dir, WORKER, "sharedapp", weir.url)
    worker = ConnectWorker(worker_dir, weir.url, "sharedapp")
    try:
        weir.start()
        http_app.start()
        http_app.sync()
        worker.start()
        refusal = "the app 'sharedapp' is registered over HTTP"
        wait_until(lambda: refusal in weir.log.read_text(), timeout=30)
        run = weir.finished_run(weir.send("c/steps", {"x": 5}))
        page = apps_listed(weir)
    finally:
        worker.stop()
        http_app.stop()
        weir.stop()
    assert run["status"] == "Completed" and run["output"] == {"a": 6, "b": 12}
    assert http_app.url in page and "worker connected" not in page
    assert "wss://connect?app=sharedapp" in page and refusal in page  # the refusal, shown
    assert len(http_app.entries("step")) == 2  # served over HTTP ...
    assert worker.entries("step") == []  # ... and never by the worker
    assert "delete the app first" in weir.log.read_text()
