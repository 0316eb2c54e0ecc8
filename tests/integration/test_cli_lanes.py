"""`weir lanes list|show` against a running `weir dev`, through real `weir` processes: the busy
lanes of a function, who holds each with its fence, the runs in line in order, and clear
errors for an unknown function or lane."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.helpers import function, sync_body
from tests.integration.harness import WeirServer

pytestmark = pytest.mark.integration


@pytest.fixture
def weir(tmp_path: Path) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path, "--retry-interval", "120")
    server.start()
    try:
        # Nothing listens at the app's URL: each holder's first call fails and waits two
        # minutes for its retry, keeping its lane; the runs behind it stay in line meanwhile.
        laned = function("pay", weir={"lane": {"key": "event.data.customer"}})
        resp = httpx.post(f"{server.url}/fn/register", json=sync_body(laned), timeout=30)
        assert resp.status_code == 200, resp.text
        yield server
    finally:
        server.stop()


def lanes(weir: WeirServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "weir", "lanes", *args, "--base-url", weir.url],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_list_and_show_the_busy_lanes_of_a_function(weir: WeirServer) -> None:
    ids = [weir.send("t/e", {"customer": c}) for c in ("acme", "acme", "acme", "zed")]
    runs = [weir.runs(event_id)[0]["run_id"] for event_id in ids]

    listed = lanes(weir, "list", "--function", "app-pay")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["LANE", "OWNER", "KEY", "HOLDER", "SINCE", "FENCE", "QUEUED", "NEXT"]
    by_key = {row.split()[2]: row.split() for row in rows}
    acme = by_key["acme"]
    assert acme[1] == "app-pay" and acme[3] == runs[0]
    assert acme[-3:] == ["1", "2", runs[1]]  # fence, queued, next
    assert by_key["zed"][-3:] == ["1", "0", "-"]

    shown = lanes(weir, "show", acme[0], "--limit", "1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert f"held by run {runs[0]}" in lines[1] and lines[1].endswith("fence 1")
    assert lines[2] == "2 run(s) in line"
    assert lines[3].split() == ["#", "RUN", "STATUS", "CREATED"]
    assert lines[4].split()[1] == runs[1]
    cursor = lines[-1].removeprefix("more: pass --cursor ")
    assert lines[-1].startswith("more: pass --cursor ")
    rest = lanes(weir, "show", acme[0], "--cursor", cursor)
    assert rest.returncode == 0, rest.stderr
    assert [line.split()[1] for line in rest.stdout.splitlines()[4:]] == [runs[2]]

    one = lanes(weir, "list", "--function", "app-pay", "--key", "zed")
    assert one.returncode == 0, one.stderr
    [row] = one.stdout.splitlines()[1:]  # the header, then the one lane of that key
    assert row.split()[2:4] == ["zed", runs[3]]


def test_unknown_function_lane_or_bad_limit_fail_with_the_reason(weir: WeirServer) -> None:
    unknown = lanes(weir, "list", "--function", "nope")
    assert unknown.returncode == 1
    assert "HTTP 404: no synced function has the slug or id 'nope'" in unknown.stderr
    missing = lanes(weir, "show", "f" * 32)
    assert missing.returncode == 1 and "HTTP 404: no busy lane" in missing.stderr
    bad = lanes(weir, "list", "--limit", "0")
    assert bad.returncode == 1 and "limit must be a whole number from 1 to 500" in bad.stderr
    empty = lanes(weir, "list")
    assert empty.returncode == 0 and "No busy lane" in empty.stdout
