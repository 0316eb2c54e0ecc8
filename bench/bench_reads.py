"""Reads at scale: the runs list and the run page with many stored runs (issue: < 50 ms at
1,000,000 runs), against the same reads on a small store measured in the same process.

Each store is a fresh SQLite file, migrated by Weir, with one app and two functions in its
catalog and N finished runs (their events, one step and two timeline rows each) written
straight into the tables in bulk (the write path is not what this measures). Then `weir dev`
serves it, and every read is timed over real HTTP: median and p95 of `--requests` requests
after a warm-up. Figures depend on the machine's load: record `uptime` beside them.

    .venv/bin/python bench/bench_reads.py                   # 1,000,000 runs vs 1,000
    .venv/bin/python bench/bench_reads.py --runs 100000     # quicker
"""

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from weir.platform.foundation.ids import new_id
from weir.platform.functions import EventTrigger, FunctionConfig
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade
from weir.platform.store.records import catalog

START_MS = 1_767_268_800_000  # 2026-01-01T12:00:00Z; runs are one 10 ms apart from here
STATUSES = ["COMPLETED"] * 90 + ["FAILED"] * 8 + ["CANCELLED"] * 2
FUNCTIONS = ("bench-orders", "bench-mail")
CHUNK = 20_000


@dataclass(frozen=True)
class Read:
    label: str
    path: str


def seed(db: Path, n: int) -> list[str]:
    """A migrated store with the catalog and `n` finished runs; returns some run ids."""
    upgrade(make_engine(f"sqlite:///{db}"))
    with make_engine(f"sqlite:///{db}").begin() as conn:
        catalog.insert_app(conn, "bench-app", "bench", "http://127.0.0.1:9/api/inngest", START_MS)
        for slug in FUNCTIONS:
            cfg = FunctionConfig(
                slug=slug,
                name=slug,
                retries=0,
                url=f"http://127.0.0.1:9/api/inngest?fnId={slug}&stepId=step",
                triggers=(EventTrigger(f"{slug}/go", None),),
            )
            text = json.dumps(cfg.to_json())
            version = catalog.FunctionVersion("bench-app", slug, text, 1, START_MS)
            catalog.insert_function(conn, slug, slug, version)
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA journal_mode=WAL")
    picked: list[str] = []
    rng = random.Random(7)
    for lo in range(0, n, CHUNK):
        picked += _chunk(raw, lo, min(n, lo + CHUNK), rng)
    raw.execute("ANALYZE")
    raw.close()
    return picked


def _chunk(raw: sqlite3.Connection, lo: int, hi: int, rng: random.Random) -> list[str]:
    events, runs, steps, history = [], [], [], []
    for i in range(lo, hi):
        at = START_MS + i * 10
        fn = FUNCTIONS[i % 2]
        event_id, run_id = new_id(at), new_id(at)
        status = rng.choice(STATUSES)
        payload = json.dumps({"name": f"{fn}/go", "data": {"i": i}, "id": event_id, "ts": at})
        events.append((event_id, f"{fn}/go", None, at, at, payload))
        output = json.dumps({"i": i} if status == "COMPLETED" else {"name": "Error"})
        runs.append((run_id, fn, status, json.dumps([event_id]), at, at + 1, at + 9, output, at))
        steps.append((run_id, "s1", 0, "first", "StepRun", json.dumps({"data": i}), at + 5))
        history.append((run_id, "call", "step", "", 0, "COMPLETED", at + 1, at + 5, "{}"))
        history.append((run_id, "call", "s1", "first", 0, "COMPLETED", at + 5, at + 9, "{}"))
    with raw:
        raw.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)", events)
        raw.executemany(
            "INSERT INTO runs (id, function_id, status, event_ids, created_at, started_at,"
            " ended_at, output, score, lane) VALUES (?,?,?,?,?,?,?,?,?,'bench')",
            runs,
        )
        raw.executemany("INSERT INTO steps VALUES (?,?,?,?,?,?,?)", steps)
        raw.executemany(
            "INSERT INTO history (run_id, kind, step_id, name, attempt, status, started_at,"
            " ended_at, detail) VALUES (?,?,?,?,?,?,?,?,?)",
            history,
        )
    return [runs[0][0], runs[-1][0]]


class Weir:
    def __init__(self, db: Path, port: int, log: Path) -> None:
        args = [sys.executable, "-m", "weir", "dev", "--port", str(port)]
        args += ["--database-url", f"sqlite:///{db}"]
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                if httpx.get(f"{self.url}/health/live").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise SystemExit(f"weir did not start; see {log}")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)


def reads(run_ids: list[str], deep: tuple[int, str]) -> list[Read]:
    newest, oldest = run_ids[-1], run_ids[0]
    return [
        Read("runs list (UI)", "/runs"),
        Read("runs list, one function", f"/runs?function={FUNCTIONS[0]}"),
        Read("runs list, status Failed", "/runs?status=FAILED"),
        Read("runs list, fn + Cancelled", f"/runs?function={FUNCTIONS[1]}&status=CANCELLED"),
        Read("runs list, deep page", f"/runs?before={deep[0]}.{deep[1]}"),
        Read("runs list, 2 statuses", "/runs?status=FAILED&status=CANCELLED"),
        Read("search: a run id", f"/runs?search={oldest}"),
        Read("search: output text (miss)", "/runs?search=no-such-text"),
        # a text search reads a bounded window of runs (queries.SEARCH_WINDOW); searching on
        # from half a million rows down costs the same
        Read("search further, deep", f"/runs?search=no-such-text&before={deep[0]}.{deep[1]}"),
        Read("search: text + Failed", "/runs?search=no-such-text&status=FAILED"),
        Read("search: text + function", f"/runs?search=no-such-text&function={FUNCTIONS[0]}"),
        Read("run page (UI), newest", f"/runs/{newest}"),
        Read("run page (UI), oldest", f"/runs/{oldest}"),
        Read("run (REST)", f"/v1/runs/{oldest}"),
        Read("functions page", "/functions"),
        Read("events list", "/events"),
        Read("events, name prefix", "/events?name=bench-mail"),
    ]


def timed(client: httpx.Client, path: str, n: int) -> tuple[float, float]:
    for _ in range(3):
        resp = client.get(path)
        if resp.status_code != 200:
            raise SystemExit(f"GET {path} answered {resp.status_code}: {resp.text[:300]}")
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.get(path)
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def measure(tmp: Path, n: int, requests: int, port: int) -> dict[str, tuple[float, float]]:
    db = tmp / f"reads-{n}.db"
    t0 = time.perf_counter()
    run_ids = seed(db, n)
    print(f"  seeded {n:,} runs in {time.perf_counter() - t0:.0f} s", flush=True)
    deep = _deep_cursor(db, n)
    weir = Weir(db, port, tmp / f"weir-{n}.log")
    try:
        with httpx.Client(base_url=weir.url, timeout=60) as client:
            return {r.label: timed(client, r.path, requests) for r in reads(run_ids, deep)}
    finally:
        weir.stop()


def _deep_cursor(db: Path, n: int) -> tuple[int, str]:
    """The (created_at, id) cursor halfway down the list: a page reached by paging far."""
    with sqlite3.connect(db) as raw:
        row = raw.execute(
            "SELECT created_at, id FROM runs ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?",
            (n // 2,),
        ).fetchone()
    return int(row[0]), str(row[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--baseline-runs", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
    with _tmpdir() as tmp:
        print(f"baseline store: {args.baseline_runs:,} runs")
        base = measure(tmp, args.baseline_runs, args.requests, _port())
        print(f"large store: {args.runs:,} runs")
        large = measure(tmp, args.runs, args.requests, _port())
    print(f"\n{'read':<28} {'small p50':>10} {'large p50':>10} {'large p95':>10} {'ratio':>7}")
    for label, (p50, p95) in large.items():
        b50 = base[label][0]
        verdict = "ok" if p50 < 50 else "OVER 50 ms"
        figures = f"{b50:>8.1f}ms {p50:>8.1f}ms {p95:>8.1f}ms {p50 / b50:>6.2f}x"
        print(f"{label:<28} {figures}  {verdict}")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _tmpdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="weir-bench-reads-") as tmp:
        yield Path(tmp)


if __name__ == "__main__":
    main()
