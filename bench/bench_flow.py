"""Flow control under load, on SQLite, with no-op handlers (issue: flow control).

  hot key      one concurrency key with limit 1 and N queued runs: runs/s (target >= 100)
  1,000 keys   N runs over N distinct keys with limit 1, against the same function without a
               key in the same process: the ratio (target >= 0.90)
  throttle     100 starts/s over a 20 s burst: sustained start rate vs. the budget (within 2 %),
               and no start before its GCRA slot
  rate limit   events at 200/s for 20 s against 100/s: admissions replayed through the GCRA
               rule from the store's records (exactly equal), and the admitted rate

Throughput is measured from the store's own records (first call start to last run end).
`--baseline-ref REF` runs a second Weir built from that git commit beside this one, its rounds
interleaved with this one's (same machine, same moment), and prints both.

    .venv/bin/python bench/bench_flow.py [--rounds 3] [--runs 1000] [--seconds 20]
        [--baseline-ref cfb0776]
"""

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from weir.platform.gates.rate_limit import RateLimitConfig, admit_event  # noqa: E402

from bench.bench_platform import baseline_build, baseline_python  # noqa: E402
from tests.integration.audit import window_peak  # noqa: E402
from tests.integration.harness import AppServer, Process, WeirServer, wait_until  # noqa: E402


def rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


def fn_runs(db: Path, slug: str) -> list[tuple[Any, ...]]:
    return rows(
        db,
        "SELECT r.status, r.created_at, r.started_at, r.ended_at FROM runs r "
        "JOIN functions f ON f.id = r.function_id WHERE f.slug = ?",
        slug,
    )


def drained(db: Path, slug: str, count: int) -> bool:
    runs = fn_runs(db, slug)
    return len(runs) >= count and all(r[0] == "COMPLETED" for r in runs)


def throughput(weir: WeirServer, slug: str, event: str, datas: list[dict[str, Any]]) -> float:
    before = len(fn_runs(weir.db, slug))
    weir.send_many([{"name": event, "data": d} for d in datas])
    wait_until(lambda: drained(weir.db, slug, before + len(datas)), timeout=600, every=0.2)
    runs = fn_runs(weir.db, slug)[before:]
    span_ms = max(r[3] for r in runs) - min(r[2] for r in runs)
    return len(runs) / (span_ms / 1000)


@dataclass
class Stack:
    """One Weir build serving the bench app, and its figures."""

    name: str
    weir: WeirServer
    app: AppServer
    hot: list[float] = field(default_factory=list)
    keyed: list[float] = field(default_factory=list)
    free: list[float] = field(default_factory=list)


def serve_build(
    tmp: Path, name: str, weir_path: Path | None, module: str, app_id: str
) -> tuple[WeirServer, AppServer]:
    """A Weir build and the bench app `module` synced with it, in `tmp/name`. `weir_path`:
    put first on Weir's PYTHONPATH, it makes `import weir` a baseline build."""
    home = tmp / name
    home.mkdir()
    weir = WeirServer(home)
    if weir_path is not None:
        weir.env = weir.env | {"PYTHONPATH": str(weir_path)}
        weir.args[0] = baseline_python(weir_path)  # its isolated workers import it too
    app = AppServer(home, module, app_id, weir.url)
    Process.start(weir)  # a busy machine may need longer than the harness waits
    wait_until(lambda: httpx.get(f"{weir.url}/health").status_code == 200, 180)
    app.start()
    app.sync()
    return weir, app


def start_stack(tmp: Path, name: str, weir_path: Path | None) -> Stack:
    return Stack(name, *serve_build(tmp, name, weir_path, "bench.flow_app", "flowbench"))


def keys_round(stack: Stack, r: int, n: int) -> None:
    weir = stack.weir
    stack.hot.append(throughput(weir, "flowbench-keyed", "b/keyed", [{"k": f"hot{r}"}] * n))
    distinct = [{"k": f"r{r}-{i}"} for i in range(n)]
    stack.keyed.append(throughput(weir, "flowbench-keyed", "b/keyed", distinct))
    stack.free.append(throughput(weir, "flowbench-free", "b/free", [{}] * n))
    ratio = stack.keyed[-1] / stack.free[-1]
    print(
        f"  round {r + 1} {stack.name:>8}: hot {stack.hot[-1]:6.1f}  {n} keys "
        f"{stack.keyed[-1]:6.1f}  no key {stack.free[-1]:6.1f} runs/s  ratio {ratio:.3f}  "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def report_keys(stack: Stack, n: int) -> None:
    h, k, f = (statistics.median(x) for x in (stack.hot, stack.keyed, stack.free))
    ratios = [a / b for a, b in zip(stack.keyed, stack.free, strict=True)]
    print(f"{stack.name}:")
    print(
        f"  hot key, limit 1, {n} queued runs : {h:8.1f} runs/s  (target >= 100)  "
        f"rounds {[round(x) for x in stack.hot]}"
    )
    print(
        f"  {n} distinct keys, limit 1       : {k:8.1f} runs/s  "
        f"rounds {[round(x) for x in stack.keyed]}"
    )
    print(
        f"  same function without a key       : {f:8.1f} runs/s  "
        f"rounds {[round(x) for x in stack.free]}"
    )
    print(
        f"  ratio keyed / no key              : {statistics.median(ratios):8.3f}        "
        f"(target >= 0.90; median of the rounds' ratios {[round(x, 3) for x in ratios]})"
    )
    print(f"  ratio hot key / no key            : {h / f:8.3f}")


def bench_throttle(stack: Stack, seconds: int) -> None:
    weir = stack.weir
    n = 100 * seconds
    weir.send_many([{"name": "b/throttle", "data": {"i": i}} for i in range(n)])
    wait_until(lambda: drained(weir.db, "flowbench-throttled", n), timeout=seconds * 3, every=0.5)
    runs = sorted(fn_runs(weir.db, "flowbench-throttled"), key=lambda r: r[2])
    admitted_at = min(r[1] for r in runs)
    early = sum(1 for i, r in enumerate(runs) if r[2] < admitted_at + 10 * i)
    # Sustained rate over the second half: the first starts wait for the whole burst to be
    # admitted (one request, one transaction) and then catch up with their slots.
    half = runs[len(runs) // 2 :]
    rate = (len(half) - 1) / ((half[-1][2] - half[0][2]) / 1000)
    lag = statistics.median(r[2] - (admitted_at + 10 * i) for i, r in enumerate(runs))
    peak = window_peak([r[2] for r in runs], 1000)
    print(
        f"{stack.name}: throttle 100/s, {n} starts: {rate:.2f} starts/s sustained = "
        f"{rate / 100:.4f} of the budget (target within 2 %); starts before their GCRA slot: "
        f"{early}; median lag behind slot {lag:.1f} ms; most starts in any 1 s: {peak} "
        f"(allowed 100); load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def bench_rate_limit(weir: WeirServer, seconds: int) -> None:
    end = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < end:  # about 300 events/s, three times the budget
        weir.send_many([{"name": "b/limit", "data": {"i": sent + i}} for i in range(30)])
        sent += 30
        time.sleep(0.09)
    events = rows(
        weir.db,
        "SELECT e.received_at, EXISTS(SELECT 1 FROM event_runs er WHERE "
        "er.event_id = e.id) FROM events e WHERE e.name = 'b/limit' "
        "ORDER BY e.received_at, e.id",
    )
    state, mismatches, admitted = None, 0, 0
    for received, started in events:
        decision = admit_event(RateLimitConfig(period_ms=1000, limit=100), state, received)
        state = decision.state
        mismatches += decision.admitted != bool(started)
        admitted += bool(started)
    span = (events[-1][0] - events[0][0]) / 1000
    allowed = 100 + 100 * span  # from idle `limit` at once, then `limit` per second
    print(
        f"rate limit 100/s, {len(events)} events in {span:.1f} s: {admitted} admitted = "
        f"{admitted / allowed:.4f} of the {allowed:.0f} the budget allows "
        f"({len(events) - admitted} skipped); differences from the GCRA replay: {mismatches}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--no-keys", action="store_true", help="skip the concurrency rounds")
    parser.add_argument("--no-throttle", action="store_true", help="skip the throttle")
    parser.add_argument("--no-rate-limit", action="store_true", help="skip the rate limit")
    parser.add_argument("--baseline-ref", help="also run Weir as of this git commit")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        builds: dict[str, Path | None] = {"current": None}
        if args.baseline_ref:
            builds = {"baseline": baseline_build(args.baseline_ref, Path(tmp)), **builds}
        stacks: list[Stack] = []
        try:
            for name, path in builds.items():
                stacks.append(start_stack(Path(tmp), name, path))
            if not args.no_keys:
                for r in range(args.rounds):
                    # Alternate who goes first, so that drift reaches both builds alike.
                    for stack in stacks if r % 2 == 0 else stacks[::-1]:
                        keys_round(stack, r, args.runs)
                for stack in stacks:
                    report_keys(stack, args.runs)
            for stack in stacks if not args.no_throttle else []:
                bench_throttle(stack, args.seconds)
            if not args.no_rate_limit:
                for stack in stacks:
                    print(f"{stack.name}: ", end="")
                    bench_rate_limit(stack.weir, args.seconds)
        finally:
            for stack in stacks:
                stack.app.stop()
                stack.weir.stop()
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
