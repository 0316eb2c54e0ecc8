"""The store's cost per run, in-process, without HTTP: one event accepted, its run claimed,
its state read and its completion applied — each in its own transaction, as the platform
does. Reports µs per run and SQL statements per run (median of several rounds), and the ratio
against a baseline in the same process: a plain sqlite3 INSERT+COMMIT per statement.

    .venv/bin/python bench/bench_store.py [--rounds 5] [--runs 500]
"""

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from weir.platform.executor.driver import load_call_state
from weir.platform.executor.response import Completed
from weir.platform.functions import EventTrigger, FunctionConfig
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.registry import Function, Registry
from weir.platform.runtime import events, outcomes
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade

SYNC = "NORMAL"


def registry() -> Registry:
    config = FunctionConfig(
        slug="fn",
        name="fn",
        url="http://app/api?fnId=fn&stepId=step",
        retries=0,
        triggers=(EventTrigger("b/e", None),),
    )
    reg = Registry()
    reg.add(Function(id="fn", app_id="app", slug="fn", config=config, version=1))
    return reg


def one_run(engine: Engine, reg: Registry, now: int) -> None:
    with engine.begin() as conn:
        events.accept(Tx(conn, now, reg), [IncomingEvent("b/e", {}, None, now, {}, None)])
    with engine.begin() as conn:
        (item,) = q.claim(conn, now, 1, 30_000)
    with engine.connect() as conn:
        load_call_state(conn, item.run_id or "")
    with engine.begin() as conn:
        outcomes.apply(
            Tx(conn, now, reg), item, reg.by_id["fn"], Completed(None), outcomes.Timing(now, now)
        )


def round_(tmp: Path, runs: int) -> tuple[float, float]:
    engine = make_engine(f"sqlite:///{tmp / f'r{time.monotonic_ns()}.db'}", synchronous=SYNC)
    upgrade(engine)
    reg, count = registry(), [0]

    def counter(*_: Any) -> None:
        count[0] += 1

    event.listen(engine, "before_cursor_execute", counter)
    start = time.perf_counter()
    for i in range(runs):
        one_run(engine, reg, 1_800_000_000_000 + i)
    elapsed = time.perf_counter() - start
    engine.dispose()
    return elapsed / runs * 1e6, count[0] / runs


def baseline(tmp: Path, n: int) -> float:
    conn = sqlite3.connect(tmp / f"base{time.monotonic_ns()}.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={SYNC}")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    start = time.perf_counter()
    for i in range(n):
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t (v) VALUES (?)", (str(i),))
        conn.execute("COMMIT")
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [round_(Path(tmp), args.runs) for _ in range(args.rounds)]
        base = statistics.median(baseline(Path(tmp), 2000) for _ in range(args.rounds))
    per_run = statistics.median(r[0] for r in results)
    statements = statistics.median(r[1] for r in results)
    print(
        f"store cost per run (accept, claim, read, complete): {per_run:8.0f} µs "
        f"({1e6 / per_run:6.0f} runs/s on one core)"
    )
    print(f"SQL statements per run                            : {statements:8.1f}")
    print(f"baseline: sqlite3 INSERT+COMMIT                   : {base:8.0f} µs")
    print(f"ratio per run / baseline                          : {per_run / base:8.1f}")
    print(f"µs per statement                                  : {per_run / statements:8.0f}")


if __name__ == "__main__":
    main()
