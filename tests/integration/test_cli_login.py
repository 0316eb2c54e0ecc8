"""The CLI logs in to a `weir start` configured with --admin-user/--admin-password (no admin
token): the password from WEIR_ADMIN_PASSWORD or typed at a prompt, never on the command line;
`weir sync`, `weir capacity` and `weir lanes` all work with it."""

import os
import pty
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.integration.harness import START_EVENT_KEY, START_SIGNING_KEY, AppServer, WeirServer

pytestmark = pytest.mark.integration
KEY = START_SIGNING_KEY
USER, PASSWORD = "ops", "correct horse battery staple"


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WeirServer, AppServer]]:
    tmp = tmp_path_factory.mktemp("login")
    weir = WeirServer(tmp, "--signing-key", KEY, "--event-key", START_EVENT_KEY)
    weir.args[weir.args.index("dev")] = "start"
    weir.env = weir.env | {"WEIR_ADMIN_USER": USER, "WEIR_ADMIN_PASSWORD": PASSWORD}
    app = AppServer(tmp, "tests.integration.apps.weir_scopes", "loginapp", weir.url, KEY)
    weir.start()
    app.start()
    app.sync()  # the app proves the signing key itself: the scopes exist for every test
    try:
        yield weir, app
    finally:
        app.stop()
        weir.stop()


def cli(weir: WeirServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WEIR_ADMIN_")}
    return subprocess.run(
        [sys.executable, "-m", "weir", *args, "--base-url", weir.url],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean | env,
        stdin=subprocess.DEVNULL,
    )


LOGIN = {"WEIR_ADMIN_USER": USER, "WEIR_ADMIN_PASSWORD": PASSWORD}


def test_sync_capacity_and_lanes_log_in_with_the_user_and_password(
    started: tuple[WeirServer, AppServer],
) -> None:
    weir, app = started
    synced = cli(weir, "sync", app.url, **LOGIN)
    assert synced.returncode == 0, synced.stderr
    assert f"Synced {app.url} (app loginapp)." in synced.stdout
    listed = cli(weir, "capacity", "list", **LOGIN)
    assert listed.returncode == 0, listed.stderr
    assert "scope printer" in listed.stdout
    lanes = cli(weir, "lanes", "list", **LOGIN)
    assert lanes.returncode == 0, lanes.stderr
    flag = cli(weir, "capacity", "list", "--admin-user", USER, WEIR_ADMIN_PASSWORD=PASSWORD)
    assert flag.returncode == 0, flag.stderr


def test_without_a_login_or_with_a_wrong_password_the_cli_says_how_to_log_in(
    started: tuple[WeirServer, AppServer],
) -> None:
    weir, app = started
    for args in (("sync", app.url), ("capacity", "list"), ("lanes", "list")):
        none = cli(weir, *args)
        assert none.returncode == 1
        assert "wants a login" in none.stderr and "--admin-user" in none.stderr
        assert "WEIR_ADMIN_PASSWORD" in none.stderr
    wrong = cli(weir, "capacity", "list", WEIR_ADMIN_USER=USER, WEIR_ADMIN_PASSWORD="nope")
    assert wrong.returncode == 1 and "wants a login" in wrong.stderr
    no_terminal = cli(weir, "capacity", "list", "--admin-user", USER)
    assert no_terminal.returncode == 1
    assert "set WEIR_ADMIN_PASSWORD, or run on a terminal" in no_terminal.stderr


def test_the_password_is_asked_for_on_a_terminal(started: tuple[WeirServer, AppServer]) -> None:
    weir, _ = started
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WEIR_ADMIN_")}
    leader, follower = pty.openpty()
    args = [sys.executable, "-m", "weir", "capacity", "list", "--admin-user", USER]
    proc = subprocess.Popen(
        [*args, "--base-url", weir.url],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=clean,
        start_new_session=True,  # no terminal of its own but this one
    )
    os.close(follower)
    try:
        prompt = _read_until(leader, b"Password of ops")
        os.write(leader, PASSWORD.encode() + b"\n")
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    assert proc.returncode == 0, prompt
    assert b"scope printer" in out
    assert PASSWORD.encode() not in prompt  # not echoed


def _read_until(fd: int, wanted: bytes, timeout: float = 60.0) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        try:
            seen += os.read(fd, 1024)
        except OSError:
            break
    return seen
