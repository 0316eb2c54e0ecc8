"""What a strict rolling window costs per run, in-process on SQLite, without HTTP.

Each run is one event accepted, its start claimed (where the window is checked and charged)
and its completion applied, each in its own transaction, as the platform does. Three
functions, measured in the same rounds:
- baseline: no window;
- one window, limit 100,000 per 24 h, its log empty at the start;
- the same window with 99,000 authorizations in its log (all inside the window, past the
  100,000th authorization): each check still looks up one log entry by number, so it must
  cost the same as with an empty log.
And a full window (limit 10 per 24 h, 500 runs queued): what a deferral costs per run
deferred (each is re-armed once, at its seat's time, never polled).

    .venv/bin/python bench/bench_rolling.py [--rounds 5] [--runs 400]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event, insert, text
from weir.platform.executor.response import Completed
from weir.platform.functions import EventTrigger, FunctionConfig, RollingWindow
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.registry import Function, Registry
from weir.platform.runtime import events, outcomes
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.database import make_engine
from weir.platform.store.engine.schema import rolling_log
from weir.platform.store.migrate import upgrade

SYNC = "NORMAL"
DAY_MS = 86_400_000
T0 = 1_800_000_000_000
LIVE_ENTRIES = 99_000


def registry(windows: tuple[RollingWindow, ...]) -> Registry:
    config = FunctionConfig(
        slug="fn",
        name="fn",
        url="http://app/api?fnId=fn&stepId=step",
        retries=0,
        triggers=(EventTrigger("b/e", None),),
        rolling_windows=windows,
    )
    reg = Registry()
    reg.add(Function(id="fn", app_id="app", slug="fn", config=config, version=1))
    return reg


def accept(engine: Engine, reg: Registry, now: int) -> None:
    with engine.begin() as conn:
        events.accept(Tx(conn, now, reg), [IncomingEvent("b/e", {}, None, now, {}, None)])


def claim_and_complete(engine: Engine, reg: Registry, now: int) -> int:
    with engine.begin() as conn:
        items = q.claim(conn, now, 1, 30_000)
    for item in items:
        with engine.begin() as conn:
            tx = Tx(conn, now, reg)
            outcomes.apply(tx, item, reg.by_id["fn"], Completed(None), outcomes.Timing(now, now))
    return len(items)


def fresh(tmp: Path) -> tuple[Engine, list[int]]:
    engine = make_engine(f"sqlite:///{tmp / f'r{time.monotonic_ns()}.db'}", synchronous=SYNC)
    upgrade(engine)
    count = [0]

    def counter(*_: Any) -> None:
        count[0] += 1

    event.listen(engine, "before_cursor_execute", counter)
    return engine, count


def prefill(engine: Engine, reg: Registry) -> int:
    """One run creates the scope; then its log holds LIVE_ENTRIES recent authorizations and
    its header says 200,000 were given (so the 100,000-back entry exists, and was pruned)."""
    accept(engine, reg, T0)
    claim_and_complete(engine, reg, T0)
    with engine.begin() as conn:
        scope = conn.execute(text("SELECT scope_hash FROM rolling_scopes")).scalar_one()
        conn.execute(text("DELETE FROM rolling_log"))
        first = 200_000 - LIVE_ENTRIES
        rows = [
            {"scope_hash": scope, "seq": first + i, "at_ms": T0 + i} for i in range(LIVE_ENTRIES)
        ]
        conn.execute(insert(rolling_log), rows)
        conn.execute(
            text("UPDATE rolling_scopes SET count = 200000, last_at = :at"),
            {"at": T0 + LIVE_ENTRIES},
        )
    return T0 + LIVE_ENTRIES + 1


def per_run(
    tmp: Path, windows: tuple[RollingWindow, ...], runs: int, full: bool
) -> tuple[float, float]:
    """µs and SQL statements per run (accept, claim, complete)."""
    engine, count = fresh(tmp)
    reg = registry(windows)
    start_at = prefill(engine, reg) if full else T0
    count[0] = 0
    began = time.perf_counter()
    for i in range(runs):
        now = start_at + i
        accept(engine, reg, now)
        assert claim_and_complete(engine, reg, now) == 1
    elapsed = time.perf_counter() - began
    engine.dispose()
    return elapsed / runs * 1e6, count[0] / runs


def deferral(tmp: Path, runs: int) -> tuple[float, float]:
    """µs and statements per deferred start: `runs` queued behind a full window of 10."""
    engine, count = fresh(tmp)
    reg = registry((RollingWindow(10, DAY_MS, None),))
    for i in range(10 + runs):
        accept(engine, reg, T0 + i)
    now = T0 + 10 + runs
    while claim_and_complete(engine, reg, now):
        pass  # the ten that fit
    count[0] = 0
    began = time.perf_counter()
    with engine.begin() as conn:
        claimed = q.claim(conn, now, runs, 30_000)  # every queued start is deferred once
    elapsed = time.perf_counter() - began
    with engine.connect() as conn:
        rearmed = conn.execute(
            text("SELECT count(*) FROM queue WHERE available_at > :n"), {"n": now}
        )
        assert claimed == [] and rearmed.scalar_one() == runs
    engine.dispose()
    return elapsed / runs * 1e6, count[0] / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    big = (RollingWindow(100_000, DAY_MS, None),)
    cases: dict[str, list[tuple[float, float]]] = {"none": [], "empty": [], "full": [], "defer": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        for _ in range(args.rounds):  # interleaved, so machine load hits every case alike
            cases["none"].append(per_run(path, (), args.runs, full=False))
            cases["empty"].append(per_run(path, big, args.runs, full=False))
            cases["full"].append(per_run(path, big, args.runs, full=True))
            cases["defer"].append(deferral(path, args.runs))
    med = {
        name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs))
        for name, rs in cases.items()
    }
    base = med["none"][0]
    rows = (
        ("baseline: no window", "none"),
        ("window 100,000 / 24 h, empty log", "empty"),
        (f"window 100,000 / 24 h, {LIVE_ENTRIES:,} live entries", "full"),
        ("deferred start (window full), per start", "defer"),
    )
    print(f"{'case':48} {'µs/run':>9} {'stmts/run':>10} {'vs baseline':>12}")
    for label, name in rows:
        us, statements = med[name]
        print(f"{label:48} {us:9.0f} {statements:10.1f} {us / base:12.3f}")


if __name__ == "__main__":
    main()
