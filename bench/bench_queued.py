"""Flat growth end to end (issue #12): runs/s of a no-op function and Weir's memory, on an
empty store and with 100,000 runs queued (SQLite).

The backlog is made of runs of a throttled function (1 start a day): each is stored with its
start item due at its throttle slot, so the claimer must pass over 100,000 queued items that
are not due, exactly as it would with sleeping runs, without a call per run to build them.

Two `weir dev` of the same build run side by side, one with an empty store and one with the
backlog, their rounds alternating, so that both figures of a ratio come from the same moments
of the machine (a slower minute no longer reads as growth). Throughput is read from the
store's records (first call start to last run end), as in bench_flow.py. Memory is the
resident set (VmRSS) of the Weir process and of its children (the ingest workers), from /proc.

    .venv/bin/python bench/bench_queued.py [--rounds 3] [--runs 2000] [--backlog 100000]
"""

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_flow import drained, fn_runs, rows  # noqa: E402
from tests.integration.harness import AppServer, Process, WeirServer, wait_until  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


def memory(weir: WeirServer) -> tuple[float, float]:
    """(the Weir process's RSS, with its children's) in MB."""
    pid = weir.proc.pid
    own = rss_mb(pid)
    return own, own + sum(rss_mb(child) for child in children(pid))


def send(weir: WeirServer, name: str, count: int, batch: int = 500) -> None:
    for i in range(0, count, batch):
        body = [{"name": name, "data": {"i": i + j}} for j in range(min(batch, count - i))]
        httpx.post(f"{weir.url}/e/test", json=body, timeout=300).raise_for_status()


def throughput(weir: WeirServer, n: int) -> float:
    slug = "queuedbench-free"
    before = len(fn_runs(weir.db, slug))
    send(weir, "b/free", n)
    wait_until(lambda: drained(weir.db, slug, before + n), timeout=1200, every=0.2)
    runs = fn_runs(weir.db, slug)[before:]
    span_ms = max(r[3] for r in runs) - min(r[2] for r in runs)
    return n / (span_ms / 1000)


def queued(weir: WeirServer) -> int:
    [(count,)] = rows(weir.db, "SELECT count(*) FROM queue")
    return int(count)


@dataclass
class Stack:
    """A `weir dev` serving the bench app, in its own directory."""

    weir: WeirServer
    app: AppServer
    rates: list[float] = field(default_factory=list)


def start(home: Path, stacks: list[Stack]) -> Stack:
    """A stack, in `stacks` before anything starts: a half-started one is stopped with them."""
    home.mkdir()
    weir = WeirServer(home)
    stack = Stack(weir, AppServer(home, "bench.queued_app", "queuedbench", weir.url))
    stacks.append(stack)
    app = stack.app
    Process.start(weir)
    wait_until(lambda: httpx.get(f"{weir.url}/health").status_code == 200, 180)
    app.start()
    app.sync()
    throughput(weir, 200)  # warm up: connections, caches
    return stack


def stop(stacks: list[Stack]) -> None:
    for stack in stacks:
        stack.app.stop()
        stack.weir.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2000, help="no-op runs per round")
    parser.add_argument("--backlog", type=int, default=100_000, help="runs queued")
    args = parser.parse_args()
    stacks: list[Stack] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            empty, full = [start(Path(tmp) / name, stacks) for name in ("empty", "backlog")]
            started = time.monotonic()
            send(full.weir, "b/parked", args.backlog)
            filled_in = time.monotonic() - started
            backlog = queued(full.weir)
            # Rounds alternate between the two stores, so both see the same machine moments.
            for r in range(args.rounds):
                for stack in (empty, full) if r % 2 == 0 else (full, empty):
                    stack.rates.append(throughput(stack.weir, args.runs))
                print(
                    f"  round {r + 1}: empty {empty.rates[-1]:7.1f}  with the backlog "
                    f"{full.rates[-1]:7.1f} runs/s  ratio {full.rates[-1] / empty.rates[-1]:.3f}",
                    flush=True,
                )
            empty_mem, full_mem = memory(empty.weir), memory(full.weir)
        finally:
            stop(stacks)
    e, f = statistics.median(empty.rates), statistics.median(full.rates)
    ratios = [b / a for a, b in zip(empty.rates, full.rates, strict=True)]
    print(f"empty store      : {e:8.1f} runs/s  rounds {[round(x) for x in empty.rates]}")
    print(f"  Weir RSS       : {empty_mem[0]:6.1f} MB ({empty_mem[1]:.1f} MB with its workers)")
    print(f"backlog: {args.backlog} runs accepted in {filled_in:.1f} s; {backlog} queue items")
    print(f"with the backlog : {f:8.1f} runs/s  rounds {[round(x) for x in full.rates]}")
    print(f"  Weir RSS       : {full_mem[0]:6.1f} MB ({full_mem[1]:.1f} MB with its workers)")
    print(
        f"ratio            : {statistics.median(ratios):8.3f}  median of the rounds' ratios "
        f"{[round(x, 3) for x in ratios]} (target >= 0.90; RSS target <= 200 MB)"
    )


if __name__ == "__main__":
    main()
