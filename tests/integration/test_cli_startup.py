"""What `weir dev` says and does while starting: its banner, quiet migrations, and syncs of
apps that are not up yet, which back off instead of hammering."""

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.integration.harness import (
    START_EVENT_KEY,
    START_SIGNING_KEY,
    START_TOKEN,
    STARTUP_S,
    WeirServer,
    free_port,
    wait_until,
)

pytestmark = pytest.mark.integration


def test_banner_names_ui_database_and_apps_and_migrations_are_quiet(tmp_path: Path) -> None:
    app_url = f"http://127.0.0.1:{free_port()}/api/inngest"
    server = WeirServer(tmp_path, "-u", app_url)
    server.start()
    server.stop()
    log = server.log.read_text()
    assert "\\n" not in log  # the banner's lines are lines, not one line with `\n` in it
    lines = log.splitlines()
    [first] = [i for i, line in enumerate(lines) if line.endswith("(dev) is starting")]
    assert lines[first + 1].split() == ["UI", server.url]
    assert f"UI        {server.url}" in log
    assert f"database  sqlite:///{server.db}" in log
    assert f"apps      {app_url} (syncing)" in log
    assert "alembic" not in log


def test_debug_shows_the_migrations(tmp_path: Path) -> None:
    server = WeirServer(tmp_path, "--log-level", "debug")
    server.start()
    server.stop()
    assert "Running upgrade" in server.log.read_text()


def test_sync_at_start_backs_off(tmp_path: Path) -> None:
    app_url = f"http://127.0.0.1:{free_port()}/api/inngest"  # nothing listens there
    server = WeirServer(tmp_path, "-u", app_url)
    server.start()
    failures = f"sync of {app_url} failed"
    wait_until(lambda: failures in server.log.read_text())
    time.sleep(5)
    server.stop()
    # retried twice a second this would be ~10 attempts; doubling from 0.5 s it is 4 or 5
    assert 3 <= server.log.read_text().count(failures) <= 5


@pytest.mark.parametrize("mode", ["dev", "start"])
def test_ctrl_c_ends_weir_cleanly_without_a_traceback(tmp_path: Path, mode: str) -> None:
    """Ctrl-C in a terminal signals the whole foreground process group: Weir and its worker
    processes. Weir alone must handle it, and end as after SIGTERM."""
    server = WeirServer(tmp_path)
    args = list(server.args)
    if mode == "start":  # JSON lines: a traceback there would break every parser of the log
        args[args.index("dev")] = "start"
        args += ["--signing-key", START_SIGNING_KEY, "--event-key", START_EVENT_KEY]
        args += ["--admin-token", START_TOKEN]
    with server.log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=out, start_new_session=True)
    try:
        wait_until(lambda: httpx.get(f"{server.url}/health").status_code == 200, STARTUP_S)
        workers = wait_until(lambda: len(_ingest_workers(proc.pid)) >= 2 and True, STARTUP_S)
        assert workers
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = server.log.read_text()
    assert code == 0, log
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log
    assert "Finished server process" in log


def _ingest_workers(pid: int) -> list[psutil.Process]:
    children = psutil.Process(pid).children()
    return [c for c in children if "weir.platform.ingest.workers" in c.cmdline()]
