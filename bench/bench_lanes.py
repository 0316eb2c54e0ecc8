"""FIFO lanes under load, on SQLite, with no-op handlers (issue #11: lanes).

End to end (a real `weir dev`, an app on loopback, throughput from the store's own records,
first call start to last run end), each against the same function without a lane in the same
round:
  one lane     N runs queued in one lane: each handoff waits for the previous run's end to
               commit (target >= 500 runs/s)
  N lanes      2N runs over N lanes in round-robin order (target >= 0.95 of no lane)

In process (no HTTP; the store and runtime as the platform drives them: claim, read the call
state, apply the completion and what it sets off, each in its own transaction):
  handoff      one lane with N queued runs drained one by one, against N queued runs of the
               same function without a lane

    .venv/bin/python bench/bench_lanes.py [--rounds 3] [--runs 1000] [--baseline-ref REF]

`--baseline-ref REF` runs a second Weir built from that git commit beside this one end to end,
rounds alternating, and prints the ratios of the two.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import Engine  # noqa: E402
from weir.platform.executor.driver import load_call_state  # noqa: E402
from weir.platform.executor.response import Completed  # noqa: E402
from weir.platform.functions import EventTrigger, FunctionConfig, Lane  # noqa: E402
from weir.platform.ingest.validate import IncomingEvent  # noqa: E402
from weir.platform.registry import Function, Registry  # noqa: E402
from weir.platform.runtime import events, finish_hooks, outcomes  # noqa: E402
from weir.platform.runtime.tx import Tx  # noqa: E402
from weir.platform.store import queue as q  # noqa: E402
from weir.platform.store.database import make_engine  # noqa: E402
from weir.platform.store.migrate import upgrade  # noqa: E402

from bench.bench_flow import drained, fn_runs, serve_build  # noqa: E402
from bench.bench_platform import baseline_build  # noqa: E402
from tests.integration.harness import AppServer, WeirServer, wait_until  # noqa: E402

T0 = 1_800_000_000_000


# Events per request: all of a round's runs are queued by one request (the API takes up to
# 5,000) before the first starts, so the figure is the drain of queued runs, as bench_flow's.
# (Until session 8 this sent 500 at a time: the lane then drained while the writer was still
# admitting the second half, and the one-lane figure paid for that admission too.)
SEND_BATCH = 5_000


def throughput(weir: WeirServer, slug: str, event: str, datas: list[dict[str, str]]) -> float:
    """Runs/s from the store's records: first call start to last run end (bench_flow's rule,
    with patience for a busy machine when sending)."""
    before = len(fn_runs(weir.db, slug))
    for i in range(0, len(datas), SEND_BATCH):
        batch = [{"name": event, "data": d} for d in datas[i : i + SEND_BATCH]]
        httpx.post(f"{weir.url}/e/test", json=batch, timeout=300).raise_for_status()
    wait_until(lambda: drained(weir.db, slug, before + len(datas)), timeout=1200, every=0.2)
    runs = fn_runs(weir.db, slug)[before:]
    span_ms = max(r[3] for r in runs) - min(r[2] for r in runs)
    return len(runs) / (span_ms / 1000)


@dataclass
class Stack:
    """One Weir build serving the lane app, and its figures."""

    name: str
    weir: WeirServer
    app: AppServer
    one: list[float] = field(default_factory=list)
    one_free: list[float] = field(default_factory=list)
    many: list[float] = field(default_factory=list)
    many_free: list[float] = field(default_factory=list)


def start_stack(tmp: Path, name: str, weir_path: Path | None) -> Stack:
    return Stack(name, *serve_build(tmp, name, weir_path, "bench.lane_app", "lanebench"))


def lanes_round(stack: Stack, r: int, n: int) -> None:
    weir = stack.weir
    stack.one.append(throughput(weir, "lanebench-laned", "b/laned", [{"k": f"h{r}"}] * n))
    stack.one_free.append(throughput(weir, "lanebench-free", "b/free", [{}] * n))
    spread = [{"k": f"r{r}-{i % n}"} for i in range(2 * n)]
    stack.many.append(throughput(weir, "lanebench-laned", "b/laned", spread))
    stack.many_free.append(throughput(weir, "lanebench-free", "b/free", [{}] * (2 * n)))
    print(
        f"  round {r + 1} {stack.name:>8}: one lane {stack.one[-1]:6.1f} (no lane "
        f"{stack.one_free[-1]:6.1f})  {n} lanes {stack.many[-1]:6.1f} (no lane "
        f"{stack.many_free[-1]:6.1f}) runs/s  load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def report_lanes(stack: Stack, n: int) -> None:
    o, of, m, mf = (
        statistics.median(x) for x in (stack.one, stack.one_free, stack.many, stack.many_free)
    )
    ratios = [a / b for a, b in zip(stack.many, stack.many_free, strict=True)]
    print(f"{stack.name}, end to end:")
    print(f"  one lane, {n} queued runs           : {o:8.1f} runs/s  rounds {_r(stack.one)}")
    print(f"    same function without a lane       : {of:8.1f} runs/s  rounds {_r(stack.one_free)}")
    print(f"    ratio                              : {o / of:8.3f}  (target >= 500 runs/s)")
    print(f"  {n} lanes round-robin, {2 * n} runs: {m:8.1f} runs/s  rounds {_r(stack.many)}")
    print(
        f"    same function without a lane       : {mf:8.1f} runs/s  rounds {_r(stack.many_free)}"
    )
    print(
        f"    ratio                              : {statistics.median(ratios):8.3f}  "
        f"(target >= 0.95; median of the rounds' ratios {[round(x, 3) for x in ratios]})"
    )


def end_to_end(rounds: int, n: int, baseline_ref: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        builds: dict[str, Path | None] = {"current": None}
        if baseline_ref:
            builds = {"baseline": baseline_build(baseline_ref, Path(tmp)), **builds}
        stacks: list[Stack] = []
        try:
            for name, path in builds.items():
                stacks.append(start_stack(Path(tmp), name, path))
            for r in range(rounds):
                # Alternate who goes first, so that drift reaches both builds alike.
                for stack in stacks if r % 2 == 0 else stacks[::-1]:
                    lanes_round(stack, r, n)
        finally:
            for stack in stacks:
                stack.app.stop()
                stack.weir.stop()
    for stack in stacks:
        report_lanes(stack, n)
    if len(stacks) == 2:
        base, cur = stacks
        one = statistics.median(cur.one) / statistics.median(base.one)
        many = statistics.median(cur.many) / statistics.median(base.many)
        print(f"current / baseline: one lane {one:.3f}, {n} lanes round-robin {many:.3f}")


def _r(values: list[float]) -> list[int]:
    return [round(v) for v in values]


def registry() -> Registry:
    reg = Registry()
    for slug, lane in (("free", None), ("laned", Lane(key="'one'", name=None))):
        config = FunctionConfig(
            slug=slug,
            name=slug,
            url=f"http://app/api?fnId={slug}&stepId=step",
            retries=0,
            triggers=(EventTrigger(f"b/{slug}", None),),
            lane=lane,
        )
        reg.add(Function(id=slug, app_id="app", slug=slug, config=config, version=1))
    return reg


def drain(engine: Engine, reg: Registry, slug: str, n: int) -> float:
    """Queue n runs of `slug` in one request, then claim, read and complete them one by one;
    seconds for the draining."""
    with engine.begin() as conn:
        incoming = [IncomingEvent(f"b/{slug}", {}, None, T0, {}, None) for _ in range(n)]
        events.accept(Tx(conn, T0, reg), incoming)
    start = time.perf_counter()
    done = 0
    while done < n:
        with engine.begin() as conn:
            (item,) = q.claim(conn, T0, 1, 30_000)
        with engine.connect() as conn:
            load_call_state(conn, item.run_id or "")
        with engine.begin() as conn:
            tx = Tx(conn, T0, reg)
            outcomes.apply(tx, item, reg.by_id[slug], Completed(None), outcomes.Timing(T0, T0))
            finish_hooks.settle(tx)
        done += 1
    return time.perf_counter() - start


def in_process(rounds: int, n: int) -> None:
    laned, free = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            engine = make_engine(f"sqlite:///{Path(tmp) / f'r{r}.db'}", synchronous="NORMAL")
            upgrade(engine)
            reg = registry()
            laned.append(n / drain(engine, reg, "laned", n))
            free.append(n / drain(engine, reg, "free", n))
            engine.dispose()
    lm, fm = statistics.median(laned), statistics.median(free)
    print(f"in process, one lane, {n} queued runs   : {lm:8.1f} runs/s  rounds {_r(laned)}")
    print(f"  same function without a lane         : {fm:8.1f} runs/s  rounds {_r(free)}")
    print(f"  ratio                                : {lm / fm:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--skip-http", action="store_true", help="only the in-process figures")
    parser.add_argument("--skip-in-process", action="store_true", help="only end to end")
    parser.add_argument("--baseline-ref", help="also run Weir as of this git commit, end to end")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}", flush=True)
    if not args.skip_in_process:
        in_process(args.rounds, args.runs)
    if not args.skip_http:
        end_to_end(args.rounds, args.runs, args.baseline_ref)


if __name__ == "__main__":
    main()
