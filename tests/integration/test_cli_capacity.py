"""`weir capacity list|set|reset` against a running Weir with a weir.sdk app's scopes, through
real `weir` processes: what an operator sees and does during an incident."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import AppServer, WeirServer

pytestmark = pytest.mark.integration


@pytest.fixture
def weir(tmp_path: Path) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path)
    app = AppServer(tmp_path, "tests.integration.apps.weir_scopes", "scopes", server.url)
    server.start()
    app.start()
    try:
        app.sync()
        yield server
    finally:
        app.stop()
        server.stop()


def capacity(weir: WeirServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "weir", "capacity", *args, "--base-url", weir.url],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"WEIR_ACTOR": "oncall"},
    )


def row(listing: str, name: str) -> list[str]:
    [line] = [line for line in listing.splitlines() if line.startswith(name + "  ")]
    return line[len(name) :].split()


def test_list_set_and_reset_a_live_capacity(weir: WeirServer) -> None:
    listed = capacity(weir, "list")
    assert listed.returncode == 0, listed.stderr
    header = listed.stdout.splitlines()[0].split()
    assert header[:5] == ["NAME", "CAPACITY", "DECLARED", "DRIFT", "REVISION"]
    assert row(listed.stdout, "scope printer") == ["1", "1", "-", "1", "(code)"]

    stale = capacity(weir, "set", "scope printer", "3", "--revision", "7")
    assert stale.returncode == 1
    assert "HTTP 409" in stale.stderr and "revision 1, not 7" in stale.stderr

    done = capacity(weir, "set", "scope printer", "3", "--revision", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "scope printer: capacity 3, revision 2; the code declares 1 (drift)"
    )
    drifted = row(capacity(weir, "list").stdout, "scope printer")
    assert drifted[:6] == ["3", "1", "code", "declares", "1", "2"]
    assert " ".join(drifted[6:]) == "oncall (dev mode (no login))"

    bad = capacity(weir, "set", "scope printer", "0", "--revision", "2")
    assert bad.returncode == 1 and "capacity must be an integer from 1" in bad.stderr

    reset = capacity(weir, "reset", "scope printer", "--revision", "2")
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.strip() == "scope printer: capacity 1, revision 3"

    missing = capacity(weir, "reset", "scope nothing", "--revision", "1")
    assert missing.returncode == 1 and "no capacity named 'scope nothing'" in missing.stderr


def test_no_weir_answering_is_said_plainly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "weir", "capacity", "list", "--base-url", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "No Weir answers at http://127.0.0.1:9" in done.stderr
