"""Failures a user can debug from what they read: a step's traceback in `weir dev`'s log and
in the app's terminal, and plain sentences (no client exception names, no HTML) when an app
is not running or is not an SDK."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import AppServer, Process, WeirServer, free_port, wait_until

pytestmark = pytest.mark.integration
APP = "tests.integration.apps.debug_app"


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("debugging")


@pytest.fixture(scope="module")
def weir(tmp: Path) -> Iterator[WeirServer]:
    server = WeirServer(tmp)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def app(tmp: Path, weir: WeirServer) -> Iterator[AppServer]:
    server = AppServer(tmp, APP, "debugapp", weir.url)
    server.start()
    server.sync()
    yield server
    server.stop()


def test_a_failing_step_shows_its_traceback_in_both_logs(weir: WeirServer, app: AppServer) -> None:
    run = weir.finished_run(weir.send("dbg/charge", {"order_id": "o-9"}))
    assert run["status"] == "Failed"
    weir_log = wait_until(lambda: _has(weir.log, "in charge_card"))
    assert "Traceback (most recent call last)" in weir_log
    assert "ValueError: card declined for o-9" in weir_log
    app_log = wait_until(lambda: _has(app.log, "in charge_card"))
    assert 'step "charge" raised ValueError (attempt 1)' in app_log
    assert "ValueError: card declined for o-9" in app_log


def test_ctx_logger_info_shows_in_a_plain_uvicorn_app(weir: WeirServer, app: AppServer) -> None:
    """The app configured no logging (uvicorn sets up only its own loggers): the SDK's rule
    shows INFO lines of ctx.logger on stderr, once, with the function and run."""
    run = weir.finished_run(weir.send("dbg/order.placed", {"order_id": "o-42"}))
    assert run["status"] == "Completed"
    app_log = wait_until(lambda: _has(app.log, "loaded order o-42"))
    [line] = [line for line in app_log.splitlines() if "loaded order o-42" in line]
    assert line == (
        f"INFO weir.sdk.function: loaded order o-42 (function debugapp-process-order, "
        f"run {run['run_id']})"
    )


def test_a_run_whose_app_is_gone_says_so(tmp: Path, weir: WeirServer) -> None:
    gone = AppServer(tmp, APP, "goneapp", weir.url)
    gone.start()
    gone.sync()
    gone.stop()
    run = weir.finished_run(weir.send("goneapp/quick"))
    assert run["status"] == "Failed"
    assert run["output"]["message"] == f"no app answered at {gone.url}; is it running?"


def test_sync_failures_are_sentences(tmp: Path) -> None:
    nothing = f"http://127.0.0.1:{free_port()}/api/inngest"
    port = free_port()
    web = Process(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(tmp)],
        {},
        tmp / "http-server.log",
    )
    web.start()
    not_sdk = f"http://127.0.0.1:{port}/api/inngest"
    weir = WeirServer(tmp, "-u", nothing, "-u", not_sdk, name="weir-sync")
    try:
        weir.start()
        text = wait_until(lambda: _has(weir.log, "not as an SDK"))
        text = wait_until(lambda: _has(weir.log, "is it running?"))
    finally:
        weir.stop()
        web.stop()
    assert f"no app answered at {nothing}; is it running?" in text
    assert f"{not_sdk} answered HTTP 501, but not as an SDK" in text
    assert "ClientConnectorError" not in text and "<html" not in text.lower()


def _has(log: Path, needle: str) -> str | None:
    text = log.read_text() if log.exists() else ""
    return text if needle in text else None
