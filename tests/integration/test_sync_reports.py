"""What a real `weir dev` says about syncs that fail: a refused sync's CEL error with its caret
line, in the log and on the Apps page, whoever started the sync; an app that answers the
sync request but registers with another Weir; a URL without a scheme."""

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import SDKS, AppServer, WeirServer, wait_until
from tests.support.stand_in_app import BAD_CEL, StandIn

pytestmark = pytest.mark.integration


@pytest.fixture
def weir(tmp_path: Path) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path)
    server.start()
    yield server
    server.stop()


def caret_lines(log: str) -> list[str]:
    """The log's lines from the excerpt of the bad expression to its caret."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.rstrip().endswith(" 1 +")]
    return lines[starts[0] : starts[0] + 2] if starts else []


def test_a_refused_sync_weir_asked_for_logs_its_caret_line_under_the_expression(
    weir: WeirServer,
) -> None:
    with StandIn(BAD_CEL) as app:
        app.register_to = weir.url
        resp = httpx.post(f"{weir.url}/v1/apps", json={"url": app.url}, timeout=30)
    assert resp.status_code == 409 and "not valid CEL" in resp.json()["error"]
    log = wait_until(lambda: (text := weir.log.read_text()) and caret_lines(text) and text)
    assert re.search(rf"WARNING weir sync of {re.escape(app.url)} failed\n", log)
    excerpt, caret = caret_lines(log)
    assert caret.strip() == "^" and caret.index("^") == len(excerpt.rstrip()) - 1
    assert excerpt.startswith("    ") and "\\n" not in caret
    assert log.count("not valid CEL") == 1  # said once, not again by the register endpoint


def test_a_refused_sync_the_app_started_is_logged_with_its_caret_line(weir: WeirServer) -> None:
    with StandIn(BAD_CEL) as app:
        resp = httpx.post(f"{weir.url}/fn/register", json=app.config())
    assert resp.status_code == 400
    log = wait_until(lambda: (text := weir.log.read_text()) and caret_lines(text) and text)
    assert re.search(rf"WARNING weir refused the sync of {re.escape(app.url)}\n", log)
    excerpt, caret = caret_lines(log)
    assert caret.index("^") == len(excerpt.rstrip()) - 1
    cards = httpx.get(f"{weir.url}/apps").text
    assert app.url in cards and "not valid CEL" in cards  # listed though it never synced


def test_an_app_registering_with_another_weir_is_said_and_the_variable_named(
    tmp_path: Path, weir: WeirServer
) -> None:
    other = WeirServer(tmp_path / "other", name="other")
    (tmp_path / "other").mkdir()
    other.start()
    try:
        with StandIn() as app:
            app.register_to = other.url  # its SDK points at the other Weir
            resp = httpx.post(f"{weir.url}/v1/apps", json={"url": app.url}, timeout=30)
            listed = httpx.get(f"{weir.url}/apps").text
    finally:
        other.stop()
    assert resp.status_code == 409, resp.text
    error = resp.json()["error"]
    assert "answered the sync request, but registered its functions with another server" in error
    assert f"INNGEST_DEV={weir.url}" in error
    assert "which this Weir does not know" in error  # the other Weir's reply named its app id
    assert app.url in listed and "registered its functions with another server" in listed


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_an_app_of_either_sdk_registering_here_is_synced(
    tmp_path: Path, weir: WeirServer, sdk: str
) -> None:
    """Each SDK passes the register reply through, naming the app id this Weir gave it."""
    app = AppServer(tmp_path, SDKS[sdk], f"here{sdk}", weir.url)
    app.start()
    try:
        resp = httpx.post(f"{weir.url}/v1/apps", json={"url": app.url}, timeout=30)
    finally:
        app.stop()
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == {"url": app.url, "app": f"here{sdk}"}


def test_a_url_without_a_scheme_is_said_to_have_none(weir: WeirServer) -> None:
    resp = httpx.post(f"{weir.url}/v1/apps", json={"url": "localhost:3000/api/inngest"})
    assert resp.status_code == 400
    error = resp.json()["error"]
    assert "has no scheme" in error and "http://localhost:3000/api/inngest" in error
    assert "closed the connection" not in error


def test_weir_dev_refuses_a_dash_u_url_without_a_scheme(tmp_path: Path) -> None:
    server = WeirServer(tmp_path, "-u", "localhost:3000/api/inngest")
    done = subprocess.run(server.args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "-u 'localhost:3000/api/inngest' has no scheme" in done.stderr
    assert "http://localhost:3000/api/inngest" in done.stderr


def test_every_dash_u_app_is_listed_with_its_state_and_last_error(tmp_path: Path) -> None:
    absent = "http://127.0.0.1:9/api/inngest"  # nothing listens on the discard port
    other = WeirServer(tmp_path / "other", name="other")  # the Weir on 8288, say
    (tmp_path / "other").mkdir()
    other.start()
    with StandIn(BAD_CEL) as refused, StandIn() as elsewhere:
        server = WeirServer(tmp_path, "-u", absent, "-u", refused.url, "-u", elsewhere.url)
        refused.register_to, elsewhere.register_to = server.url, other.url
        server.start()
        try:
            for url in (absent, refused.url, elsewhere.url):
                wait_until(lambda u=url: f"sync of {u} failed" in server.log.read_text(), 30)
            page = httpx.get(f"{server.url}/apps").text
        finally:
            server.stop()
            other.stop()
    assert page.count("named at start (-u)") == 3
    assert page.count("Sync failed") == 3
    assert absent in page and "no app answered at" in page
    assert refused.url in page and "not valid CEL" in page
    assert elsewhere.url in page and f"Set INNGEST_DEV={server.url}" in page
