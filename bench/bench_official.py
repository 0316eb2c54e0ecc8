"""Weir driving an official-SDK app, against what that app alone can answer (issue 12: steps/s
through Weir >= 80 % of the app's own ceiling).

The app (`official_app.py`) is a 10-step no-op function written with the official `inngest`
SDK, served by uvicorn with `--app-workers` worker processes in cloud mode (it checks the
signature of every request). Weir is `weir dev --signing-key ...` on a fresh SQLite file.

  through Weir  N events, until every run completed: steps/s from the first send to the last
                run's end (read from Weir's SQLite file)
  app alone     the same N runs without Weir: this script sends each run's eleven calls in
                order, the very requests Weir sent in the warm-up (recorded by the app as they
                arrived: query, headers, body), each signed afresh with the same key as Weir
                signs; as many runs in flight as Weir may have calls to one app in flight
                (`--calls-per-app`, given to Weir too). Every answer's status is checked.

Rounds alternate (Weir first in odd rounds, the app alone first in even ones); each figure is
the median of the rounds, and the ratio is given per round and as the median of those.

    .venv/bin/python bench/bench_official.py [--rounds 5] [--runs 200] [--app-workers 1]
"""

import argparse
import asyncio
import base64
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp
import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from weir.platform.executor import signing  # noqa: E402

from tests.integration.harness import free_port, wait_until  # noqa: E402

KEY = "signkey-bench-" + "3c" * 32
APP_ID = "officialbench"
SLUG = f"{APP_ID}-steps"
STEPS = 10
CALLS = STEPS + 1  # one call per step, then the one that returns


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process and its children still running (uvicorn's
    worker processes), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    for task in Path(f"/proc/{pid}").glob("task/*"):
        for child in (task / "children").read_text().split():
            total += cpu_seconds(int(child))
    return total


class Child:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=out, stderr=out)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start(tmp: Path, app_workers: int, calls_per_app: int) -> tuple[Child, Child, str, str, Path]:
    """Weir and the app, synced; returns them, their URLs and Weir's SQLite file."""
    weir_port, app_port = free_port(), free_port()
    weir_url, app_url = f"http://127.0.0.1:{weir_port}", f"http://127.0.0.1:{app_port}"
    db = tmp / "weir.db"
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    weir_args = [sys.executable, "-m", "weir", "dev", "--port", str(weir_port)]
    weir_args += ["--database-url", f"sqlite:///{db}", "--signing-key", KEY]
    weir_args += ["--calls-per-app", str(calls_per_app)]
    weir = Child(weir_args, env, tmp / "weir.log")
    app_env = env | {
        "APP_ID": APP_ID,
        "INNGEST_SIGNING_KEY": KEY,
        "INNGEST_BASE_URL": weir_url,
        "BENCH_RECORD": str(tmp / "recorded.jsonl"),
    }
    app_args = [sys.executable, "-m", "uvicorn", "bench.official_app:app", "--port"]
    app_args += [str(app_port), "--workers", str(app_workers), "--log-level", "warning"]
    app_args += ["--no-access-log", "--timeout-keep-alive", "120"]
    app = Child(app_args, app_env, tmp / "app.log")
    wait_until(lambda: _answers(f"{weir_url}/health", 200), timeout=60)
    wait_until(lambda: _answers(f"{app_url}/api/inngest", 200, 401), timeout=60)
    resp = httpx.put(f"{app_url}/api/inngest", timeout=30)
    if resp.status_code != 200:
        raise SystemExit(f"the app did not sync: {resp.status_code} {resp.text[:300]}")
    return weir, app, weir_url, app_url, db


def _answers(url: str, *codes: int) -> bool:
    try:
        return httpx.get(url).status_code in codes
    except httpx.HTTPError:
        return False


def completed(db: Path) -> tuple[int, int, int]:
    """(completed, failed or cancelled, latest end in ms) of the benched function's runs."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        row = conn.execute(
            "SELECT sum(r.status = 'COMPLETED'), sum(r.status IN ('FAILED', 'CANCELLED')),"
            " max(r.ended_at) FROM runs r JOIN functions f ON f.id = r.function_id"
            " WHERE f.slug = ?",
            (SLUG,),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


async def through_weir(session: aiohttp.ClientSession, weir_url: str, db: Path, n: int) -> float:
    """Steps/s of n runs through Weir: first send to the last run's end."""
    before, _, _ = completed(db)
    begin = time.time()
    for i in range(0, n, 100):
        batch = [{"name": "official/steps", "data": {}}] * min(100, n - i)
        async with session.post(f"{weir_url}/e/bench", json=batch) as resp:
            if resp.status != 200:
                raise SystemExit(f"sending events failed: {resp.status} {await resp.text()}")
    deadline = time.monotonic() + 900
    while True:
        done, bad, last_ms = completed(db)
        if bad:
            raise SystemExit(f"{bad} runs failed; see the Weir log")
        if done >= before + n:
            return n * STEPS / (last_ms / 1000 - begin)
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done - before} of {n} runs completed in 900 s")
        await asyncio.sleep(0.02)


def recorded_run(path: Path) -> list[dict[str, Any]]:
    """The eleven requests Weir sent for one run, in order (by how many steps each carried)."""
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        entry["body"] = base64.b64decode(entry["body"])
        by_run[entry["headers"].get("x-run-id", "")].append(entry)
    for calls in by_run.values():
        if len(calls) == CALLS:
            return sorted(calls, key=lambda c: len(json.loads(c["body"])["steps"]))
    raise SystemExit(f"no run with {CALLS} recorded calls in {path}")


async def app_alone(
    session: aiohttp.ClientSession, app_url: str, calls: list[dict[str, Any]], n: int, c: int
) -> float:
    """Steps/s of n runs' worth of the recorded calls sent straight to the app, c runs at once,
    each run's calls one after another (as Weir must: a call needs the previous step's
    result)."""
    skip = {"host", "content-length", "x-inngest-signature"}
    prepared = [
        (
            f"{app_url}/api/inngest?{call['query']}",
            {k: v for k, v in call["headers"].items() if k not in skip},
            call["body"],
            206 if i < STEPS else 200,
        )
        for i, call in enumerate(calls)
    ]
    left = n

    async def runner() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            for url, headers, body, status in prepared:
                headers = headers | {
                    "x-inngest-signature": signing.sign(body, KEY, int(time.time()))
                }
                async with session.post(url, data=body, headers=headers) as resp:
                    await resp.read()
                    if resp.status != status:
                        text = (await resp.read())[:300]
                        raise SystemExit(f"the app answered {resp.status}, not {status}: {text!r}")

    begin = time.perf_counter()
    await asyncio.gather(*(runner() for _ in range(min(c, n))))
    return n * STEPS / (time.perf_counter() - begin)


def usage(weir: Child, app: Child) -> dict[str, float]:
    """CPU seconds so far: Weir, the app (all its workers) and this script (the sender)."""
    return {
        "weir": cpu_seconds(weir.proc.pid),
        "app": cpu_seconds(app.proc.pid),
        "driver": time.process_time(),
    }


CPU = dict[str, list[dict[str, float]]]  # "weir"/"alone" -> per round: process -> CPU ms/step


async def measure(args: argparse.Namespace, tmp: Path) -> tuple[list[float], list[float], CPU]:
    weir, app, weir_url, app_url, db = start(tmp, args.app_workers, args.calls_per_app)
    timeout = aiohttp.ClientTimeout(total=120)
    via: list[float] = []
    alone: list[float] = []
    cpu: CPU = {"weir": [], "alone": []}
    try:
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=2)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            await through_weir(session, weir_url, db, 20)  # warm-up, and the recorded calls
            calls = recorded_run(tmp / "recorded.jsonl")
            await app_alone(session, app_url, calls, 20, args.calls_per_app)
            for r in range(args.rounds):
                order = ("weir", "alone") if r % 2 == 0 else ("alone", "weir")
                for kind in order:
                    before = usage(weir, app)
                    if kind == "weir":
                        via.append(await through_weir(session, weir_url, db, args.runs))
                    else:
                        rate = await app_alone(
                            session, app_url, calls, args.runs, args.calls_per_app
                        )
                        alone.append(rate)
                    used = usage(weir, app)
                    cpu[kind].append(
                        {k: (used[k] - before[k]) * 1000 / (args.runs * STEPS) for k in used}
                    )
                print(
                    f"  round {r + 1}: through Weir {via[-1]:7.0f} steps/s, app alone "
                    f"{alone[-1]:7.0f} steps/s, ratio {via[-1] / alone[-1]:.3f}"
                    f"  (load {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
    finally:
        weir.stop()
        app.stop()
    return via, alone, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=200, help="runs per round (10 steps each)")
    parser.add_argument("--app-workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--calls-per-app", type=int, default=64, help="Weir's calls to the app in flight"
    )
    args = parser.parse_args()
    print(
        f"load {os.getloadavg()}, {os.cpu_count()} cores; app: official SDK, "
        f"{args.app_workers} uvicorn worker(s); {args.calls_per_app} calls in flight at most"
    )
    with tempfile.TemporaryDirectory(prefix="weir-bench-official-") as name:
        via, alone, cpu = asyncio.run(measure(args, Path(name)))
    ratios = [v / a for v, a in zip(via, alone, strict=True)]
    med = statistics.median
    print(
        f"\nthrough Weir  {med(via):8.1f} steps/s  (rounds: {', '.join(f'{x:.0f}' for x in via)})"
    )
    print(
        f"app alone     {med(alone):8.1f} steps/s  (rounds: {', '.join(f'{x:.0f}' for x in alone)})"
    )
    print(
        f"ratio         {med(ratios):8.3f}  median of the rounds' ratios "
        f"({', '.join(f'{x:.3f}' for x in ratios)}); target >= 0.80"
    )
    print("CPU ms per step (median of the rounds):")
    for kind, label in (("weir", "through Weir"), ("alone", "app alone")):
        parts = {k: med([c[k] for c in cpu[kind]]) for k in ("weir", "app", "driver")}
        shown = ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
        print(f"  {label:<13} {shown}, all {sum(parts.values()):.2f}")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
