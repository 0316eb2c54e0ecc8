"""The CLI as a new user meets it, each behaviour through a real `weir` process."""

import http.server
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import weir
from weir.platform.cli.main import EXAMPLE_PORT

from tests.integration.harness import AppServer, WeirServer, free_port, wait_until

pytestmark = pytest.mark.integration


def weir_cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "weir", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=os.environ | env,
    )


class Recorder(http.server.BaseHTTPRequestHandler):
    """An app stand-in that only remembers being called."""

    calls: list[str]

    def do_PUT(self) -> None:
        self.calls.append(self.path)
        self.send_response(500)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    calls: list[str] = []
    handler = type("Handler", (Recorder,), {"calls": calls})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/api/inngest", calls
    server.shutdown()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path)
    server.start()
    yield server
    server.stop()


def test_version_names_the_package_version() -> None:
    out = weir_cli("--version")
    assert (out.returncode, out.stdout.strip()) == (0, f"weir {weir.__version__}")


def test_help_shows_defaults_and_only_the_modes_own_options() -> None:
    dev = weir_cli("dev", "--help").stdout
    assert "(default: 8288)" in dev
    assert "(default: sqlite:///.weir/weir.db)" in dev
    assert "--example" in dev
    assert "--admin-token" not in dev and "--event-key" not in dev
    start = weir_cli("start", "--help", WEIR_ADMIN_PASSWORD="hunter2").stdout
    assert "--admin-token" in start and "--event-key" in start
    assert "--example" not in start
    assert "hunter2" not in start  # a secret's default is never printed


def test_an_option_of_the_other_mode_is_refused() -> None:
    out = weir_cli("dev", "--admin-token=t")
    assert out.returncode == 2
    assert "--admin-token only applies to `weir start`" in out.stderr


def test_a_second_weir_on_a_busy_port_says_so_and_touches_nothing(
    running: WeirServer, tmp_path: Path, recorder: tuple[str, list[str]]
) -> None:
    app_url, calls = recorder
    other = tmp_path / "second"
    other.mkdir()
    out = weir_cli("dev", "--port", str(running.port), "-u", app_url, cwd=other)
    assert out.returncode == 1
    assert f"A Weir is already running at {running.url}" in out.stderr
    assert "weir sync" in out.stderr
    assert list(other.iterdir()) == []  # no .weir/ database was created
    time.sleep(1)  # a sync at start would have begun at once
    assert calls == []


def test_a_port_held_by_another_program_is_named() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        out = weir_cli("dev", "--port", str(port))
    assert out.returncode == 1
    assert f"Port {port} on 127.0.0.1 is in use by another program" in out.stderr


def test_example_says_when_its_port_is_busy(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:  # if something else holds it already, that is the case under test too
            holder.bind(("127.0.0.1", EXAMPLE_PORT))
            holder.listen()
        except OSError:
            pass
        out = weir_cli("dev", "--port", str(free_port()), "--example", cwd=tmp_path)
    assert out.returncode == 1
    assert f"port {EXAMPLE_PORT}, where the example app listens, is in use" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_weir_sync_adds_an_app_to_a_running_weir(running: WeirServer, tmp_path: Path) -> None:
    app = AppServer(tmp_path, "tests.integration.apps.weir_app", "synced", running.url)
    app.start()
    try:
        out = weir_cli("sync", app.url, "--base-url", running.url)
        assert out.returncode == 0, out.stderr
        assert f"Synced {app.url} (app synced)." in out.stdout
        ids = running.send("t/steps", {"x": 1})
        assert running.finished_run(ids)["status"] == "Completed"
    finally:
        app.stop()


def test_weir_sync_reports_failures(running: WeirServer) -> None:
    absent = f"http://127.0.0.1:{free_port()}/api/inngest"
    out = weir_cli("sync", absent, "--base-url", running.url)
    assert out.returncode == 1
    assert re.search(f"Sync of {re.escape(absent)} failed: no app answered at", out.stderr)
    nobody = weir_cli("sync", absent, "--base-url", f"http://127.0.0.1:{free_port()}")
    assert nobody.returncode == 1
    assert "No Weir answers at" in nobody.stderr


def test_two_weirs_started_together_on_one_port_leave_one_running(tmp_path: Path) -> None:
    port = free_port()
    procs = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        log = (tmp_path / f"{name}.log").open("w")
        args = [sys.executable, "-m", "weir", "dev", "--port", str(port)]
        procs.append(subprocess.Popen(args, cwd=folder, stdout=log, stderr=log))
    try:
        loser = wait_until(lambda: next((p for p in procs if p.poll() is not None), None), 60)
        name = "ab"[procs.index(loser)]
        assert loser.returncode == 1
        said = (tmp_path / f"{name}.log").read_text()
        assert re.search("A Weir is already running|in use by another program", said), said
        assert list((tmp_path / name).iterdir()) == []  # it opened no database of its own
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200)
        assert all(p.poll() is None for p in procs if p is not loser)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(15)
