"""The README's first-function example, run as a reader would: its shop.py, its commands and
its curls, to a completed run.

The blocks are the ones the README marks `<!-- readme-test: NAME -->`: `shop.py` is written to
a fresh folder; each line of `serve` is started as its own long-running process (a terminal of
its own); each line of `run` and `complete` must succeed, in order, `complete` once the run
waits for the payment. Only the ports change (to free ones, with WEIR_PORT and WEIR_BASE_URL,
as the README says to do for another port), so the test never meets a Weir a developer runs.

The commands come from WEIR_README_BIN when set (.ci/wheel: a clean venv holding only the
built wheel), else from this interpreter's venv (the source checkout).
"""

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import ROOT, free_port, wait_until

pytestmark = pytest.mark.integration
MARKED = re.compile(r"<!-- readme-test: (\S+) -->\n```\w*\n(.*?)```", re.S)
WEIR_PORT, APP_PORT = "8288", "8001"  # as the README writes them


def readme_blocks(weir_port: int, app_port: int) -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    text = text.replace(WEIR_PORT, str(weir_port)).replace(APP_PORT, str(app_port))
    return dict(MARKED.findall(text))


def commands(block: str) -> list[str]:
    lines = (line.strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def bin_dir() -> Path:
    return Path(os.environ.get("WEIR_README_BIN") or Path(sys.executable).parent)


class Reader:
    """A folder, an environment and the processes a reader of the README has started."""

    def __init__(self, folder: Path, weir_port: int) -> None:
        self.folder = folder
        self.weir_url = f"http://127.0.0.1:{weir_port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WEIR_", "PYTHON"))}
        path = os.pathsep.join([str(bin_dir()), env.get("PATH", "")])
        # WEIR_PORT for `weir dev`, WEIR_BASE_URL for the app and `weir sync`: the README's
        # way to run on another port
        self.env = env | {"PATH": path, "WEIR_PORT": str(weir_port), "WEIR_BASE_URL": self.weir_url}
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, line: str) -> None:
        log = (self.folder / f"serve-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {line}"], cwd=self.folder, env=self.env, stdout=log, stderr=log
        )
        self.procs.append(proc)

    def run(self, line: str) -> str:
        out = subprocess.run(
            ["bash", "-c", line],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, f"{line!r} failed:\n{out.stdout}{out.stderr}\n{self.logs()}"
        return out.stdout

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.folder.glob("serve-*.log")))

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
def reader(tmp_path: Path) -> Iterator[tuple[Reader, dict[str, str], int]]:
    weir_port, app_port = free_port(), free_port()
    who = Reader(tmp_path, weir_port)
    yield who, readme_blocks(weir_port, app_port), app_port
    who.stop()
    print(who.logs())  # shown when the test failed


def test_the_readme_marks_its_example() -> None:
    blocks = readme_blocks(int(WEIR_PORT), int(APP_PORT))
    assert set(blocks) >= {"shop.py", "serve", "run", "complete"}
    assert any(line.startswith("weir dev") for line in commands(blocks["serve"]))


def test_the_readme_example_runs_to_a_completed_run(
    reader: tuple[Reader, dict[str, str], int],
) -> None:
    who, blocks, app_port = reader
    (who.folder / "shop.py").write_text(blocks["shop.py"])
    for line in commands(blocks["serve"]):
        who.start(line)
    wait_until(lambda: httpx.get(f"{who.weir_url}/health").status_code == 200, 60)
    app_url = f"http://127.0.0.1:{app_port}/api/inngest"
    wait_until(lambda: httpx.get(app_url).status_code == 200, 60)

    outputs = [who.run(line) for line in commands(blocks["run"])]
    event_id = json.loads(outputs[-1])["ids"][0]  # the last line sends the order
    run_id = wait_until(lambda: _first_run_id(who.weir_url, event_id), 30)
    wait_until(lambda: _waits_for_payment(who.weir_url, run_id), 60)
    for line in commands(blocks["complete"]):
        who.run(line)

    run = wait_until(lambda: _ended(who.weir_url, run_id), 30)
    assert (run["status"], run["output"]) == ("Completed", {"order": "o-1", "paid": True})


def _first_run_id(weir_url: str, event_id: str) -> str | None:
    runs = httpx.get(f"{weir_url}/v1/events/{event_id}/runs").json()["data"]
    return str(runs[0]["run_id"]) if runs else None


def _waits_for_payment(weir_url: str, run_id: str) -> bool:
    reasons = httpx.get(f"{weir_url}/ui/api/runs/{run_id}").json()["reasons"]
    return any(r.startswith("waiting for event shop/order.paid") for r in reasons)


def _ended(weir_url: str, run_id: str) -> dict[str, Any] | None:
    run: dict[str, Any] = httpx.get(f"{weir_url}/v1/runs/{run_id}").json()["data"]
    return run if run["status"] in ("Completed", "Failed", "Cancelled") else None


@pytest.mark.skipif(
    not os.environ.get("WEIR_README_BIN"), reason="needs the installed wheel (.ci/wheel)"
)
def test_a_type_checker_sees_weir_sdk_in_the_installed_wheel(tmp_path: Path) -> None:
    """py.typed ships: mypy checks the README's shop.py against the wheel's weir.sdk."""
    shop = tmp_path / "shop.py"
    shop.write_text(readme_blocks(int(WEIR_PORT), int(APP_PORT))["shop.py"])
    python = bin_dir() / "python"
    mypy = [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python)]
    ok = subprocess.run([*mypy, str(shop)], capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout
    shop.write_text(shop.read_text() + "\nwrong: int = weir.function\n")
    caught = subprocess.run([*mypy, str(shop)], capture_output=True, text=True, cwd=tmp_path)
    assert 'expression has type "def function(' in caught.stdout  # weir.sdk's own types
