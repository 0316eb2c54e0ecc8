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

Rounds rotate which goes first; each figure is the median of the rounds, and the ratio is
given per round and as the median of those. `--baseline-ref REF` adds a second Weir built from
that git commit, with an app of its own (an app syncs with one Weir), measured in the same
rounds against the same app-alone figure: the comparison that stays fair while other work
shares the cores.

    .venv/bin/python bench/bench_official.py [--rounds 5] [--runs 200] [--app-workers 1]
    .venv/bin/python bench/bench_official.py --baseline-ref cfb0776
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from weir.platform.executor import signing  # noqa: E402

from bench.bench_platform import baseline_build  # noqa: E402
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


@dataclass
class Stack:
    """One Weir and the app synced with it; `db` is Weir's SQLite file."""

    weir: Child
    app: Child
    weir_url: str
    app_url: str
    db: Path
    tmp: Path


def start(tmp: Path, app_workers: int, calls_per_app: int, weir_path: Path | None = None) -> Stack:
    """Weir and the app, synced. `weir_path`: put first on Weir's PYTHONPATH (a baseline
    build)."""
    tmp.mkdir(exist_ok=True)
    weir_port, app_port = free_port(), free_port()
    weir_url, app_url = f"http://127.0.0.1:{weir_port}", f"http://127.0.0.1:{app_port}"
    db = tmp / "weir.db"
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    weir_args = [sys.executable, "-m", "weir", "dev", "--port", str(weir_port)]
    weir_args += ["--database-url", f"sqlite:///{db}", "--signing-key", KEY]
    weir_args += ["--calls-per-app", str(calls_per_app)]
    weir_env = env if weir_path is None else env | {"PYTHONPATH": str(weir_path)}
    weir = Child(weir_args, weir_env, tmp / "weir.log")
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
    return Stack(weir, app, weir_url, app_url, db, tmp)


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
    """Steps/s of n runs through Weir: first send to the last run's end (as Weir dated it, so
    how often this polls does not change the figure; polling seldom keeps this script's CPU
    out of the cores Weir and the app share: every 20 ms cost 0.1-0.25 ms of CPU per step)."""
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
        await asyncio.sleep(0.25)


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


def usage(stack: Stack) -> dict[str, float]:
    """CPU seconds so far: Weir, the app (all its workers) and this script (the sender)."""
    return {
        "weir": cpu_seconds(stack.weir.proc.pid),
        "app": cpu_seconds(stack.app.proc.pid),
        "driver": time.process_time(),
    }


RATES = dict[str, list[float]]  # "current"/"baseline"/"alone" -> steps/s per round
CPU = dict[str, list[dict[str, float]]]  # the same -> per round: process -> CPU ms/step


async def measure(args: argparse.Namespace, tmp: Path) -> tuple[RATES, CPU]:
    stacks: dict[str, Stack] = {}
    timeout = aiohttp.ClientTimeout(total=120)
    rates: RATES = defaultdict(list)
    cpu: CPU = defaultdict(list)
    try:
        stacks["current"] = start(tmp / "current", args.app_workers, args.calls_per_app)
        if args.baseline_ref:
            build = baseline_build(args.baseline_ref, tmp)
            stacks["baseline"] = start(
                tmp / "baseline", args.app_workers, args.calls_per_app, build
            )
        own = stacks["current"]  # the app alone: the current stack's app, idle meanwhile
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=2)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            for stack in stacks.values():  # warm-up, and the recorded calls
                await through_weir(session, stack.weir_url, stack.db, 20)
            calls = recorded_run(own.tmp / "recorded.jsonl")
            await app_alone(session, own.app_url, calls, 20, args.calls_per_app)
            kinds = [*stacks, "alone"]
            for r in range(args.rounds):
                order = kinds[r % len(kinds) :] + kinds[: r % len(kinds)]
                for kind in order:
                    stack = stacks.get(kind, own)
                    before = usage(stack)
                    if kind == "alone":
                        rate = await app_alone(
                            session, own.app_url, calls, args.runs, args.calls_per_app
                        )
                    else:
                        rate = await through_weir(session, stack.weir_url, stack.db, args.runs)
                    rates[kind].append(rate)
                    used = usage(stack)
                    cpu[kind].append(
                        {k: (used[k] - before[k]) * 1000 / (args.runs * STEPS) for k in used}
                    )
                shown = ", ".join(
                    f"{kind} {rates[kind][-1]:6.0f}"
                    + (f" ({rates[kind][-1] / rates['alone'][-1]:.3f})" if kind != "alone" else "")
                    for kind in kinds
                )
                print(
                    f"  round {r + 1}: steps/s {shown}  (load {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
    finally:
        for stack in stacks.values():
            stack.weir.stop()
            stack.app.stop()
    return rates, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=200, help="runs per round (10 steps each)")
    parser.add_argument("--app-workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--calls-per-app", type=int, default=64, help="Weir's calls to the app in flight"
    )
    parser.add_argument(
        "--baseline-ref", default=None, help="git commit of a second Weir measured alongside"
    )
    args = parser.parse_args()
    print(
        f"load {os.getloadavg()}, {os.cpu_count()} cores; app: official SDK, "
        f"{args.app_workers} uvicorn worker(s); {args.calls_per_app} calls in flight at most"
    )
    with tempfile.TemporaryDirectory(prefix="weir-bench-official-") as name:
        rates, cpu = asyncio.run(measure(args, Path(name)))
    med = statistics.median
    alone = rates["alone"]
    print()
    for kind in rates:
        label = {"current": "through Weir", "baseline": f"baseline {args.baseline_ref}"}
        rounds = ", ".join(f"{x:.0f}" for x in rates[kind])
        print(f"{label.get(kind, 'app alone'):<22} {med(rates[kind]):8.1f} steps/s  ({rounds})")
    for kind in rates:
        if kind == "alone":
            continue
        ratios = [v / a for v, a in zip(rates[kind], alone, strict=True)]
        print(
            f"ratio {kind:<16} {med(ratios):8.3f}  median of the rounds' ratios "
            f"({', '.join(f'{x:.3f}' for x in ratios)}); target >= 0.80"
        )
    if "baseline" in rates:
        gains = [c / b for c, b in zip(rates["current"], rates["baseline"], strict=True)]
        print(f"current / baseline     {med(gains):8.3f}  median of the rounds")
    print("CPU ms per step (median of the rounds):")
    for kind in rates:
        parts = {k: med([c[k] for c in cpu[kind]]) for k in ("weir", "app", "driver")}
        if kind == "alone":
            parts.pop("weir")
        shown = ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
        print(f"  {kind:<9} {shown}, all {sum(parts.values()):.2f}")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
