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

    .venv/bin/python bench/bench_lanes.py [--rounds 3] [--runs 1000]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import Engine  # noqa: E402
from weir.platform.executor.driver import load_call_state  # noqa: E402
from weir.platform.executor.response import Completed  # noqa: E402
from weir.platform.functions import EventTrigger, FunctionConfig, Lane  # noqa: E402
from weir.platform.ingest import IncomingEvent  # noqa: E402
from weir.platform.registry import Function, Registry  # noqa: E402
from weir.platform.runtime import events, finish_hooks, outcomes  # noqa: E402
from weir.platform.runtime.tx import Tx  # noqa: E402
from weir.platform.store import queue as q  # noqa: E402
from weir.platform.store.database import make_engine  # noqa: E402
from weir.platform.store.migrate import upgrade  # noqa: E402

from bench.bench_flow import drained, fn_runs  # noqa: E402
from tests.integration.harness import AppServer, Process, WeirServer, wait_until  # noqa: E402

T0 = 1_800_000_000_000


def throughput(weir: WeirServer, slug: str, event: str, datas: list[dict[str, str]]) -> float:
    """Runs/s from the store's records: first call start to last run end (bench_flow's rule,
    with patience for a busy machine when sending)."""
    before = len(fn_runs(weir.db, slug))
    for i in range(0, len(datas), 500):
        batch = [{"name": event, "data": d} for d in datas[i : i + 500]]
        httpx.post(f"{weir.url}/e/test", json=batch, timeout=300).raise_for_status()
    wait_until(lambda: drained(weir.db, slug, before + len(datas)), timeout=1200, every=0.2)
    runs = fn_runs(weir.db, slug)[before:]
    span_ms = max(r[3] for r in runs) - min(r[2] for r in runs)
    return len(runs) / (span_ms / 1000)


def end_to_end(rounds: int, n: int) -> None:
    one, one_free, many, many_free = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        weir = WeirServer(Path(tmp))
        app = AppServer(Path(tmp), "bench.lane_app", "lanebench", weir.url)
        Process.start(weir)  # a busy machine may need longer than the harness waits
        wait_until(lambda: httpx.get(f"{weir.url}/health").status_code == 200, 180)
        app.start()
        try:
            app.sync()
            for r in range(rounds):
                one.append(throughput(weir, "lanebench-laned", "b/laned", [{"k": f"h{r}"}] * n))
                one_free.append(throughput(weir, "lanebench-free", "b/free", [{}] * n))
                spread = [{"k": f"r{r}-{i % n}"} for i in range(2 * n)]
                many.append(throughput(weir, "lanebench-laned", "b/laned", spread))
                many_free.append(throughput(weir, "lanebench-free", "b/free", [{}] * (2 * n)))
        finally:
            app.stop()
            weir.stop()
    o, of, m, mf = (statistics.median(x) for x in (one, one_free, many, many_free))
    print(f"end to end, one lane, {n} queued runs   : {o:8.1f} runs/s  rounds {_r(one)}")
    print(f"  same function without a lane         : {of:8.1f} runs/s  rounds {_r(one_free)}")
    print(f"  ratio                                : {o / of:8.3f}  (target >= 500 runs/s)")
    print(f"end to end, {n} lanes round-robin, {2 * n} runs: {m:8.1f} runs/s  rounds {_r(many)}")
    print(f"  same function without a lane         : {mf:8.1f} runs/s  rounds {_r(many_free)}")
    print(f"  ratio                                : {m / mf:8.3f}  (target >= 0.95)")


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
    args = parser.parse_args()
    in_process(args.rounds, args.runs)
    if not args.skip_http:
        end_to_end(args.rounds, args.runs)


if __name__ == "__main__":
    main()
