"""Real processes on loopback: a Weir server and an SDK app, each its own subprocess."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.backends import POSTGRESQL, SQLITE
from tests.support.ports import free_port as free_port  # the tests' one source

ROOT = Path(__file__).resolve().parents[2]

# The SDK apps serving the same functions, by SDK.
SDKS = {
    "weir": "tests.integration.apps.weir_app",
    "inngest": "tests.integration.apps.inngest_app",
}

# (sdk, backend) for a module whose tests also run on PostgreSQL (parametrize it at module
# scope): both SDKs on SQLite, where their differences are covered, and Weir's own SDK on
# PostgreSQL, which checks the store underneath (claims, leases, gate state, LISTEN/NOTIFY
# wake-ups) with real runs.
SDK_AND_BACKEND = [
    *(pytest.param(sdk, SQLITE, id=f"{sdk}-{SQLITE}") for sdk in sorted(SDKS)),
    pytest.param("weir", POSTGRESQL, id=f"weir-{POSTGRESQL}", marks=pytest.mark.postgres),
]


# How long a server process may take to answer after it starts. On a loaded 2-core machine
# (four test workers, each with its servers) an app's imports alone once took over 20 s.
STARTUP_S = 60.0


def wait_until(check: Callable[[], Any], timeout: float = 20.0, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (httpx.HTTPError, OSError, ValueError, KeyError):
            last = None
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")


def store_rows(url: str, sql: str) -> list[Any]:
    """Rows of one query on a Weir store (SQLite or PostgreSQL URL), read by the test itself."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)))
    finally:
        engine.dispose()


class Process:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.args, self.env, self.log = args, env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(self.args, env=self.env, cwd=ROOT, stdout=out, stderr=out)

    def alive(self) -> bool:
        """True while the process runs; once it has exited, an error with its log's end (a
        server that could not start must not pass for another one answering its port)."""
        assert self.proc is not None
        code = self.proc.poll()
        if code is None:
            return True
        tail = self.log.read_text(errors="replace")[-3000:]
        raise AssertionError(f"{self.log.name}: the process exited ({code}):\n{tail}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class WeirServer(Process):
    """`weir dev` on a free port: on its own SQLite file in `tmp`, or on `database_url` (a
    PostgreSQL that several servers may share; give each its own `name` for its log)."""

    event_key = "test"  # any key does for weir dev; weir start's must be strong (START_*)

    def __init__(
        self, tmp: Path, *extra: str, database_url: str | None = None, name: str = "weir"
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = tmp / "weir.db"
        self.database_url = database_url or f"sqlite:///{self.db}"
        args = [
            sys.executable,
            "-m",
            "weir",
            "dev",
            "--port",
            str(self.port),
            "--database-url",
            self.database_url,
            "--retry-interval",
            "0.2",
            *extra,
        ]
        super().__init__(args, os.environ | {"PYTHONUNBUFFERED": "1"}, tmp / f"{name}.log")

    def start(self) -> None:
        super().start()
        health = f"{self.url}/health"
        wait_until(lambda: self.alive() and httpx.get(health).status_code == 200, STARTUP_S)

    def send(self, name: str, data: dict[str, Any] | None = None, **fields: Any) -> str:
        body = {"name": name, "data": data or {}, **fields}
        resp = httpx.post(f"{self.url}/e/{self.event_key}", json=body)
        assert resp.status_code == 200, resp.text
        ids: list[str] = resp.json()["ids"]
        return ids[0]

    def event(self, event_id: str) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.url}/v1/events/{event_id}").json()["data"]
        return data

    def send_many(self, events: list[dict[str, Any]]) -> list[str]:
        resp = httpx.post(f"{self.url}/e/{self.event_key}", json=events)
        assert resp.status_code == 200, resp.text
        ids: list[str] = resp.json()["ids"]
        return ids

    def runs(self, event_id: str) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = httpx.get(f"{self.url}/v1/events/{event_id}/runs").json()[
            "data"
        ]
        return data

    def run(self, run_id: str) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.url}/v1/runs/{run_id}").json()["data"]
        return data

    def finished_run(self, event_id: str, timeout: float = 20.0) -> dict[str, Any]:
        """The one run the event started, once it has ended."""

        def ended() -> dict[str, Any] | None:
            runs = self.runs(event_id)
            done = [r for r in runs if r["status"] in ("Completed", "Failed", "Cancelled")]
            return self.run(done[0]["run_id"]) if done else None

        result: dict[str, Any] = wait_until(ended, timeout)
        return result


# Secrets strong enough for `weir start` (platform/security/strength.py), for its tests
START_SIGNING_KEY = "signkey-prod-93359d0e78bcca1959327bf09ef8512c33ed63558c745065600a5372e60b4fec"
START_OTHER_KEY = "signkey-prod-7e2232662a035cdf3e5ba52acb667a5db79e9cb4c6687af911ace55a36d020f0"
START_EVENT_KEY = "7c2e9f4a1b8d3065e7f1a9c2b4d6e8f0"
START_TOKEN = "Qw7rT2yU9iO4pA6sD1fG8hJ3kL5zX0cV"


class AppServer(Process):
    def __init__(
        self, tmp: Path, module: str, app_id: str, weir_url: str, signing_key: str | None = None
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api/inngest"
        self.journal = tmp / f"{app_id}.journal"
        env = os.environ | {
            "APP_ID": app_id,
            "WEIR_TEST_JOURNAL": str(self.journal),
            "WEIR_BASE_URL": weir_url,
            "INNGEST_BASE_URL": weir_url,
            "PYTHONUNBUFFERED": "1",
        }
        if signing_key is None:
            env |= {"INNGEST_DEV": weir_url, "WEIR_DEV": "1"}
        else:  # cloud mode: the app checks every request's signature
            env |= {"INNGEST_SIGNING_KEY": signing_key, "WEIR_SIGNING_KEY": signing_key}
        args = [
            sys.executable,
            "-m",
            "uvicorn",
            f"{module}:app",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
        ]
        super().__init__(args, env, tmp / f"{app_id}.log")

    def start(self) -> None:
        super().start()
        wait_until(
            lambda: self.alive() and httpx.get(self.url).status_code in (200, 401), STARTUP_S
        )

    def sync(self) -> dict[str, Any]:
        """What the dev server does: PUT the app, which then registers with Weir."""
        resp = httpx.put(self.url, timeout=30)
        body: dict[str, Any] = resp.json()
        assert resp.status_code == 200 and body.get("ok"), body
        return body

    def entries(self, what: str) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        lines = self.journal.read_text().splitlines()
        return [e for e in map(json.loads, lines) if e["what"] == what]
