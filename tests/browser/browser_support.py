"""Helpers of the browser tests: the server handle, waiting, processes, screenshots."""

import json
import os
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page

from tests.support.ports import free_port as free_port  # the tests' one source

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
# The README's pictures are refreshed only on request (WEIR_SCREENSHOTS=1); otherwise the
# screenshots still get taken (the page must render) but land in a scratch folder.
SCREENSHOTS = (
    ROOT / "docs" / "screenshots"
    if os.environ.get("WEIR_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "weir-screenshots"
)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FUNCTIONS = 18  # in ui_app.py


@dataclass(frozen=True)
class Server:
    url: str

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as answer:
            return json.loads(answer.read())

    def send(self, name: str, data: dict[str, Any]) -> str:
        return self.send_all([(name, data)])[0]

    def send_all(self, events: list[tuple[str, dict[str, Any]]]) -> list[str]:
        """Send events in one request: accepted together, whatever the machine's load."""
        body = json.dumps([{"name": name, "data": data} for name, data in events]).encode()
        json_type = {"content-type": "application/json"}
        request = urllib.request.Request(self.url + "/e/test", body, json_type, method="POST")
        with urllib.request.urlopen(request, timeout=5) as answer:
            ids: list[str] = json.loads(answer.read())["ids"]
        return ids

    def run_of(self, event_id: str) -> str:
        runs = until(lambda: self.get(f"/v1/events/{event_id}/runs")["data"], "the event's run")
        run_id: str = runs[0]["run_id"]
        return run_id


def until(check: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def spawn(args: list[str], log: Path, **env_vars: str) -> "subprocess.Popen[bytes]":
    env = os.environ | {"PYTHONUNBUFFERED": "1"} | env_vars
    out = log.open("wb")
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: "subprocess.Popen[bytes]") -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def submit(page: Page, control: Locator, press: str | None = None) -> None:
    """Click a link or a form's button (or press a key in a field) and wait for the page it
    loads. A click waits only until the new page is committed: a read straight after it may
    see that page half parsed, with no rows yet."""
    with page.expect_navigation():
        if press is None:
            control.click()
        else:
            control.press(press)


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
